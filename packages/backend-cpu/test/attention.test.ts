// Flash attention against softmax(QKᵀ)V written naively in float64 here, and its backward
// against central finite differences of that naive forward.
import { describe, expect, it } from 'vitest';
import { KEY_BLOCK, QUERY_BLOCK } from '../src/kernels/attention-common.js';
import { createCpuBackend } from '../src/index.js';
import { empty, expectClose, randomValues, read, seededRandom, tensor, view } from './helpers.js';

interface Case {
  batch: number;
  queryHeads: number;
  keyHeads: number;
  queryLength: number;
  keyLength: number;
  depth: number;
  causal: boolean;
  /** Mask broadcast over batch and heads: [Tq, Tk] values, or none. */
  masked: boolean;
}

interface Inputs {
  q: Float64Array;
  k: Float64Array;
  v: Float64Array;
  mask: Float64Array | null;
}

function makeInputs(spec: Case, seed: number): Inputs {
  const random = seededRandom(seed);
  const { batch, queryHeads, keyHeads, queryLength, keyLength, depth } = spec;
  const f32 = (values: Float64Array) => Float64Array.from(values, Math.fround);
  const mask = spec.masked
    ? Float64Array.from({ length: queryLength * keyLength }, () =>
        random() < 0.2 ? -Infinity : Math.fround(random() - 0.5),
      )
    : null;
  return {
    q: f32(randomValues(random, batch * queryHeads * queryLength * depth)),
    k: f32(randomValues(random, batch * keyHeads * keyLength * depth)),
    v: f32(randomValues(random, batch * keyHeads * keyLength * depth)),
    mask,
  };
}

/** Naive attention in float64: full score rows, softmax over allowed keys. */
function naiveAttention(spec: Case, inputs: Inputs, scale: number): { out: Float64Array; lse: Float64Array } {
  const { batch, queryHeads, keyHeads, queryLength, keyLength, depth, causal } = spec;
  const out = new Float64Array(batch * queryHeads * queryLength * depth);
  const lse = new Float64Array(batch * queryHeads * queryLength);
  for (let b = 0; b < batch; b++) {
    for (let h = 0; h < queryHeads; h++) {
      const kvHead = Math.floor(h / (queryHeads / keyHeads));
      for (let i = 0; i < queryLength; i++) {
        const scores: number[] = [];
        const keys: number[] = [];
        for (let j = 0; j < keyLength; j++) {
          if (causal && j > i + keyLength - queryLength) continue;
          let dot = 0;
          for (let d = 0; d < depth; d++) {
            dot +=
              inputs.q[((b * queryHeads + h) * queryLength + i) * depth + d] *
              inputs.k[((b * keyHeads + kvHead) * keyLength + j) * depth + d];
          }
          scores.push(dot * scale + (inputs.mask ? inputs.mask[i * keyLength + j] : 0));
          keys.push(j);
        }
        const max = Math.max(...scores);
        const row = (b * queryHeads + h) * queryLength + i;
        if (scores.length === 0 || max === -Infinity) {
          lse[row] = -Infinity;
          continue;
        }
        const weights = scores.map((score) => Math.exp(score - max));
        const total = weights.reduce((sum, weight) => sum + weight, 0);
        lse[row] = max + Math.log(total);
        for (let d = 0; d < depth; d++) {
          let sum = 0;
          keys.forEach((j, index) => {
            sum += weights[index] * inputs.v[((b * keyHeads + kvHead) * keyLength + j) * depth + d];
          });
          out[row * depth + d] = sum / total;
        }
      }
    }
  }
  return { out, lse };
}

function run(spec: Case, inputs: Inputs, scale: number, dOut: Float64Array | null) {
  const backend = createCpuBackend();
  const { batch, queryHeads, keyHeads, queryLength, keyLength, depth } = spec;
  const q = tensor(backend, inputs.q, [batch, queryHeads, queryLength, depth]);
  const k = tensor(backend, inputs.k, [batch, keyHeads, keyLength, depth]);
  const v = tensor(backend, inputs.v, [batch, keyHeads, keyLength, depth]);
  const mask = inputs.mask
    ? view(
        tensor(backend, inputs.mask, [queryLength, keyLength]),
        [batch, queryHeads, queryLength, keyLength],
        [0, 0, keyLength, 1],
      )
    : null;
  const out = empty(backend, q.shape.slice());
  const lse = empty(backend, [batch, queryHeads, queryLength]);
  const params = { scale, causal: spec.causal };
  backend.attention(q, k, v, mask, out, lse, params);
  const result = {
    out: read(backend, out),
    lse: read(backend, lse),
    dq: new Float64Array(0),
    dk: new Float64Array(0),
    dv: new Float64Array(0),
  };
  if (dOut) {
    const dq = empty(backend, q.shape.slice());
    const dk = empty(backend, k.shape.slice());
    const dv = empty(backend, v.shape.slice());
    backend.attentionBackward(q, k, v, mask, out, lse, tensor(backend, dOut, q.shape.slice()), dq, dk, dv, params);
    Object.assign(result, { dq: read(backend, dq), dk: read(backend, dk), dv: read(backend, dv) });
  }
  return result;
}

