// core's attention op with layout 'tokens-major' ([B, T, H, D]) must give exactly the heads-major
// result (and gradients) permuted, on all three paths the op can take: the backend's kernels read
// the layout (the reference lists it), the backend reads only heads-major (core permutes), and
// the backend has no attention kernel (core permutes and composes). Only the first runs without
// core's permute copies.
import { afterEach, describe, expect, it } from 'vitest';
import * as kiln from '@kiln/core';
import type { KernelBackend, StridedView, Tensor } from '@kiln/core';
import { createReferenceBackend } from '../src/reference-backend.js';

/** A reference backend whose attention reads both layouts, heads-major only, or that has no attention kernel. */
function backendFor(path: 'kernel reads tokens-major' | 'core permutes' | 'composition'): {
  backend: KernelBackend;
  copies: () => number;
} {
  const base = createReferenceBackend(path === 'composition' ? { fused: false } : {});
  let copies = 0;
  const backend: KernelBackend = {
    ...base,
    capabilities:
      path === 'core permutes' ? { ...base.capabilities, attentionLayouts: ['heads-major'] } : base.capabilities,
    copy(src: StridedView, dst: StridedView) {
      // Head/token permutes: 4-D copies without broadcast (sum's backward expands its gradient with stride 0).
      if (src.shape.length === 4 && src.strides.every((stride) => stride !== 0)) copies++;
      base.copy(src, dst);
    },
  };
  return { backend, copies: () => copies };
}

const SWAP = [0, 2, 1, 3];
const [BATCH, LENGTH_Q, LENGTH_K, HEADS_Q, HEADS_KV, DIM] = [2, 5, 7, 4, 2, 8];

function uniform(count: number, seed: number): Float32Array {
  let state = seed;
  return Float32Array.from({ length: count }, () => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return (state / 2 ** 31) * 2 - 1;
  });
}

/** Output and input gradients of sum(attention(q, k, v) · weights) for tokens-major host values, run in `layout`. */
async function run(layout: 'heads-major' | 'tokens-major', mask: boolean): Promise<Float32Array[]> {
  const make = (values: Float32Array, shape: number[]): Tensor => kiln.tensor(values, shape).requireGrad();
  const q = make(uniform(BATCH * LENGTH_Q * HEADS_Q * DIM, 1), [BATCH, LENGTH_Q, HEADS_Q, DIM]);
  const k = make(uniform(BATCH * LENGTH_K * HEADS_KV * DIM, 2), [BATCH, LENGTH_K, HEADS_KV, DIM]);
  const v = make(uniform(BATCH * LENGTH_K * HEADS_KV * DIM, 3), [BATCH, LENGTH_K, HEADS_KV, DIM]);
  const weights = kiln.tensor(uniform(BATCH * LENGTH_Q * HEADS_Q * DIM, 4), [BATCH, LENGTH_Q, HEADS_Q, DIM]);
  const additive = mask
    ? kiln.tensor(
        uniform(LENGTH_Q * LENGTH_K, 5).map((value, index) =>
          index % LENGTH_K === 0 ? 0 : value < -0.5 ? -Infinity : value,
        ),
        [LENGTH_Q, LENGTH_K],
      )
    : undefined;
  const options = { causal: !mask, scale: 0.3, ...(additive ? { mask: additive } : {}) };
  const out = kiln.tidy(() =>
    layout === 'tokens-major'
      ? kiln.attention(q, k, v, { ...options, layout })
      : kiln.permute(
          kiln.attention(kiln.permute(q, SWAP), kiln.permute(k, SWAP), kiln.permute(v, SWAP), options),
          SWAP,
        ),
  );
  const loss = kiln.tidy(() => kiln.sum(kiln.mul(out, weights)));
  kiln.backward(loss);
  const results = [out, q.grad!, k.grad!, v.grad!].map((tensor) => tensor.dataSync() as Float32Array);
  for (const tensor of [q.grad!, k.grad!, v.grad!, q, k, v, weights, out, loss, ...(additive ? [additive] : [])])
    tensor.dispose();
  return results;
}

