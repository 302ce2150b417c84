/** What the CUDA backend runs natively (phase 1: every primitive, plus `random`; fused kernels come later). */
import type { Capabilities, DeviceInfo, DType, KernelName } from '@kiln/core';

/** Primitives defined on i32 (docs/kernel-semantics.md, "i32"). */
const I32_KERNELS: ReadonlySet<KernelName> = new Set<KernelName>(['unary', 'binary', 'where', 'reduce', 'copy', 'gather', 'scatterAdd', 'cast', 'fill']);
/** Kernels with a native implementation in every float dtype. */
const FLOAT_KERNELS: ReadonlySet<KernelName> = new Set<KernelName>([...I32_KERNELS, 'matmul', 'random']);

/** The capabilities of one CUDA backend instance. */
export function cudaCapabilities(device: DeviceInfo): Capabilities {
  return {
    device,
    supports(kernel: KernelName, dtype: DType): boolean {
      return dtype === 'i32' ? I32_KERNELS.has(kernel) : FLOAT_KERNELS.has(kernel);
    },
    flashAttention: false,
  };
}
