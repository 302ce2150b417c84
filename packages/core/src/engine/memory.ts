/** Moving tensors between backends and reading memory use. */
import type { KernelBackend, MemoryInfo } from '../backend/kernel-backend.js';
import { allocateTensor } from './dispatch.js';
import { settleIndexChecks } from '../backend/index-checks.js';
import { getBackend } from './context.js';
import type { Tensor } from '../tensor/tensor.js';
import { checkTensor, option } from '../validate.js';

/** A copy of `tensor` on `backend` (goes through host memory; async because device reads are). */
export async function toBackend(tensor: Tensor, backend: KernelBackend): Promise<Tensor> {
  checkTensor('toBackend', 'tensor', tensor);
  option.backend('toBackend', 'backend', backend);
  const settled = settleIndexChecks(tensor.backend);
  const download = tensor.backend.download(tensor.storage.buffer);
  try {
    await settled;
  } catch (error) {
    download.catch(() => {});
    throw error;
  }
  const bytes = await download;
  const result = allocateTensor(backend, tensor.shape, tensor.dtype);
  if (result.size > 0) backend.upload(result.storage.buffer, bytes.subarray(0, tensor.byteLength));
  return result;
}

/** Memory use of a backend (the default one when omitted). */
export function memory(backend: KernelBackend = getBackend()): MemoryInfo {
  option.backend('memory', 'backend', backend);
  return backend.memory();
}

/**
 * Waits for all queued work on a backend (the default one when omitted), then settles its
 * device-side index checks: rejects with InvalidArgumentError when an op since the last read
 * met an out-of-range index on a device without synchronous reads.
 */
export async function synchronize(backend: KernelBackend = getBackend()): Promise<void> {
  option.backend('synchronize', 'backend', backend);
  await backend.synchronize();
  await settleIndexChecks(backend);
}
