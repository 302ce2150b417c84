// RMSNorm forward (kernels/norm.cu) and backward (kernels/rms_norm_backward.cu) on the simulator
// against an f64 reference. The forward reads rows in 16-byte packs where it can, like the
// backward. Backward: rows
// of up to 16384 elements take the one-pass kernel — 16-byte packs (f32 rows of whole float4s,
// f16/bf16 of whole 8-element packs) or element by element (other row lengths), one or several
// element groups a thread, more rows than chunks (each block walks rows c, c + chunks, …), fewer,
// and a single row (dWeight written directly) — longer rows the two-pass kernels. dx and dWeight
// must be within their rounding bounds of the reference and the same bits on a second run; so must
// the forward's output and rstd.
import { afterAll, describe, expect, it } from 'vitest';
import type { CudaBackend } from '../src/cuda-backend.js';
import { createSimulatedCudaBackend } from '../src/simulator.js';
import { decodeFloats, ELEMENT_BYTES, EPSILON, encodeFloats, type FloatDType } from './float-bytes.js';
import { seededSeries } from './seeded-series.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

describe.skipIf(skipReason !== undefined)(
  `rmsNormBackward on the CUDA simulator${skipReason ? ` (skipped: ${skipReason})` : ''}`,
  () => {
    const backend: CudaBackend | undefined = skipReason === undefined ? createSimulatedCudaBackend() : undefined;
    afterAll(() => backend?.dispose());

    /** rmsNorm then rmsNormBackward of rows × cols in `dtype` on the simulator: dx, dWeight (f32) and the rstd they used. */
    async function run(
      dtype: FloatDType,
      rows: number,
      cols: number,
      inputs: Record<'x' | 'weight' | 'dy', Uint8Array>,
    ) {
      const cuda = backend!;
      const tensor = (shape: number[], type: FloatDType, bytes?: Uint8Array) => {
        const count = shape.reduce((a, b) => a * b, 1);
        const buffer = cuda.alloc(count * ELEMENT_BYTES[type]);
        if (bytes) cuda.upload(buffer, bytes);
        return { buffer, shape, dtype: type };
      };
      const x = tensor([rows, cols], dtype, inputs.x);
      const weight = tensor([cols], dtype, inputs.weight);
      const dy = tensor([rows, cols], dtype, inputs.dy);
      const [out, dx] = [tensor([rows, cols], dtype), tensor([rows, cols], dtype)];
      const [rstd, dWeight] = [tensor([rows], 'f32'), tensor([cols], 'f32')];
      try {
        cuda.rmsNorm(x, weight, out, rstd, rows, cols, 1e-5);
        cuda.rmsNormBackward(x, weight, rstd, dy, dx, dWeight, rows, cols);
        return {
          out: await cuda.download(out.buffer),
          dx: await cuda.download(dx.buffer),
          dWeight: await cuda.download(dWeight.buffer),
          rstd: decodeFloats(await cuda.download(rstd.buffer), 'f32').values,
        };
      } finally {
        for (const ref of [x, weight, dy, out, dx, rstd, dWeight]) cuda.free(ref.buffer);
      }
    }

    /** Runs rows × cols twice and checks both runs' bits and the first against the f64 reference. */
    async function expectMatchesReference(dtype: FloatDType, rows: number, cols: number): Promise<void> {
      const x = encodeFloats(seededSeries(rows * cols, 11 + cols), dtype);
      const weight = encodeFloats(seededSeries(cols, 13 + rows), dtype);
      const dy = encodeFloats(seededSeries(rows * cols, 17 + rows + cols), dtype);
      const inputs = { x: x.bytes, weight: weight.bytes, dy: dy.bytes };
      const first = await run(dtype, rows, cols, inputs);
      const second = await run(dtype, rows, cols, inputs);
      expect(Buffer.from(second.out).equals(Buffer.from(first.out)), 'out: the same bits on a second run').toBe(true);
      expect(Buffer.from(second.dx).equals(Buffer.from(first.dx)), 'dx: the same bits on a second run').toBe(true);
      expect(Buffer.from(second.dWeight).equals(Buffer.from(first.dWeight)), 'dWeight: the same bits').toBe(true);
      const dx = decodeFloats(first.dx, dtype).values;
      const dWeight = decodeFloats(first.dWeight, 'f32').values;
      const weightSum = new Float64Array(cols);
      const weightMagnitude = new Float64Array(cols);
      const out = decodeFloats(first.out, dtype).values;
      for (let row = 0; row < rows; row++) {
        const rstd = first.rstd[row]!;
        let squares = 0;
        for (let col = 0; col < cols; col++) squares += x.stored[row * cols + col]! ** 2;
        const expectedRstd = 1 / Math.sqrt(squares / cols + 1e-5);
        if (Math.abs(rstd - expectedRstd) > 2 ** -20 * expectedRstd)
          expect.fail(`${dtype} ${rows}×${cols}: rstd[${row}] = ${rstd}, expected ${expectedRstd}`);
        for (let col = 0; col < cols; col++) {
          const expected = x.stored[row * cols + col]! * expectedRstd * weight.stored[col]!;
          const bound = EPSILON[dtype] * Math.abs(expected) + 2 ** -20 * Math.abs(expected);
          if (Math.abs(out[row * cols + col]! - expected) > bound)
            expect.fail(
              `${dtype} ${rows}×${cols}: out[${row}, ${col}] = ${out[row * cols + col]}, expected ${expected}`,
            );
        }
        let projection = 0;
        let magnitude = 0;
        for (let col = 0; col < cols; col++) {
          const term = dy.stored[row * cols + col]! * weight.stored[col]! * x.stored[row * cols + col]! * rstd;
          projection += term;
          magnitude += Math.abs(term);
        }
        const mean = projection / cols;
        for (let col = 0; col < cols; col++) {
          const i = row * cols + col;
          const normalized = x.stored[i]! * rstd;
          const expected = rstd * (dy.stored[i]! * weight.stored[col]! - normalized * mean);
          // One rounding to the dtype, plus f32 error in the row's sum and the products.
          const bound =
            EPSILON[dtype] * Math.abs(expected) +
            2 ** -20 *
              rstd *
              (Math.abs(dy.stored[i]! * weight.stored[col]!) + (Math.abs(normalized) * magnitude) / cols);
          if (Math.abs(dx[i]! - expected) > bound)
            expect.fail(`${dtype} ${rows}×${cols}: dx[${row}, ${col}] = ${dx[i]}, expected ${expected} ± ${bound}`);
          weightSum[col]! += dy.stored[i]! * normalized;
          weightMagnitude[col]! += Math.abs(dy.stored[i]! * normalized);
        }
      }
      for (let col = 0; col < cols; col++) {
        // f32 sums of `rows` terms: at most rows roundings of the running magnitude.
        const bound = (rows + 4) * 2 ** -24 * weightMagnitude[col]!;
        if (Math.abs(dWeight[col]! - weightSum[col]!) > bound)
          expect.fail(
            `${dtype} ${rows}×${cols}: dWeight[${col}] = ${dWeight[col]}, expected ${weightSum[col]} ± ${bound}`,
          );
      }
    }

    it('f32, 1000 rows of 768 (float4 packs; 512 chunks, so blocks walk two rows)', async () => {
      await expectMatchesReference('f32', 1000, 768);
    });
    it('bf16, 40 rows of 1024 (8-element packs; a chunk per row)', async () => {
      await expectMatchesReference('bf16', 40, 1024);
    });
    it('f16, 9 rows of 264 (8-element packs, a block of 64 threads with 33 of them idle)', async () => {
      await expectMatchesReference('f16', 9, 264);
    });
    it('f16, 7 rows of 33 (element by element)', async () => {
      await expectMatchesReference('f16', 7, 33);
    });
    it('f32, 3 rows of 4104 (1026 float4 packs: two per thread of 1024)', async () => {
      await expectMatchesReference('f32', 3, 4104);
    });
    it('f32, 2 rows of 5001 (element by element, five per thread of 1024)', async () => {
      await expectMatchesReference('f32', 2, 5001);
    });
    it('bf16, one row of 512 (one chunk: dWeight written directly)', async () => {
      await expectMatchesReference('bf16', 1, 512);
    });
    it('f32, 70 rows of 16392 (longer than 16384: the two-pass kernels, 2 chunks of 64 rows)', async () => {
      await expectMatchesReference('f32', 70, 16392);
    });
  },
);
