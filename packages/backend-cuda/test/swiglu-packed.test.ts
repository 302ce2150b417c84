// swiglu and swigluBackward (kernels/swiglu.cu) read 16-byte packs, then the elements past the
// last pack one by one. On the simulator, for each float dtype and a count of whole packs plus a
// tail, the tail repeats the first elements' inputs: each tail output must be the bits of the packed
// output with the same inputs (one formula on both paths), and every output within one rounding
// (plus f32 error) of an f64 reference.
import { afterAll, describe, expect, it } from 'vitest';
import type { CudaBackend } from '../src/cuda-backend.js';
import { createSimulatedCudaBackend } from '../src/simulator.js';
import { decodeFloats, ELEMENT_BYTES, EPSILON, encodeFloats } from './float-bytes.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

/** count inputs in [−6, 6) whose last `tail` repeat the first `tail`. */
function inputs(count: number, tail: number, seed: number): number[] {
  const values: number[] = [];
  let state = seed;
  for (let i = 0; i < count - tail; i++) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    values.push((state / 2 ** 32) * 12 - 6);
  }
  return [...values, ...values.slice(0, tail)];
}

const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));

describe.skipIf(skipReason !== undefined)(
  `packed swiglu on the CUDA simulator${skipReason ? ` (skipped: ${skipReason})` : ''}`,
  () => {
    const backend: CudaBackend | undefined = skipReason === undefined ? createSimulatedCudaBackend() : undefined;
    afterAll(() => backend?.dispose());

    for (const dtype of ['f32', 'f16', 'bf16'] as const) {
      const width = 16 / ELEMENT_BYTES[dtype];
      const tail = width - 1;
      const count = 37 * width + tail;
      it(`${dtype}: ${count} elements (37 packs of ${width}, then ${tail} one by one)`, async () => {
        const cuda = backend!;
        const gate = encodeFloats(inputs(count, tail, 3), dtype);
        const up = encodeFloats(inputs(count, tail, 5), dtype);
        const dy = encodeFloats(inputs(count, tail, 7), dtype);
        const tensor = (bytes?: Uint8Array) => {
          const buffer = cuda.alloc(count * ELEMENT_BYTES[dtype]);
          if (bytes) cuda.upload(buffer, bytes);
          return { buffer, shape: [count], dtype };
        };
        const [g, u, d, out, dGate, dUp] = [
          tensor(gate.bytes),
          tensor(up.bytes),
          tensor(dy.bytes),
          tensor(),
          tensor(),
          tensor(),
        ];
        try {
          cuda.swiglu(g, u, out);
          cuda.swigluBackward(g, u, d, dGate, dUp);
          const results = {
            out: decodeFloats(await cuda.download(out.buffer), dtype),
            dGate: decodeFloats(await cuda.download(dGate.buffer), dtype),
            dUp: decodeFloats(await cuda.download(dUp.buffer), dtype),
          };
          for (const [name, result] of Object.entries(results)) {
            for (let i = 0; i < tail; i++)
              expect(
                result.bits[count - tail + i],
                `${name}[${count - tail + i}] (one by one) against ${name}[${i}] (packed)`,
              ).toBe(result.bits[i]);
          }
          for (let i = 0; i < count; i++) {
            const [x, y, gradient] = [gate.stored[i]!, up.stored[i]!, dy.stored[i]!];
            const s = sigmoid(x);
            const expected = {
              out: x * s * y,
              dGate: gradient * y * (s * (1 + x * (1 - s))),
              dUp: gradient * (x * s),
            };
            for (const name of ['out', 'dGate', 'dUp'] as const) {
              const bound = EPSILON[dtype] * Math.abs(expected[name]) + 2 ** -19 * (1 + Math.abs(expected[name]));
              const got = results[name].values[i]!;
              if (!(Math.abs(got - expected[name]) <= bound))
                expect.fail(`${dtype} ${name}[${i}] = ${got}, expected ${expected[name]} ± ${bound}`);
            }
          }
        } finally {
          for (const ref of [g, u, d, out, dGate, dUp]) cuda.free(ref.buffer);
        }
      });
    }
  },
);