const CASES: [string, Case][] = [
  [
    'single block, causal, GQA 2:1, Tq < Tk',
    { batch: 1, queryHeads: 2, keyHeads: 1, queryLength: 5, keyLength: 9, depth: 7, causal: true, masked: false },
  ],
  [
    'several blocks each way, causal, GQA 4:2',
    {
      batch: 2,
      queryHeads: 4,
      keyHeads: 2,
      queryLength: QUERY_BLOCK * 2 + 7,
      keyLength: KEY_BLOCK + 7 + 10,
      depth: 16,
      causal: true,
      masked: false,
    },
  ],
  [
    'non-causal with a broadcast mask, Tk spans 3 key blocks',
    {
      batch: 1,
      queryHeads: 2,
      keyHeads: 2,
      queryLength: 33,
      keyLength: KEY_BLOCK * 2 + 5,
      depth: 5,
      causal: false,
      masked: true,
    },
  ],
  [
    'causal with Tq > Tk: early rows see no key',
    { batch: 1, queryHeads: 1, keyHeads: 1, queryLength: 9, keyLength: 4, depth: 3, causal: true, masked: false },
  ],
  [
    'causal and masked, D = 1, Tq spans 2 query blocks',
    {
      batch: 2,
      queryHeads: 3,
      keyHeads: 1,
      queryLength: QUERY_BLOCK + 2,
      keyLength: 67,
      depth: 1,
      causal: true,
      masked: true,
    },
  ],
];

describe('attention forward (tiled online softmax)', () => {
  CASES.forEach(([name, spec], index) => {
    it(name, () => {
      const inputs = makeInputs(spec, 100 + index);
      const scale = 1 / Math.sqrt(spec.depth);
      const expected = naiveAttention(spec, inputs, scale);
      const got = run(spec, inputs, scale, null);
      expectClose(got.out, expected.out, 1e-6, 1e-5, 'out');
      expectClose(got.lse, expected.lse, 1e-6, 1e-5, 'lse');
    });
  });

  it('gives out = 0 and lse = −Inf for rows without an allowed key', () => {
    const spec = CASES[3][1];
    const got = run(spec, makeInputs(spec, 7), 0.5, null);
    // Row i sees keys j ≤ i − 5: rows 0…4 see nothing.
    expect(Array.from(got.lse.slice(0, 5))).toEqual([-Infinity, -Infinity, -Infinity, -Infinity, -Infinity]);
    expect(Array.from(got.out.slice(0, 15)).every((value) => value === 0)).toBe(true);
    expect(Number.isFinite(got.lse[5])).toBe(true);
  });
});

describe('attention backward (recomputed from lse)', () => {
  const small: [string, Case][] = [
    [
      'causal GQA with a mask, Tq < Tk',
      { batch: 1, queryHeads: 2, keyHeads: 1, queryLength: 4, keyLength: 6, depth: 3, causal: true, masked: true },
    ],
    [
      'causal, crossing query and key blocks',
      {
        batch: 1,
        queryHeads: 1,
        keyHeads: 1,
        queryLength: QUERY_BLOCK + 2,
        keyLength: KEY_BLOCK + 4,
        depth: 2,
        causal: true,
        masked: false,
      },
    ],
    [
      'causal with Tq > Tk (rows without keys)',
      { batch: 2, queryHeads: 1, keyHeads: 1, queryLength: 6, keyLength: 3, depth: 2, causal: true, masked: false },
    ],
  ];
  small.forEach(([name, spec], index) => {
    it(`matches finite differences: ${name}`, () => {
      const inputs = makeInputs(spec, 200 + index);
      // Masks with −Inf entries are fine: those keys have P = 0 on both sides.
      const scale = 0.7;
      const weights = randomValues(seededRandom(300 + index), inputs.q.length);
      const loss = (candidate: Inputs) =>
        naiveAttention(spec, candidate, scale).out.reduce((sum, value, i) => sum + value * weights[i], 0);
      const got = run(spec, inputs, scale, weights);
      const step = 1e-6;
      for (const name of ['q', 'k', 'v'] as const) {
        const values = inputs[name];
        const numeric = new Float64Array(values.length);
        for (let i = 0; i < values.length; i++) {
          const original = values[i];
          values[i] = original + step;
          const plus = loss(inputs);
          values[i] = original - step;
          const minus = loss(inputs);
          values[i] = original;
          numeric[i] = (plus - minus) / (2 * step);
        }
        const analytic = name === 'q' ? got.dq : name === 'k' ? got.dk : got.dv;
        expectClose(analytic, numeric, 2e-5, 1e-4, `d${name}`);
      }
    });
  });
});
