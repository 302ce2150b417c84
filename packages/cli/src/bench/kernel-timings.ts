/**
 * Per-kernel timings at a model's shapes (N = batch · context tokens): the matmuls of the
 * projections, MLP and LM head, attention forward + backward, rmsNorm, softmax over attention
 * rows, and cross-entropy over the logits. Each through core's public ops, as the trainer calls
 * them, on random inputs; median of repeated runs.
 */
import {
  attention,
  backward,
  crossEntropy,
  matmul,
  ones,
  randomNormal,
  randomUniform,
  cast,
  rmsNorm,
  softmax,
  tidy,
  type KernelBackend,
  type Tensor,
} from '@kiln/core';
import type { ModelConfig } from '@kiln/trainer';
import { timeRepeated } from './timing.js';

/** One kernel timing. */
export interface KernelTiming {
  /** What ran. */
  kernel: string;
  /** Shapes, as text. */
  shape: string;
  /** Median milliseconds. */
  ms: number;
  /** Achieved GFLOP/s for matmuls and attention, else null. */
  gflops: number | null;
}

const REPEAT = { warmup: 2, minimumRuns: 5, minimumMilliseconds: 200, maximumRuns: 50 };

/** Times the model's kernels on `backend` for `batchSize` sequences. */
export async function measureKernels(
  backend: KernelBackend,
  model: ModelConfig,
  batchSize: number,
): Promise<KernelTiming[]> {
  const {
    dModel: d,
    mlpHidden: hidden,
    vocabSize: vocab,
    contextLength: context,
    nHead: heads,
    nKvHead: kvHeads,
  } = model;
  const tokens = batchSize * context;
  const headDim = d / heads;
  const timings: KernelTiming[] = [];
  let seed = 1;
  const random = (shape: number[]): Tensor => randomNormal(shape, { seed: seed++, std: 1, backend });
  const time = async (kernel: string, shape: string, flops: number | null, run: () => void): Promise<void> => {
    const ms = await timeRepeated(backend, run, REPEAT);
    timings.push({ kernel, shape, ms, gflops: flops === null ? null : flops / (ms * 1e6) });
  };

  const matmuls: Array<[string, number, number]> = [
    ['matmul q/o_proj', d, d],
    ['matmul mlp gate/up', d, hidden],
    ['matmul mlp down', hidden, d],
    ['matmul lm_head', d, vocab],
  ];
  for (const [name, inner, outer] of matmuls) {
    const x = random([tokens, inner]);
    const weight = random([outer, inner]);
    await time(name, `${tokens}×${inner} · ${inner}×${outer}`, 2 * tokens * inner * outer, () =>
      matmul(x, weight, { transposeB: true }).dispose(),
    );
    x.dispose();
    weight.dispose();
  }

  const q = random([batchSize, heads, context, headDim]).requireGrad();
  const k = random([batchSize, kvHeads, context, headDim]).requireGrad();
  const v = random([batchSize, kvHeads, context, headDim]).requireGrad();
  // Causal: about half of the 4·B·H·T²·D forward flops, and 2.5× that for the backward.
  const attentionFlops = 3.5 * 2 * batchSize * heads * context * context * headDim;
  await time(
    'attention fwd+bwd (causal)',
    `B${batchSize} H${heads}/${kvHeads} T${context} D${headDim}`,
    attentionFlops,
    () => {
      tidy(() => {
        const out = attention(q, k, v, { causal: true });
        backward(out, ones(out.shape, { backend }));
      });
      for (const tensor of [q, k, v]) {
        tensor.grad?.dispose();
        tensor.grad = null;
      }
    },
  );
  for (const tensor of [q, k, v]) tensor.dispose();

  const x = random([tokens, d]);
  const weight = ones([d], { backend });
  await time('rmsNorm', `${tokens}×${d}`, null, () => rmsNorm(x, weight, model.normEps).dispose());
  x.dispose();
  weight.dispose();

  const scores = random([batchSize * heads * context, context]);
  await time('softmax (attention rows)', `${batchSize * heads * context}×${context}`, null, () =>
    softmax(scores).dispose(),
  );
  scores.dispose();

  const logits = random([tokens, vocab]);
  const targets = tidy(() => cast(randomUniform([tokens], { seed: seed++, low: 0, high: vocab, backend }), 'i32'));
  await time('crossEntropy', `${tokens}×${vocab}`, null, () => crossEntropy(logits, targets).dispose());
  logits.dispose();
  targets.dispose();
  return timings;
}
