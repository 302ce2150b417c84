/** What the CUDA backend runs natively: every primitive, `random`, and flash attention (forward and backward). */
import type { Capabilities, DeviceInfo, DType, KernelName } from '@kiln/core';

/** Primitives defined on i32 (docs/kernel-semantics.md, "i32"). */
const I32_KERNELS: ReadonlySet<KernelName> = new Set<KernelName>(['unary', 'binary', 'where', 'reduce', 'copy', 'gather', 'scatterAdd', 'cast', 'fill']);
/** Flash attention (kernels/attention_*.cu); head dims above 128 run core's composition on the backend. */
const ATTENTION_KERNELS: readonly KernelName[] = ['attention', 'attentionBackward'];
/** Kernels with a native implementation in every float dtype. */
const FLOAT_KERNELS: ReadonlySet<KernelName> = new Set<KernelName>([...I32_KERNELS, 'matmul', 'random', ...ATTENTION_KERNELS]);

/** The capabilities of one CUDA backend instance. */
export function cudaCapabilities(device: DeviceInfo): Capabilities {
  return {
    device,
    supports(kernel: KernelName, dtype: DType): boolean {
      return dtype === 'i32' ? I32_KERNELS.has(kernel) : FLOAT_KERNELS.has(kernel);
    },
    flashAttention: true,
  };
}
