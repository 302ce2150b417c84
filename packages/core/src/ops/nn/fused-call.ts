/**
 * Shared plumbing of fused ops: pick the kernel (native, or core's composition), and when the
 * backend lacks the dtype, run it in f32 (casting inputs in and outputs back).
 */
import type { FusedKernelName, KernelBackend } from '../../backend/kernel-backend.js';
import type { DType } from '../../dtype.js';
import { composedKernel, fusedKernel, planKernel } from '../../engine/dispatch.js';
import type { Tensor } from '../../tensor/tensor.js';
import { castTo } from '../kernel-calls.js';

/** A fused kernel ready to call, and the dtype its float operands must have. */
export interface FusedCall<K extends FusedKernelName> {
  /** The kernel (native or composed). */
  kernel: NonNullable<KernelBackend[K]>;
  /** dtype to compute in: the tensors' own, or f32 when the backend lacks it. */
  computeDType: DType;
}

/** Resolves fused kernel `name` for float tensors of `dtype` on `backend`. */
export function resolveFused<K extends FusedKernelName>(backend: KernelBackend, name: K, dtype: DType): FusedCall<K> {
  const plan = planKernel(backend, name, dtype);
  if (plan === 'composed') return { kernel: composedKernel(backend, name), computeDType: dtype };
  return { kernel: fusedKernel(backend, name), computeDType: plan === 'cast' ? 'f32' : dtype };
}

/** Tensors converted to `dtype` (those already in it are returned as is) and a function freeing the copies. */
export function inDType(tensors: readonly Tensor[], dtype: DType): { tensors: Tensor[]; release: () => void } {
  // All in `dtype` already (the common case): the same list and nothing to free.
  let converts = false;
  for (const tensor of tensors) converts ||= tensor.dtype !== dtype && tensor.dtype !== 'i32';
  if (!converts) return { tensors: tensors as Tensor[], release: releaseNothing };
  const converted = tensors.map((tensor) =>
    tensor.dtype === dtype || tensor.dtype === 'i32' ? tensor : castTo(tensor, dtype),
  );
  return {
    tensors: converted,
    release: () => converted.forEach((tensor, index) => tensor !== tensors[index] && tensor.dispose()),
  };
}

/** inDType's release when nothing was converted. */
function releaseNothing(): void {}

/** Converts a compute-dtype result back to `dtype`, freeing the intermediate. */
export function toDType(result: Tensor, dtype: DType): Tensor {
  if (result.dtype === dtype) return result;
  const converted = castTo(result, dtype);
  result.dispose();
  return converted;
}
