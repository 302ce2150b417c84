// The command stream's guarantees, on the simulator (whose GPU is a queue thread, so work really
// runs concurrently with JS): a download sees exactly the work queued before it (later work waits
// behind the read), an upload into a buffer that queued work still uses lands in stream order
// (staged through a copy kernel), an idle upload writes shared memory directly, and a pending
// download never blocks the event loop.
import type { TensorRef } from '@kiln/core';
import { describe, expect, it } from 'vitest';
import type { MetalBackend } from '../src/metal-backend.js';
import { createSimulatedMetalBackend } from '../src/simulator.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

function f32(backend: MetalBackend, shape: number[]): TensorRef {
  return { buffer: backend.alloc(shape.reduce((a, b) => a * b, 1) * 4), shape, dtype: 'f32' };
}

async function floats(backend: MetalBackend, ref: TensorRef): Promise<number[]> {
  return [...new Float32Array((await backend.download(ref.buffer)).slice().buffer)];
}

describe.skipIf(skipReason !== undefined)(`command stream${skipReason ? ` (${skipReason})` : ''}`, () => {
  it('a download sees the work queued before it and not the work queued after it', async () => {
    const backend = createSimulatedMetalBackend();
    const x = f32(backend, [4096]);
    backend.fill(x, 1);
    const before = backend.download(x.buffer);
    backend.fill(x, 2);
    backend.unary('neg', x, x);
    const after = backend.download(x.buffer);
    expect(new Set(new Float32Array((await before).slice().buffer))).toEqual(new Set([1]));
    expect(new Set(new Float32Array((await after).slice().buffer))).toEqual(new Set([-2]));
    backend.dispose();
  });

  it('an upload into a buffer that queued work still uses is staged in stream order; an idle one is a plain copy', async () => {
    const backend = createSimulatedMetalBackend();
    const x = f32(backend, [8]);
    const y = f32(backend, [8]);
    backend.recordDispatches(true);
    backend.upload(x.buffer, new Uint8Array(new Float32Array(8).fill(4).buffer));
    expect(backend.takeDispatches()).toEqual([]);
    backend.fill(x, 1);
    backend.unary('neg', x, y);
    // x is still read by the queued kernels: the new bytes must land after them.
    backend.upload(x.buffer, new Uint8Array(new Float32Array(8).fill(5).buffer), 0);
    backend.unary('square', x, x);
    expect(backend.takeDispatches().map((dispatch) => dispatch.kernel)).toEqual([
      'fill_u32',
      'unary_f32',
      'copy_bytes',
      'unary_f32',
    ]);
    expect(await floats(backend, y)).toEqual(new Array(8).fill(-1));
    expect(await floats(backend, x)).toEqual(new Array(8).fill(25));
    backend.dispose();
  });

  it('never writes into a buffer that queued kernels still read, even after the tensor was freed', async () => {
    const backend = createSimulatedMetalBackend();
    const first = f32(backend, [1024]);
    const second = f32(backend, [1024]);
    const negated = f32(backend, [1024]);
    const doubled = f32(backend, [1024]);
    backend.fill(first, 3);
    backend.fill(second, 4);
    // Queued reads of both, then both freed: their buffers go back to the pool while the reads are still queued.
    backend.unary('neg', first, negated);
    backend.binary('add', { ...second, strides: [1], offset: 0 }, { ...second, strides: [1], offset: 0 }, doubled);
    backend.free(first.buffer);
    backend.free(second.buffer);
    // Reuses one of them; the upload must be staged (and its staging buffer must not be the other).
    const reused = f32(backend, [1024]);
    backend.upload(reused.buffer, new Uint8Array(new Float32Array(1024).fill(7).buffer));
    expect(new Set(await floats(backend, negated))).toEqual(new Set([-3]));
    expect(new Set(await floats(backend, doubled))).toEqual(new Set([8]));
    expect(new Set(await floats(backend, reused))).toEqual(new Set([7]));
    backend.dispose();
  });

  it('a pending download does not block the event loop', async () => {
    const backend = createSimulatedMetalBackend();
    const a = f32(backend, [192, 192]);
    const out = f32(backend, [192, 192]);
    backend.fill(a, 0.5);
    for (let i = 0; i < 4; i++)
      backend.matmul(a, a, out, {
        batch: 1,
        m: 192,
        n: 192,
        k: 192,
        transposeA: false,
        transposeB: false,
        batchStrideA: 0,
        batchStrideB: 0,
      });
    const order: string[] = [];
    const download = backend.download(out.buffer).then((bytes) => {
      order.push('download');
      return bytes;
    });
    await new Promise((resolve) => setTimeout(resolve, 0));
    order.push('timer');
    const values = new Float32Array((await download).slice().buffer);
    expect(order).toEqual(['timer', 'download']);
    expect(values[0]).toBe(48);
    backend.dispose();
  });

  it('settles reads in order and resolves synchronize with nothing queued', async () => {
    const backend = createSimulatedMetalBackend();
    await expect(backend.synchronize()).resolves.toBeUndefined();
    const x = f32(backend, [3]);
    const reads: Promise<number[]>[] = [];
    for (let value = 1; value <= 5; value++) {
      backend.fill(x, value);
      reads.push(floats(backend, x));
    }
    expect((await Promise.all(reads)).map((values) => values[0])).toEqual([1, 2, 3, 4, 5]);
    backend.dispose();
  });
});
