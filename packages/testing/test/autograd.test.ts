import { describe, expect, it } from 'vitest';
import * as kiln from '@kiln/core';
import type { Tensor } from '@kiln/core';
import { philoxNormal } from '@kiln/core';
import { useReferenceBackend } from './helpers/backend.js';

const { backend } = useReferenceBackend();

interface InputSpec {
  shape: number[];
  /** Integer inputs (indices) are passed through without a gradient. */
  integers?: number[];
  /** A float input that takes no gradient (e.g. an attention mask). */
  constant?: boolean;
}

/**
 * Checks the analytic gradients of loss = Σ r ⊙ build(inputs) against central differences,
 * for every float input element. Values are f32 on the device, so tolerances are loose
 * enough for f32 rounding and tight enough that a wrong gradient fails.
 */
async function checkGradients(build: (inputs: Tensor[]) => Tensor, specs: InputSpec[], seed = 1): Promise<void> {
  const hostInputs = specs.map((spec, index) => {
    if (spec.integers) return Int32Array.from(spec.integers);
    const values = new Float32Array(spec.shape.reduce((a, b) => a * b, 1));
    philoxNormal(values, seed, index * 1000);
    return values;
  });
  const makeInputs = (): Tensor[] => hostInputs.map((values, index) => kiln.tensor(values, specs[index].shape));
  const probe = kiln.noGrad(() => kiln.tidy(() => build(makeInputs())));
  const projection = new Float32Array(probe.size);
  philoxNormal(projection, seed + 99, 0);
  const projectionTensor = kiln.tensor(projection, probe.shape);
  probe.dispose();
  const lossOf = (inputs: Tensor[]): Tensor => kiln.sum(kiln.mul(build(inputs), projectionTensor));
  const lossValue = (inputs: Tensor[]): number => kiln.noGrad(() => kiln.tidy(() => lossOf(inputs).dataSync()[0]));

  const inputs = makeInputs();
  const floatIndices = specs
    .map((spec, index) => (spec.integers || spec.constant ? -1 : index))
    .filter((index) => index >= 0);
  for (const index of floatIndices) inputs[index].requireGrad();
  const loss = kiln.tidy(() => lossOf(inputs));
  kiln.backward(loss);
  loss.dispose();

  for (const index of floatIndices) {
    const analytic = inputs[index].grad!.dataSync();
    const base = hostInputs[index] as Float32Array;
    const epsilon = 1e-2;
    for (let element = 0; element < base.length; element++) {
      const original = base[element];
      base[element] = original + epsilon;
      const plus = lossAt();
      base[element] = original - epsilon;
      const minus = lossAt();
      base[element] = original;
      const numeric = (plus - minus) / (2 * epsilon);
      const tolerance = 2e-2 * Math.max(1, Math.abs(numeric));
      if (Math.abs(analytic[element] - numeric) > tolerance) {
        throw new Error(
          `gradient of input ${index} element ${element}: analytic ${analytic[element]} vs numeric ${numeric}`,
        );
      }
    }
  }
  for (const input of inputs) {
    input.grad?.dispose();
    input.dispose();
  }
  projectionTensor.dispose();

  function lossAt(): number {
    const shifted = makeInputs();
    const value = lossValue(shifted);
    for (const tensor of shifted) tensor.dispose();
    return value;
  }
}

