/**
 * Which dtypes each kernel accepts and which ops i32 allows, per docs/kernel-semantics.md (the
 * "i32" section and the fused table): core's tables (src/backend/kernel-ops.ts), re-exported for
 * the kit's cases, and what the kit derives from them.
 */
import { FUSED_KERNELS, type DType, type FusedKernelName, type KernelBackend, type KernelName } from '@kiln/core';

export {
  BINARY_OPS,
  COMPARISON_OPS,
  I32_BINARY_OPS,
  I32_UNARY_OPS,
  KERNEL_DTYPES,
  UNARY_OPS,
} from '@kiln/core';

/** True when the backend runs `kernel` natively for `dtype`: declared by capabilities and, for fused kernels, implemented. */
export function isNative(
  backend: Pick<KernelBackend, 'capabilities'> & Partial<KernelBackend>,
  kernel: KernelName,
  dtype: DType,
): boolean {
  if (!backend.capabilities.supports(kernel, dtype)) return false;
  if (isFusedKernel(kernel)) return typeof backend[kernel] === 'function';
  return true;
}

const FUSED_SET: ReadonlySet<KernelName> = new Set<KernelName>(FUSED_KERNELS);

/** True for the optional fused kernels. */
export function isFusedKernel(kernel: KernelName): kernel is FusedKernelName {
  return FUSED_SET.has(kernel);
}
