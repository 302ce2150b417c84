/** What the Metal backend runs natively (phase 1: every primitive, plus `random`; fused kernels come in phase 2). */
import type { Capabilities, DeviceInfo, DType, KernelName } from '@kiln/core';

/** Primitives defined on i32 (docs/kernel-semantics.md, "i32"). */
const I32_KERNELS: ReadonlySet<KernelName> = new Set<KernelName>(['unary', 'binary', 'where', 'reduce', 'copy', 'gather', 'scatterAdd', 'cast', 'fill']);
/** Kernels with a native implementation in every float dtype. */
const FLOAT_KERNELS: ReadonlySet<KernelName> = new Set<KernelName>([...I32_KERNELS, 'matmul', 'random']);

/** The capabilities of one Metal backend instance; bf16 as the device reports it (every Metal 3 GPU today). */
export function metalCapabilities(device: DeviceInfo, bf16: boolean, implementation: string): Capabilities {
  return {
    device,
    implementation,
    supports(kernel: KernelName, dtype: DType): boolean {
      if (dtype === 'i32') return I32_KERNELS.has(kernel);
      if (dtype === 'bf16' && !bf16) return false;
      return FLOAT_KERNELS.has(kernel);
    },
    flashAttention: false,
  };
}
