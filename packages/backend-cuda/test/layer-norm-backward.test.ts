// LayerNorm backward (kernels/layer_norm_backward.cu) on the simulator against an f64 reference:
// rows of up to 8192 elements take the one-pass kernel — 16-byte packs (f32 rows of whole float4s,
// f16/bf16 of whole 8-element packs) or element by element, several element groups a thread, more
// rows than chunks (each block walks rows c, c + chunks, …), fewer, and a single row (dWeight and
// dBias written directly) — longer rows the two passes (dx and the row statistics, then the column
// sums by chunks of rows). dx, dWeight and dBias must be near the reference (relative L2) and the
// same bits on a second run. Through core's layerNorm, the backward is that one kernel instead of
// core's composition of about twenty.
import { backward, layerNorm, tensor } from '@kiln/core';
import { relativeL2Error } from '@kiln/testing';
import { describe, expect, it } from 'vitest';
import { decodeFloats, ELEMENT_BYTES, encodeFloats, type FloatDType } from './float-bytes.js';
import { launchedKernels, simulatedBackend } from './simulated-device.js';
import { seededSeries } from './seeded-series.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();
const EPS = 1e-5;

/** dx, dWeight, dBias of LayerNorm in f64 from the stored (rounded) inputs. */
function reference(x: ArrayLike<number>, weight: ArrayLike<number>, dy: ArrayLike<number>, rows: number, cols: number) {
  const dx = new Float64Array(rows * cols);
  const [dWeight, dBias] = [new Float64Array(cols), new Float64Array(cols)];
  for (let row = 0; row < rows; row++) {
    const start = row * cols;
    let sum = 0;
    for (let col = 0; col < cols; col++) sum += x[start + col]!;
    const mean = sum / cols;
    let squares = 0;
    for (let col = 0; col < cols; col++) squares += (x[start + col]! - mean) ** 2;
    const rstd = 1 / Math.sqrt(squares / cols + EPS);
    let [gradientSum, projection] = [0, 0];
    for (let col = 0; col < cols; col++) {
      const scaled = dy[start + col]! * weight[col]!;
      gradientSum += scaled;
      projection += scaled * (x[start + col]! - mean) * rstd;
    }
    for (let col = 0; col < cols; col++) {
      const normalized = (x[start + col]! - mean) * rstd;
      dx[start + col] =
        rstd * (dy[start + col]! * weight[col]! - gradientSum / cols - (normalized * projection) / cols);
      dWeight[col]! += dy[start + col]! * normalized;
      dBias[col]! += dy[start + col]!;
    }
  }
  return { dx, dWeight, dBias };
}

/** Largest relative L2 error of dx in `dtype` (one rounding of the output, f32 sums); dWeight/dBias are f32 sums. */
const DX_LIMIT: Record<FloatDType, number> = { f32: 1e-5, f16: 2e-3, bf16: 1e-2 };

