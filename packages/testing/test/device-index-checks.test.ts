/**
 * Out-of-range indices on a device without synchronous reads, whose gather kernel (like a GPU's
 * written without bounds checks) reads whatever lies at the index: core must keep such indices
 * away from the kernel and reject the next read with an InvalidArgumentError.
 */
import { describe, expect, it } from 'vitest';
import * as kiln from '@kiln/core';
import type { KernelBackend, TensorRef } from '@kiln/core';
import { InvalidArgumentError } from '@kiln/core';
import { createReferenceBackend } from '../src/reference-backend.js';

interface UncheckedDevice extends KernelBackend {
  /** Every index value the gather and scatterAdd kernels were given. */
  readonly seenIndices: number[];
}

/** An async-only device whose gather/scatterAdd never check their indices (out-of-range rows read as garbage). */
function uncheckedDevice(options: { checksIndices?: boolean } = {}): UncheckedDevice {
  const base = createReferenceBackend({ name: 'unchecked' });
  const seenIndices: number[] = [];
  const bytesOf = (ref: TensorRef) => base.downloadSync!(ref.buffer);
  const device: UncheckedDevice = {
    ...base,
    name: 'unchecked',
    capabilities: { ...base.capabilities, checksIndices: options.checksIndices },
    seenIndices,
    gather(x, indices, out, outer, rows, inner) {
      const source = new Uint32Array(bytesOf(x).slice().buffer);
      const positions = new Int32Array(
        bytesOf(indices).slice().buffer,
        0,
        indices.shape.reduce((a, b) => a * b, 1),
      );
      seenIndices.push(...positions);
      const result = new Uint32Array(outer * positions.length * inner);
      for (let o = 0; o < outer; o++) {
        for (let i = 0; i < positions.length; i++) {
          for (let j = 0; j < inner; j++) {
            // No bounds check: past the end of x this reads "other memory" (here: a NaN pattern).
            result[(o * positions.length + i) * inner + j] =
              source[(o * rows + positions[i]) * inner + j] ?? 0x7fc00001;
          }
        }
      }
      base.upload(out.buffer, new Uint8Array(result.buffer));
    },
    scatterAdd(source, indices, out, outer, rows, inner) {
      seenIndices.push(
        ...new Int32Array(
          bytesOf(indices).slice().buffer,
          0,
          indices.shape.reduce((a, b) => a * b, 1),
        ),
      );
      base.scatterAdd(source, indices, out, outer, rows, inner);
    },
  };
  delete (device as Partial<KernelBackend>).downloadSync;
  return device;
}

async function rejection(promise: Promise<unknown>): Promise<InvalidArgumentError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(InvalidArgumentError);
  return error as InvalidArgumentError;
}

describe('out-of-range indices on a device without synchronous reads', () => {
  it('embedding id 5 on a 2-row table: the next read rejects, naming the op, the id, its position and the range', async () => {
    const device = uncheckedDevice();
    const table = kiln.tensor([1, 2, 3, 4, 5, 6], [2, 3], { backend: device });
    const ids = kiln.tensor(new Int32Array([1, 5, 0]), [3], { backend: device });
    const rows = kiln.embedding(table, ids);
    const error = await rejection(rows.data());
    expect(error.message).toMatch(
      /^embedding: index 5 at position 1 is out of range for axis 0 of f32\[2, 3\] \(size 2\) in ids/,
    );
    expect(error.hint).toMatch(/\[0, 1\]/);
    // The kernel never saw the bad index, and the row it would have produced is 0.
    expect(device.seenIndices.every((index) => index >= 0 && index < 2)).toBe(true);
    expect(Array.from(await rows.data())).toEqual([4, 5, 6, 0, 0, 0, 1, 2, 3]);
    for (const tensor of [table, ids, rows]) tensor.dispose();
    expect(device.memory().bufferCount).toBe(0);
  });

  it('rejects item(), synchronize() and toBackend() too, once per error, the first error winning', async () => {
    const device = uncheckedDevice();
    const options = { backend: device };
    const table = kiln.tensor([1, 2, 3, 4], [2, 2], options);
    const first = kiln.gather(table, kiln.tensor(new Int32Array([0, -3]), [2], options));
    const second = kiln.gather(table, kiln.tensor(new Int32Array([7]), [1], options), 1);
    const total = kiln.sum(first);
    expect((await rejection(total.item())).message).toMatch(
      /^gather: index -3 at position 1 .*\n.*does not wrap negative indices/,
    );
    expect(await total.item()).toBe(3);
    kiln.gather(table, kiln.tensor(new Int32Array([9]), [1], options));
    expect((await rejection(kiln.synchronize(device))).message).toMatch(
      /^gather: index 9 at position 0 is out of range for axis 0/,
    );
    kiln.gather(table, kiln.tensor(new Int32Array([2]), [1], options));
    await rejection(kiln.toBackend(second, createReferenceBackend()));
    await kiln.synchronize(device);
  });

  it('gives no gradient to an out-of-range position', async () => {
    const device = uncheckedDevice();
    const table = kiln.tensor([1, 2, 3, 4], [2, 2], { backend: device }).requireGrad();
    const ids = kiln.tensor(new Int32Array([1, 2, 1]), [3], { backend: device });
    const loss = kiln.sum(kiln.embedding(table, ids));
    kiln.backward(loss);
    await rejection(loss.item());
    expect(Array.from(await table.grad!.data())).toEqual([0, 0, 2, 2]);
    expect(device.seenIndices.every((index) => index >= 0 && index < 2)).toBe(true);
  });

  it('reports crossEntropy targets outside [0, classes) that are not the ignore index', async () => {
    const device = uncheckedDevice();
    const logits = kiln.zeros([3, 4], { backend: device });
    const ok = kiln.crossEntropy(logits, kiln.tensor(new Int32Array([0, -100, 3]), [3], { backend: device }));
    expect(await ok.item()).toBeCloseTo(Math.log(4), 6);
    const bad = kiln.crossEntropy(logits, kiln.tensor(new Int32Array([0, 4, 3]), [3], { backend: device }));
    const error = await rejection(bad.item());
    expect(error.message).toMatch(
      /^crossEntropy: target 4 at row 1 is outside \[0, 3\] \(and is not the ignore index -100\)/,
    );
  });

  it('leaves the check to a backend that declares capabilities.checksIndices', async () => {
    const device = uncheckedDevice({ checksIndices: true });
    const table = kiln.tensor([1, 2, 3, 4], [2, 2], { backend: device });
    const rows = kiln.gather(table, kiln.tensor(new Int32Array([1, 2]), [2], { backend: device }));
    await rows.data();
    expect(device.seenIndices).toEqual([1, 2]);
  });
});
