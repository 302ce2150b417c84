// Small tensors on any KernelBackend, for tests of the GPU backends (shared by their suites).
import type { DType, KernelBackend, TensorRef } from '@kiln/core';

/** A new buffer holding `data` as f32 (or i32), shaped `shape`. */
export function put(backend: KernelBackend, shape: number[], data: ArrayLike<number>, dtype: DType = 'f32'): TensorRef {
  const bytes = dtype === 'i32' ? new Int32Array(Array.from(data)) : new Float32Array(Array.from(data));
  const buffer = backend.alloc(bytes.byteLength);
  backend.upload(buffer, new Uint8Array(bytes.buffer));
  return { buffer, shape, dtype };
}

/** A new f32 vector of `length` ones. */
export function ones(backend: KernelBackend, length: number): TensorRef {
  return put(backend, [length], new Array(length).fill(1));
}

/** A new f32 buffer of `shape`, contents unspecified. */
export function blank(backend: KernelBackend, shape: number[]): TensorRef {
  return { buffer: backend.alloc(shape.reduce((a, b) => a * b, 1) * 4), shape, dtype: 'f32' };
}

/** The f32 contents of `ref`. */
export async function read(backend: KernelBackend, ref: TensorRef): Promise<Float32Array> {
  return new Float32Array((await backend.download(ref.buffer)).slice().buffer);
}

/** Reproducible values in [−2, 2) (a linear congruential sequence from `seed`). */
export function series(count: number, seed: number): number[] {
  let state = seed;
  return Array.from({ length: count }, () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return (state / 2 ** 32) * 4 - 2;
  });
}

/**
 * Queues two kernels (unary sqrt, then fill) on 6-element f32 vectors, runs `inject` (a simulator
 * fault for the next synchronize) and synchronizes: what synchronize() rejected with (undefined if
 * it resolved) and the `out` vector, whose kernels the backend's error should name.
 */
export async function faultAfterQueuedKernels(
  backend: KernelBackend,
  inject: () => void,
): Promise<{ rejection: unknown; out: TensorRef }> {
  const x = ones(backend, 6);
  const out = ones(backend, 6);
  backend.unary('sqrt', x, out);
  backend.fill(out, 2);
  inject();
  const rejection = await backend.synchronize().then(
    () => undefined,
    (error: unknown) => error,
  );
  return { rejection, out };
}
