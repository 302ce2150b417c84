// The out-of-range-index contract (docs/kernel-semantics.md): gather and scatterAdd check every index on the
// device, never read or write out of bounds (gather writes 0, scatterAdd skips), and the next
// synchronize()/download() rejects with an InvalidArgumentError naming the kernel, the index
// value, its position and the valid range — once: the flag is cleared. The shared host builds that
// error (kiln::index_error) for both backends; each backend reads its device's error record.
import * as kiln from '@kiln/core';
import { InvalidArgumentError, type TensorRef } from '@kiln/core';
import { afterAll, describe, expect, it } from 'vitest';
import { type GpuBackend, SIMULATED_BACKENDS, title } from './support/backends.js';

function f32(backend: GpuBackend, shape: number[], values: number[]): TensorRef {
  const buffer = backend.alloc(values.length * 4);
  backend.upload(buffer, new Uint8Array(new Float32Array(values).buffer));
  return { buffer, shape, dtype: 'f32' };
}

function i32(backend: GpuBackend, values: number[]): TensorRef {
  const buffer = backend.alloc(values.length * 4);
  backend.upload(buffer, new Uint8Array(new Int32Array(values).buffer));
  return { buffer, shape: [values.length], dtype: 'i32' };
}

async function floats(backend: GpuBackend, ref: TensorRef): Promise<number[]> {
  return [...new Float32Array((await backend.download(ref.buffer)).slice().buffer)];
}

describe.each(SIMULATED_BACKENDS)('out-of-range indices on the device of the $name simulator', (target) => {
  describe.skipIf(target.skipReason !== undefined)(title(target), () => {
    const backend = target.skipReason === undefined ? target.create() : (undefined as unknown as GpuBackend);
    afterAll(() => backend?.dispose());

    it('gather writes zeros for the bad index and the next synchronize rejects, once', async () => {
      const x = f32(backend, [4, 3], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
      const indices = i32(backend, [2, 5, 0]);
      const out = f32(backend, [3, 3], new Array(9).fill(-1));
      backend.gather(x, indices, out, 1, 4, 3);
      const rejection = await backend.synchronize().then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(rejection).toBeInstanceOf(InvalidArgumentError);
      expect((rejection as Error).message).toMatch(
        new RegExp(`^${target.name} backend: gather: index 5 at position 1 is out of range \\[0, 4\\)`),
      );
      await expect(backend.synchronize()).resolves.toBeUndefined();
      expect(await floats(backend, out)).toEqual([6, 7, 8, 0, 0, 0, 0, 1, 2]);
    });

    it('scatterAdd skips the bad index and the next download rejects', async () => {
      const source = f32(backend, [3, 2], [1, 1, 2, 2, 3, 3]);
      const indices = i32(backend, [1, -1, 1]);
      const out = f32(backend, [2, 2], [0, 0, 10, 10]);
      backend.scatterAdd(source, indices, out, 1, 2, 2);
      await expect(backend.download(out.buffer)).rejects.toThrow(
        /scatterAdd: index -1 at position 1 is out of range \[0, 2\)/,
      );
      expect(await floats(backend, out)).toEqual([0, 0, 14, 14]);
    });

    it('is not a device fault: the backend stays usable', async () => {
      const x = f32(backend, [4], [1, 1, 1, 1]);
      const indices = i32(backend, [9]);
      const out = f32(backend, [1], [1]);
      backend.gather(x, indices, out, 1, 4, 1);
      await expect(backend.synchronize()).rejects.toThrowError(InvalidArgumentError);
      backend.fill(out, 3);
      expect(await floats(backend, out)).toEqual([3]);
    });

    it('reaches users of core: gather/embedding with a bad token id rejects when the result is read', async () => {
      const table = kiln.tensor(
        [
          [1, 2],
          [3, 4],
        ],
        undefined,
        { backend },
      );
      const ids = kiln.tensor([0, 7], [2], { dtype: 'i32', backend });
      const rows = kiln.embedding(table, ids);
      await expect(rows.data()).rejects.toThrow(InvalidArgumentError);
      for (const tensor of [table, ids, rows]) tensor.dispose();
      await expect(backend.synchronize()).resolves.toBeUndefined();
    });
  });
});
