// The native flash-attention kernels against @kiln/backend-cpu on what the conformance kit lacks:
// head dim 128 (the largest bucket) in a causal grouped-query call with Tq ≠ Tk and an additive
// mask, forward and backward (through core's autograd, so the same calls training makes), on a
// GPU with simdgroup matrices and on one without; the backward is bit-identical from run to run;
// a head dim above 128 runs core's composition on the Metal primitives instead.
import { attention, backward, mul, sum, tensor, type KernelBackend, type Tensor } from '@kiln/core';
import { createCpuBackend } from '@kiln/backend-cpu';
import { afterAll, describe, expect, it } from 'vitest';
import type { MetalBackend } from '../src/metal-backend.js';
import { configureSimulator, createSimulatedMetalBackend } from '../src/simulator.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

/** B=2, Hq=4, Hkv=2, Tq=5, Tk=9: causal aligned to the end, a [B, 1, Tq, Tk] padding-style mask. */
const [batch, headsQ, headsKV, lengthQ, lengthK] = [2, 4, 2, 5, 9];

/** Deterministic values in [-1, 1). */
function values(count: number, seed: number): Float32Array {
  let state = seed >>> 0;
  return Float32Array.from({ length: count }, () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 31 - 1;
  });
}

interface Result {
  out: Float32Array;
  dq: Float32Array;
  dk: Float32Array;
  dv: Float32Array;
}

async function run(backend: KernelBackend, headDim: number): Promise<Result> {
  const q = tensor(values(batch * headsQ * lengthQ * headDim, 1), [batch, headsQ, lengthQ, headDim], {
    backend,
  }).requireGrad();
  const k = tensor(values(batch * headsKV * lengthK * headDim, 2), [batch, headsKV, lengthK, headDim], {
    backend,
  }).requireGrad();
  const v = tensor(values(batch * headsKV * lengthK * headDim, 3), [batch, headsKV, lengthK, headDim], {
    backend,
  }).requireGrad();
  // Key 0 stays visible so no row is fully masked; −Inf hides some keys of batch 1.
  const maskValues = Float32Array.from({ length: batch * lengthQ * lengthK }, (_, index) => {
    const j = index % lengthK;
    if (j === 0) return 0;
    return index >= lengthQ * lengthK && j % 3 === 1 ? -Infinity : ((index * 7) % 5) * -0.25;
  });
  const mask = tensor(maskValues, [batch, 1, lengthQ, lengthK], { backend });
  const weights = tensor(values(batch * headsQ * lengthQ * headDim, 4), [batch, headsQ, lengthQ, headDim], { backend });
  const out = attention(q, k, v, { causal: true, mask, scale: 0.3 });
  const loss = sum(mul(out, weights));
  backward(loss);
  const read = async (x: Tensor) => Float32Array.from((await x.data()) as ArrayLike<number>);
  const result = { out: await read(out), dq: await read(q.grad!), dk: await read(k.grad!), dv: await read(v.grad!) };
  for (const x of [q, k, v, mask, weights, out, loss]) x.dispose();
  return result;
}

function expectClose(actual: Float32Array, expected: Float32Array, what: string): void {
  expect(actual.length, what).toBe(expected.length);
  let scale = 0;
  for (const value of expected) scale = Math.max(scale, Math.abs(value));
  let worst = 0;
  for (let i = 0; i < actual.length; i++) worst = Math.max(worst, Math.abs(actual[i] - expected[i]));
  expect(worst / scale, `${what}: worst error ${worst} at scale ${scale}`).toBeLessThan(2e-5);
}

describe.skipIf(skipReason !== undefined)(
  `flash attention vs backend-cpu${skipReason ? ` (${skipReason})` : ''}`,
  () => {
    const cpu = createCpuBackend();
    const created: MetalBackend[] = [];
    afterAll(() => created.forEach((backend) => backend.dispose()));
    const kernelsOf = (backend: MetalBackend) =>
      backend
        .takeDispatches()
        .map((dispatch) => dispatch.kernel)
        .filter((name) => name.startsWith('attention'));

    for (const simdgroupMatrix of [true, false]) {
      it(`D=128, causal GQA, Tq ≠ Tk, masked: forward and backward match (${simdgroupMatrix ? 'simdgroup-matrix' : 'scalar'} kernels)`, async () => {
        configureSimulator(
          simdgroupMatrix ? { simdgroupMatrix: true, family: 'apple9' } : { simdgroupMatrix: false, family: 'mac2' },
        );
        const metal = createSimulatedMetalBackend();
        created.push(metal);
        configureSimulator({ simdgroupMatrix: true, family: 'apple9' });
        metal.recordDispatches(true);
        const native = await run(metal, 128);
        const variant = simdgroupMatrix ? 'simdgroup' : 'scalar';
        expect(new Set(kernelsOf(metal))).toEqual(
          new Set([
            `attention_forward_${variant}_f32_d128`,
            'attention_delta_f32',
            `attention_backward_kv_${variant}_f32_d128`,
            `attention_backward_q_${variant}_f32_d128`,
          ]),
        );
        const reference = await run(cpu, 128);
        for (const key of ['out', 'dq', 'dk', 'dv'] as const) expectClose(native[key], reference[key], key);
        const again = await run(metal, 128);
        for (const key of ['out', 'dq', 'dk', 'dv'] as const)
          expect(Buffer.from(again[key].buffer).equals(Buffer.from(native[key].buffer)), `${key} bit-identical`).toBe(
            true,
          );
      });
    }

    it("D=160 (above the kernels' limit) runs core's composition on the Metal primitives and still matches", async () => {
      const metal = createSimulatedMetalBackend();
      created.push(metal);
      metal.recordDispatches(true);
      const composed = await run(metal, 160);
      expect(kernelsOf(metal)).toEqual([]);
      const reference = await run(cpu, 160);
      for (const key of ['out', 'dq', 'dk', 'dv'] as const) expectClose(composed[key], reference[key], key);
    });
  },
);
