/** Shared fixtures of the model and generation tests: tiny configs and host-side helpers. */
import { tensor, type KernelBackend, type Tensor } from '@kiln/core';
import type { ModelConfig } from '../src/contracts.js';

/** A tiny grouped-query model (4 query heads sharing 2 kv heads), untied head. */
export const GQA_CONFIG: ModelConfig = {
  vocabSize: 48,
  contextLength: 16,
  dModel: 32,
  nLayer: 2,
  nHead: 4,
  nKvHead: 2,
  mlpHidden: 96,
  tieEmbeddings: false,
  ropeTheta: 10000,
  normEps: 1e-5,
};

/** A tiny multi-head model with the LM head tied to the embedding. */
export const TIED_CONFIG: ModelConfig = { ...GQA_CONFIG, nKvHead: 4, tieEmbeddings: true, nLayer: 1 };

/** Deterministic pseudo-random token ids [batch, time] below `vocab`. */
export function tokenIds(batch: number, time: number, vocab: number, backend: KernelBackend, salt = 1): Tensor {
  const values = Int32Array.from(
    { length: batch * time },
    (_, index) => (index * 7 + salt * 13 + ((index * index) % 5)) % vocab,
  );
  return tensor(values, [batch, time], { dtype: 'i32', backend });
}

/** Largest |a − b| over two equally long arrays. */
export function maxAbsDifference(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`length ${a.length} vs ${b.length}`);
  let worst = 0;
  for (let index = 0; index < a.length; index++) worst = Math.max(worst, Math.abs(a[index] - b[index]));
  return worst;
}

/** Largest |x|. */
export function maxAbs(values: ArrayLike<number>): number {
  let worst = 0;
  for (let index = 0; index < values.length; index++) worst = Math.max(worst, Math.abs(values[index]));
  return worst;
}
