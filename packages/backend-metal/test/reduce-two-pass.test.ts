// The two-pass reduces (few long rows: reduce_rows_partial; few long columns:
// reduce_columns_partial; then reduce_combine) against @kiln/backend-cpu for every op and dtype:
// max, min, argmax and argmin exactly (ties and NaN included: the partial state carries the index),
// sums within f32 rounding (a different but fixed order), and every result repeats bit for bit.
import { createCpuBackend } from '@kiln/backend-cpu';
import type { DType, KernelBackend, ReduceOp, TensorRef } from '@kiln/core';
import { afterAll, describe, expect, it } from 'vitest';
import { createSimulatedMetalBackend } from '../src/simulator.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();
const OPS: readonly ReduceOp[] = ['sum', 'max', 'min', 'argmax', 'argmin'];
const DTYPES: readonly DType[] = ['f32', 'f16', 'bf16', 'i32'];
/** [outer, size, inner]: a whole-tensor reduce, few long rows, a leading-axis reduce of a small tensor. */
const SHAPES: readonly (readonly [number, number, number])[] = [
  [1, 20000, 1],
  [2, 9000, 1],
  [1, 3000, 4],
];

/** Values in [-4, 4] on a grid of 1/8 (ties for the arg ops; exact in every dtype), with a NaN planted in float rows when `nan`. */
function inputs(count: number, nan: boolean): Float32Array {
  let state = 2463534242;
  const data = Float32Array.from({ length: count }, () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return Math.round((((state >>> 0) / 2 ** 32) * 8 - 4) * 8) / 8;
  });
  if (nan) data[Math.floor(count * 0.6)] = Number.NaN;
  return data;
}

/** x in `dtype` (f32 data cast on the backend; i32 uploaded as integers) and an out for `op`. */
function operands(
  backend: KernelBackend,
  data: Float32Array,
  dtype: DType,
  op: ReduceOp,
  outputs: number,
): { x: TensorRef; out: TensorRef } {
  const count = data.length;
  const upload = (bytes: Uint8Array, shape: number[], type: DType): TensorRef => {
    const buffer = backend.alloc(bytes.byteLength);
    backend.upload(buffer, bytes);
    return { buffer, shape, dtype: type };
  };
  let x: TensorRef;
  if (dtype === 'i32') {
    x = upload(new Uint8Array(Int32Array.from(data, (value) => value * 8).buffer), [count], 'i32');
  } else {
    const wide = upload(new Uint8Array(data.buffer.slice(0)), [count], 'f32');
    x = dtype === 'f32' ? wide : { buffer: backend.alloc(count * 2), shape: [count], dtype };
    if (x !== wide) backend.cast(wide, x);
  }
  const outType: DType = op === 'argmax' || op === 'argmin' ? 'i32' : dtype;
  const out = {
    buffer: backend.alloc(outputs * (outType === 'f16' || outType === 'bf16' ? 2 : 4)),
    shape: [outputs],
    dtype: outType,
  };
  return { x, out };
}

async function widen(backend: KernelBackend, out: TensorRef): Promise<number[]> {
  if (out.dtype === 'f16' || out.dtype === 'bf16') {
    const wide = { buffer: backend.alloc(out.shape[0] * 4), shape: out.shape, dtype: 'f32' as DType };
    backend.cast(out, wide);
    out = wide;
  }
  const bytes = await backend.download(out.buffer);
  const view =
    out.dtype === 'i32'
      ? new Int32Array(bytes.buffer, bytes.byteOffset, out.shape[0])
      : new Float32Array(bytes.buffer, bytes.byteOffset, out.shape[0]);
  return [...view];
}

describe.skipIf(skipReason !== undefined)(`two-pass reduces${skipReason ? ` (${skipReason})` : ''}`, () => {
  const cpu = createCpuBackend();
  const metal = createSimulatedMetalBackend();
  afterAll(() => {
    metal.dispose();
    cpu.dispose?.();
  });

  for (const [outer, size, inner] of SHAPES) {
    for (const dtype of DTYPES) {
      it(`${dtype} [${outer}, ${size}, ${inner}]: every op matches backend-cpu and repeats`, async () => {
        for (const op of OPS) {
          const data = inputs(outer * size * inner, dtype !== 'i32' && op !== 'sum');
          const expected = operands(cpu, data, dtype, op, outer * inner);
          cpu.reduce(op, expected.x, expected.out, outer, size, inner);
          const actual = operands(metal, data, dtype, op, outer * inner);
          metal.recordDispatches(true);
          metal.reduce(op, actual.x, actual.out, outer, size, inner);
          expect(metal.takeDispatches().map((dispatch) => dispatch.kernel.replace(/_(f32|f16|bf16|i32)$/, ''))).toEqual(
            [inner === 1 ? 'reduce_rows_partial' : 'reduce_columns_partial', 'reduce_combine'],
          );
          metal.recordDispatches(false);
          const got = await widen(metal, actual.out);
          const want = await widen(cpu, expected.out);
          // Grid values sum exactly in f32 and i32 whatever the order; f16/bf16 round the total once, as the CPU does.
          expect(got, `${op}`).toEqual(want);
          metal.reduce(op, actual.x, actual.out, outer, size, inner);
          expect(await widen(metal, actual.out), `${op} again`).toEqual(got);
        }
      }, 120_000);
    }
  }
});