describe.each(['kernel reads tokens-major', 'core permutes', 'composition'] as const)(
  'attention layout tokens-major (%s)',
  (path) => {
    let backend: KernelBackend;
    afterEach(() => {
      expect(backend.memory().bufferCount, 'leaked buffers').toBe(0);
    });

    it.each([false, true])(
      'equals the heads-major op on permuted inputs bit for bit, gradients included (mask: %s)',
      async (mask) => {
        const setup = backendFor(path);
        backend = setup.backend;
        kiln.setBackend(backend);
        const expected = await run('heads-major', mask);
        const before = setup.copies();
        const got = await run('tokens-major', mask);
        const copies = setup.copies() - before;
        got.forEach((values, index) =>
          expect(Array.from(values), ['out', 'dq', 'dk', 'dv'][index]).toEqual(Array.from(expected[index])),
        );
        // Core's permutes: q, k, v and the result forward, their gradients backward (8); none when the backend or composition reads the layout.
        if (path !== 'kernel reads tokens-major') expect(copies).toBe(8);
        if (path === 'kernel reads tokens-major') expect(copies).toBe(0);
      },
    );
  },
);

describe('attention layout checks', () => {
  it('rejects an unknown layout and names the tokens-major shape in shape errors', () => {
    kiln.setBackend(createReferenceBackend());
    const q = kiln.zeros([1, 3, 3, 2]);
    const k = kiln.zeros([1, 3, 2, 2]);
    expect(() => kiln.attention(q, k, k, { layout: 'rows' as never })).toThrow(/layout/);
    expect(() => kiln.attention(q, k, k, { layout: 'tokens-major' })).toThrow(
      /query heads \(3\) must be a multiple of key\/value heads \(2\).*tokens-major/,
    );
    for (const tensor of [q, k]) tensor.dispose();
  });
});

describe.each(['kernel reads tokens-major', 'core permutes', 'composition'] as const)(
  'rope layout tokens-major (%s)',
  (path) => {
    it('equals the heads-major op on the permuted input bit for bit, gradient included', () => {
      const setup = backendFor(path);
      const base = setup.backend;
      const backend: KernelBackend =
        path === 'core permutes'
          ? { ...base, capabilities: { ...base.capabilities, ropeLayouts: ['heads-major'] } }
          : base;
      kiln.setBackend(backend);
      const run = (layout: 'heads-major' | 'tokens-major'): Float32Array[] => {
        const x = kiln
          .tensor(uniform(BATCH * LENGTH_Q * HEADS_Q * DIM, 6), [BATCH, LENGTH_Q, HEADS_Q, DIM])
          .requireGrad();
        const weights = kiln.tensor(uniform(BATCH * LENGTH_Q * HEADS_Q * DIM, 7), [BATCH, LENGTH_Q, HEADS_Q, DIM]);
        const out = kiln.tidy(() =>
          layout === 'tokens-major'
            ? kiln.rope(x, { offset: 3, theta: 500, layout })
            : kiln.permute(kiln.rope(kiln.permute(x, SWAP), { offset: 3, theta: 500 }), SWAP),
        );
        const loss = kiln.tidy(() => kiln.sum(kiln.mul(out, weights)));
        kiln.backward(loss);
        const results = [out.dataSync() as Float32Array, x.grad!.dataSync() as Float32Array];
        for (const tensor of [x.grad!, x, weights, out, loss]) tensor.dispose();
        return results;
      };
      const expected = run('heads-major');
      const got = run('tokens-major');
      got.forEach((values, index) =>
        expect(Array.from(values), ['out', 'dx'][index]).toEqual(Array.from(expected[index])),
      );
      expect(backend.memory().bufferCount, 'leaked buffers').toBe(0);
    });
  },
);
