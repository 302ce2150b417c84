/**
 * The model against an independent float64 host implementation written from Hugging Face's
 * LlamaForCausalLM definition (view(B, T, H, hd) head split, rotate_half rope with
 * inv_freq = θ^(−2i/hd), repeat_kv grouping, RMSNorm x·rsqrt(mean x² + eps)·w, down(silu(gate)·up)).
 * It pins the layout conventions a checkpoint must share with the ecosystem.
 */
import { noGrad, setBackend, tensor } from '@kiln/core';
import { createCpuBackend } from '@kiln/backend-cpu';
import { beforeAll, describe, expect, it } from 'vitest';
import type { ModelConfig } from '../src/contracts.js';
import { createLlamaModel, LlamaModel } from '../src/model/index.js';
import { GQA_CONFIG, maxAbs, maxAbsDifference, TIED_CONFIG, tokenIds } from './model-helpers.js';

const backend = createCpuBackend();
beforeAll(() => setBackend(backend));

type Rows = Float64Array[];

function linear(x: Rows, weight: Float32Array, outFeatures: number): Rows {
  return x.map((row) => {
    const out = new Float64Array(outFeatures);
    for (let o = 0; o < outFeatures; o++) {
      let total = 0;
      for (let i = 0; i < row.length; i++) total += row[i] * weight[o * row.length + i];
      out[o] = total;
    }
    return out;
  });
}

function rmsNorm(x: Rows, weight: Float32Array, eps: number): Rows {
  return x.map((row) => {
    const scale = 1 / Math.sqrt(row.reduce((sum, value) => sum + value * value, 0) / row.length + eps);
    return row.map((value, index) => value * scale * weight[index]);
  });
}

function rotate(x: Rows, heads: number, width: number, theta: number): Rows {
  return x.map((row, position) => {
    const out = new Float64Array(row.length);
    for (let head = 0; head < heads; head++) {
      const base = head * width;
      for (let i = 0; i < width / 2; i++) {
        const angle = position * theta ** ((-2 * i) / width);
        const [first, second] = [row[base + i], row[base + i + width / 2]];
        out[base + i] = first * Math.cos(angle) - second * Math.sin(angle);
        out[base + i + width / 2] = second * Math.cos(angle) + first * Math.sin(angle);
      }
    }
    return out;
  });
}

function hfForward(config: ModelConfig, weights: Map<string, Float32Array>, ids: number[]): Float64Array {
  const { dModel, nHead, nKvHead, mlpHidden, vocabSize, normEps, ropeTheta } = config;
  const width = dModel / nHead;
  const group = nHead / nKvHead;
  const w = (name: string): Float32Array => weights.get(name)!;
  let x: Rows = ids.map((id) =>
    Float64Array.from(w('model.embed_tokens.weight').subarray(id * dModel, (id + 1) * dModel)),
  );
  for (let layer = 0; layer < config.nLayer; layer++) {
    const p = `model.layers.${layer}`;
    const h = rmsNorm(x, w(`${p}.input_layernorm.weight`), normEps);
    const q = rotate(linear(h, w(`${p}.self_attn.q_proj.weight`), nHead * width), nHead, width, ropeTheta);
    const k = rotate(linear(h, w(`${p}.self_attn.k_proj.weight`), nKvHead * width), nKvHead, width, ropeTheta);
    const v = linear(h, w(`${p}.self_attn.v_proj.weight`), nKvHead * width);
    const attended: Rows = q.map((queryRow, t) => {
      const out = new Float64Array(nHead * width);
      for (let head = 0; head < nHead; head++) {
        const kvBase = Math.floor(head / group) * width;
        const scores = Array.from({ length: t + 1 }, (_, j) => {
          let dot = 0;
          for (let i = 0; i < width; i++) dot += queryRow[head * width + i] * k[j][kvBase + i];
          return dot / Math.sqrt(width);
        });
        const top = Math.max(...scores);
        const exps = scores.map((score) => Math.exp(score - top));
        const total = exps.reduce((sum, value) => sum + value, 0);
        exps.forEach((weight, j) => {
          for (let i = 0; i < width; i++) out[head * width + i] += (weight / total) * v[j][kvBase + i];
        });
      }
      return out;
    });
    const o = linear(attended, w(`${p}.self_attn.o_proj.weight`), dModel);
    x = x.map((row, t) => row.map((value, i) => value + o[t][i]));
    const h2 = rmsNorm(x, w(`${p}.post_attention_layernorm.weight`), normEps);
    const gate = linear(h2, w(`${p}.mlp.gate_proj.weight`), mlpHidden);
    const up = linear(h2, w(`${p}.mlp.up_proj.weight`), mlpHidden);
    const activated = gate.map((row, t) => row.map((g, i) => (g / (1 + Math.exp(-g))) * up[t][i]));
    const down = linear(activated, w(`${p}.mlp.down_proj.weight`), dModel);
    x = x.map((row, t) => row.map((value, i) => value + down[t][i]));
  }
  const head = config.tieEmbeddings ? w('model.embed_tokens.weight') : w('lm_head.weight');
  const logits = linear(rmsNorm(x, w('model.norm.weight'), normEps), head, vocabSize);
  return Float64Array.from(logits.flatMap((row) => Array.from(row)));
}

describe('Hugging Face semantics', () => {
  for (const [label, config] of [
    ['GQA, untied', GQA_CONFIG],
    ['MHA, tied', TIED_CONFIG],
  ] as const) {
    it(`logits equal an independent float64 LlamaForCausalLM forward (${label})`, async () => {
      // Larger init so attention and rope matter visibly in the logits.
      using model = createLlamaModel({ ...config, ropeTheta: 500 }, { backend, seed: 31 });
      const weights = new Map<string, Float32Array>();
      for (const [name, parameter] of model.parameters) {
        const values = (await parameter.data()) as Float32Array;
        weights.set(
          name,
          name.includes('layernorm') || name.endsWith('norm.weight') ? values : values.map((value) => value * 25),
        );
      }
      const scaled = new Map(
        [...weights].map(([name, values]) => [name, tensor(values, model.parameters.get(name)!.shape, { backend })]),
      );
      using scaledModel = new LlamaModel(model.config, scaled);
      const ids = tokenIds(1, 10, config.vocabSize, backend, 3);
      const expected = hfForward(model.config, weights, Array.from(await ids.data()));
      for (const attention of ['flash', 'naive'] as const) {
        const logits = noGrad(() =>
          scaledModel.forward(ids, { attention, checkpointActivations: false, computeDType: 'f32' }),
        );
        const actual = await logits.data();
        expect(maxAbs(expected)).toBeGreaterThan(1);
        expect(maxAbsDifference(actual, expected) / maxAbs(expected), attention).toBeLessThan(2e-5);
        logits.dispose();
      }
      ids.dispose();
    });
  }
});
