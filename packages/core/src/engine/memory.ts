/** Moving tensors between backends and reading memory use. */
import type { KernelBackend, MemoryInfo } from '../backend/kernel-backend.js';
import { allocateTensor } from './dispatch.js';
import { getBackend } from './context.js';
import type { Tensor } from '../tensor/tensor.js';
import { checkTensor, option } from '../ops/validate.js';

/** A copy of `tensor` on `backend` (goes through host memory; async because device reads are). */
export async function toBackend(tensor: Tensor, backend: KernelBackend): Promise<Tensor> {
  checkTensor('toBackend', 'tensor', tensor);
  option.backend('toBackend', 'backend', backend);
  const bytes = await tensor.backend.download(tensor.storage.buffer);
  const result = allocateTensor(backend, tensor.shape, tensor.dtype);
  if (result.size > 0) backend.upload(result.storage.buffer, bytes.subarray(0, tensor.byteLength));
  return result;
}

/** Memory use of a backend (the default one when omitted). */
export function memory(backend: KernelBackend = getBackend()): MemoryInfo {
  option.backend('memory', 'backend', backend);
  return backend.memory();
}