describe('autograd: composed gradients match finite differences', () => {
  it('elementwise ops with broadcasting', async () => {
    await checkGradients(
      ([a, b]) =>
        kiln.add(
          kiln.mul(kiln.tanh(a), kiln.sigmoid(b)),
          kiln.div(kiln.exp(kiln.mul(a, 0.3)), kiln.add(kiln.square(b), 1)),
        ),
      [{ shape: [2, 3] }, { shape: [3] }],
    );
  });

  it('gelu, silu, relu, sqrt, rsqrt, log, pow, maximum', async () => {
    await checkGradients(
      ([a]) => {
        const positive = kiln.add(kiln.square(a), 0.5);
        return kiln.add(
          kiln.add(kiln.gelu(a), kiln.silu(a)),
          kiln.add(
            kiln.mul(kiln.sqrt(positive), kiln.log(positive)),
            kiln.add(kiln.rsqrt(positive), kiln.pow(positive, 1.5)),
          ),
        );
      },
      [{ shape: [7] }],
    );
    await checkGradients(([a, b]) => kiln.maximum(a, b), [{ shape: [5] }, { shape: [5] }], 5);
  });

  it('matmul with transpose flags and a broadcast batch', async () => {
    await checkGradients(([a, b]) => kiln.matmul(a, b), [{ shape: [2, 3, 4] }, { shape: [4, 5] }]);
    await checkGradients(
      ([a, b]) => kiln.matmul(a, b, { transposeA: true, transposeB: true }),
      [{ shape: [4, 3] }, { shape: [2, 5, 4] }],
    );
  });

  it('reductions and shape ops', async () => {
    await checkGradients(([a]) => kiln.mean(kiln.permute(a, [2, 0, 1]), [0, 2], true), [{ shape: [2, 3, 4] }]);
    await checkGradients(
      ([a, b]) => kiln.concat([kiln.slice(a, [0, 1], [2, 2]), b], 1),
      [{ shape: [2, 4] }, { shape: [2, 3] }],
    );
    await checkGradients(([a]) => kiln.max(a, 1), [{ shape: [3, 4] }]);
  });

  it('softmax and logSoftmax along any axis', async () => {
    await checkGradients(([a]) => kiln.softmax(a), [{ shape: [3, 5] }]);
    await checkGradients(([a]) => kiln.logSoftmax(a, 0), [{ shape: [4, 3] }]);
  });

  it('rmsNorm and layerNorm', async () => {
    await checkGradients(([x, w]) => kiln.rmsNorm(x, w), [{ shape: [3, 6] }, { shape: [6] }]);
    await checkGradients(([x, w, b]) => kiln.layerNorm(x, w, b), [{ shape: [3, 5] }, { shape: [5] }, { shape: [5] }]);
  });

  it('rope and swiglu', async () => {
    await checkGradients(([x]) => kiln.rope(x, { offset: 3 }), [{ shape: [1, 2, 3, 4] }]);
    await checkGradients(([g, u]) => kiln.swiglu(g, u), [{ shape: [2, 5] }, { shape: [2, 5] }]);
  });

  it('attention: causal, grouped-query, Tq ≠ Tk, with a mask', async () => {
    await checkGradients(
      ([q, k, v]) => kiln.attention(q, k, v, { causal: true }),
      [{ shape: [1, 2, 3, 4] }, { shape: [1, 1, 3, 4] }, { shape: [1, 1, 3, 4] }],
    );
    await checkGradients(
      ([q, k, v]) => kiln.attention(q, k, v, { causal: true }),
      [{ shape: [1, 2, 2, 4] }, { shape: [1, 2, 4, 4] }, { shape: [1, 2, 4, 4] }],
    );
    await checkGradients(
      ([q, k, v, m]) => kiln.attention(q, k, v, { mask: m }),
      [{ shape: [1, 1, 2, 3] }, { shape: [1, 1, 3, 3] }, { shape: [1, 1, 3, 3] }, { shape: [2, 3], constant: true }],
    );
  });

  it('crossEntropy with ignored rows, and embedding', async () => {
    await checkGradients(
      ([logits, targets]) => kiln.crossEntropy(logits, targets),
      [{ shape: [4, 5] }, { shape: [4], integers: [1, -100, 4, 0] }],
    );
    await checkGradients(
      ([table, ids]) => kiln.embedding(table, ids),
      [{ shape: [4, 3] }, { shape: [5], integers: [3, 0, 3, 1, 2] }],
    );
  });
});

