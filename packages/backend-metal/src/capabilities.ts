/** What the Metal backend runs natively: every primitive, `random`, and flash attention (forward and backward). */
import type { Capabilities, DeviceInfo, DType, KernelName } from '@kiln/core';

/** Primitives defined on i32 (docs/kernel-semantics.md, "i32"). */
const I32_KERNELS: ReadonlySet<KernelName> = new Set<KernelName>(['unary', 'binary', 'where', 'reduce', 'copy', 'gather', 'scatterAdd', 'cast', 'fill']);
/** Flash attention (native/kernels/attention_*.metal); head dims above 128 run core's composition on the backend. */
const ATTENTION_KERNELS: readonly KernelName[] = ['attention', 'attentionBackward'];
/** Kernels with a native implementation in every float dtype. */
const FLOAT_KERNELS: ReadonlySet<KernelName> = new Set<KernelName>([...I32_KERNELS, 'matmul', 'random', ...ATTENTION_KERNELS]);

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
    flashAttention: true,
  };
}