describe.skipIf(skipReason !== undefined)(
  `layerNormBackward on the CUDA simulator${skipReason ? ` (skipped: ${skipReason})` : ''}`,
  () => {
    const backend = simulatedBackend();

    it('is native on the CUDA backend (capabilities.supports)', () => {
      for (const dtype of ['f32', 'f16', 'bf16'] as const)
        expect(backend().capabilities.supports('layerNormBackward', dtype)).toBe(true);
      expect(backend().capabilities.supports('layerNormBackward', 'i32')).toBe(false);
    });

    /** layerNormBackward of rows × cols in `dtype`: dx (as stored), dWeight, dBias. */
    async function run(
      dtype: FloatDType,
      rows: number,
      cols: number,
      inputs: Record<'x' | 'weight' | 'dy', Uint8Array>,
    ) {
      const cuda = backend();
      const make = (shape: number[], type: FloatDType, bytes?: Uint8Array) => {
        const count = shape.reduce((a, b) => a * b, 1);
        const buffer = cuda.alloc(Math.max(count, 1) * ELEMENT_BYTES[type]);
        if (bytes && bytes.byteLength > 0) cuda.upload(buffer, bytes);
        return { buffer, shape, dtype: type };
      };
      const x = make([rows, cols], dtype, inputs.x);
      const weight = make([cols], dtype, inputs.weight);
      const dy = make([rows, cols], dtype, inputs.dy);
      const dx = make([rows, cols], dtype);
      const [dWeight, dBias] = [make([cols], 'f32'), make([cols], 'f32')];
      try {
        cuda.layerNormBackward!(x, weight, dy, dx, dWeight, dBias, rows, cols, EPS);
        return {
          dx: await cuda.download(dx.buffer),
          dWeight: await cuda.download(dWeight.buffer),
          dBias: await cuda.download(dBias.buffer),
        };
      } finally {
        for (const ref of [x, weight, dy, dx, dWeight, dBias]) cuda.free(ref.buffer);
      }
    }

    const shapes: [number, number, string][] = [
      [1, 40, 'one row: dWeight and dBias written directly'],
      [3, 64, 'packed rows, three chunks'],
      [5, 33, 'one element at a time'],
      [600, 24, 'more rows than chunks'],
      [2, 2056, 'several element groups a thread'],
      [3, 8200, 'rows past 8192: the two passes'],
      [130, 8200, 'the two passes with three chunks of rows'],
    ];
    for (const dtype of ['f32', 'bf16', 'f16'] as const) {
      for (const [rows, cols, path] of shapes) {
        if (dtype !== 'f32' && rows * cols > 100_000) continue;
        it(`${dtype} [${rows}, ${cols}] (${path}): near the f64 reference, the same bits twice`, async () => {
          // Rows off centre (mean ≈ 1) so that a variance taken as E[x²] − E[x]² would show.
          const x = encodeFloats(seededSeries(rows * cols, 3 + cols, -1, 3), dtype);
          const weight = encodeFloats(seededSeries(cols, 5 + rows, 0.5, 1.5), dtype);
          const dy = encodeFloats(seededSeries(rows * cols, 7 + rows + cols), dtype);
          const inputs = { x: x.bytes, weight: weight.bytes, dy: dy.bytes };
          const first = await run(dtype, rows, cols, inputs);
          const second = await run(dtype, rows, cols, inputs);
          for (const name of ['dx', 'dWeight', 'dBias'] as const)
            expect(Buffer.from(second[name]).equals(Buffer.from(first[name])), `${name}: the same bits twice`).toBe(
              true,
            );
          const expected = reference(x.stored, weight.stored, dy.stored, rows, cols);
          const dx = decodeFloats(first.dx, dtype).values;
          expect(relativeL2Error(dx, expected.dx)).toBeLessThan(DX_LIMIT[dtype]);
          // f32 sums of `rows` terms each.
          const sumLimit = Math.max(1e-6, rows * 2 ** -24 * 4);
          expect(relativeL2Error(decodeFloats(first.dWeight, 'f32').values, expected.dWeight)).toBeLessThan(sumLimit);
          expect(relativeL2Error(decodeFloats(first.dBias, 'f32').values, expected.dBias)).toBeLessThan(sumLimit);
        });
      }
    }

    it('rows = 0 zeroes dWeight and dBias', async () => {
      const result = await run('f32', 0, 6, {
        x: new Uint8Array(0),
        weight: encodeFloats([1, 2, 3, 4, 5, 6], 'f32').bytes,
        dy: new Uint8Array(0),
      });
      expect([...decodeFloats(result.dWeight, 'f32').values]).toEqual([0, 0, 0, 0, 0, 0]);
      expect([...decodeFloats(result.dBias, 'f32').values]).toEqual([0, 0, 0, 0, 0, 0]);
    });

    it("core's layerNorm backward runs this one kernel (not the composition) and matches the reference", async () => {
      const [rows, cols] = [6, 48];
      const options = { backend: backend(), dtype: 'f32' as const };
      const xValues = seededSeries(rows * cols, 21, -1, 3);
      const weightValues = seededSeries(cols, 23, 0.5, 1.5);
      const dyValues = seededSeries(rows * cols, 25);
      const x = tensor(xValues, [rows, cols], options).requireGrad();
      const weight = tensor(weightValues, [cols], options).requireGrad();
      const bias = tensor(seededSeries(cols, 27), [cols], options).requireGrad();
      const dy = tensor(dyValues, [rows, cols], options);
      try {
        const { names, result: y } = await launchedKernels(backend(), async () => {
          const output = layerNorm(x, weight, bias, EPS);
          backward(output, dy);
          await backend().synchronize();
          return output;
        });
        y.dispose();
        // Besides autograd's copy of the gradient: the forward and this one backward kernel.
        expect(names.filter((name) => !name.startsWith('copy')).sort()).toEqual([
          'layerNorm f32',
          'layerNormBackward f32',
        ]);
        const expected = reference(
          Float32Array.from(xValues),
          Float32Array.from(weightValues),
          Float32Array.from(dyValues),
          rows,
          cols,
        );
        expect(relativeL2Error(await x.grad!.data(), expected.dx)).toBeLessThan(1e-5);
        expect(relativeL2Error(await weight.grad!.data(), expected.dWeight)).toBeLessThan(1e-6);
        expect(relativeL2Error(await bias.grad!.data(), expected.dBias)).toBeLessThan(1e-6);
      } finally {
        for (const t of [x.grad, weight.grad, bias.grad, x, weight, bias, dy]) t?.dispose();
      }
    });
  },
);