describe('autograd: API behaviour', () => {
  it('accumulates into existing gradients across backward calls', () => {
    const w = kiln.tensor([1, 2, 3]).requireGrad();
    for (const factor of [2, 3]) {
      using loss = kiln.tidy(() => kiln.sum(kiln.mul(w, factor)));
      kiln.backward(loss);
    }
    expect(Array.from(w.grad!.dataSync())).toEqual([5, 5, 5]);
    w.grad!.dispose();
    w.dispose();
  });

  it('valueAndGrad and grad return values and gradients; noGrad records nothing', () => {
    const x = kiln.tensor([1, 2]);
    const { value, grads } = kiln.valueAndGrad((input) => kiln.sum(kiln.square(input)))(x);
    expect(value.dataSync()[0]).toBe(5);
    expect(Array.from(grads[0].dataSync())).toEqual([2, 4]);
    const [only] = kiln.grad((input) => kiln.sum(kiln.mul(input, input)))(x);
    expect(Array.from(only.dataSync())).toEqual([2, 4]);
    const w = kiln.tensor([1]).requireGrad();
    const detached = kiln.noGrad(() => kiln.mul(w, 2));
    expect(detached.requiresGrad).toBe(false);
    expect(() => kiln.backward(detached)).toThrow(/does not depend on any tensor that requires a gradient/);
    for (const t of [x, value, grads[0], only, w, detached]) t.dispose();
  });

  it('frees the whole graph after backward, and when an unused result is disposed', () => {
    const w = kiln.tensor([1, 2, 3, 4], [2, 2]).requireGrad();
    const start = backend().memory().bufferCount;
    const loss = kiln.tidy(() => kiln.sum(kiln.softmax(kiln.matmul(w, w))));
    expect(backend().memory().bufferCount).toBeGreaterThan(start + 1); // saved tensors alive
    kiln.backward(loss);
    loss.dispose();
    expect(backend().memory().bufferCount).toBe(start + 1); // only w.grad
    w.grad!.dispose();
    w.grad = null;
    const unused = kiln.tidy(() => kiln.sum(kiln.exp(kiln.matmul(w, w))));
    unused.dispose();
    expect(backend().memory().bufferCount).toBe(start);
    w.dispose();
  });
});

describe('activation checkpointing', () => {
  it('gives the same gradients as the plain graph, for inputs and captured parameters', () => {
    const weight = kiln.tensor([0.5, -1, 2, 0.25], [2, 2]).requireGrad();
    const block = (x: Tensor): Tensor => kiln.tanh(kiln.matmul(x, weight));
    const run = (useCheckpoint: boolean): number[][] => {
      const x = kiln.tensor([1, 2, 3, 4], [2, 2]).requireGrad();
      const loss = kiln.tidy(() => kiln.sum(kiln.square(useCheckpoint ? kiln.checkpoint(block, [x]) : block(x))));
      kiln.backward(loss);
      const result = [Array.from(x.grad!.dataSync()), Array.from(weight.grad!.dataSync())];
      for (const t of [loss, x, x.grad!, weight.grad!]) t.dispose();
      weight.grad = null;
      return result;
    };
    const plain = run(false);
    const checkpointed = run(true);
    expect(checkpointed[0]).toEqual(plain[0]);
    expect(checkpointed[1]).toEqual(plain[1]);
    weight.dispose();
  });
});

describe('autograd under failure', () => {
  it('frees every gradient when a backward step runs out of memory', async () => {
    const { createReferenceBackend } = await import('../src/reference-backend.js');
    const { OutOfMemoryError } = await import('@kiln/core');
    const limited = createReferenceBackend({ memoryLimitBytes: 4096 });
    const w = kiln.tensor(new Float32Array(64).fill(0.5), [8, 8], { backend: limited }).requireGrad();
    const loss = kiln.tidy(() => kiln.sum(kiln.matmul(w, w)));
    // Fill the device so backward cannot allocate its gradients.
    const filler: Tensor[] = [];
    try {
      for (;;) filler.push(kiln.zeros([64], { backend: limited }));
    } catch (error) {
      expect(error).toBeInstanceOf(OutOfMemoryError);
    }
    // Room for the seed gradient, not for the [8, 8] gradients after it: backward fails mid-graph.
    filler.pop()!.dispose();
    expect(() => kiln.backward(loss)).toThrow(OutOfMemoryError);
    for (const tensor of [...filler, loss, w]) tensor.dispose();
    w.grad?.dispose();
    expect(limited.memory().bufferCount).toBe(0);
  });
});
