/**
 * A damaged model is named, not run silently: an extreme weight (a flipped exponent bit,
 * lm_head[101, 5] → −1.2e37) is warned about at load, a non-finite evaluation loss and a
 * non-finite logit while generating are NonFiniteErrors naming the weight to blame.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NonFiniteError, tensor, type Tensor } from '@kiln/core';
import { createCpuBackend } from '@kiln/backend-cpu';
import { loadCheckpointModel } from '../src/checkpoint/index.js';
import {
  assertFiniteEvaluationLoss,
  createLlamaModel,
  extremeWeightsWarning,
  generate,
  LlamaModel,
  saveModelDirectory,
} from '../src/model/index.js';
import type { ModelConfig } from '../src/contracts.js';
import { GQA_CONFIG } from './model-helpers.js';

const backend = createCpuBackend();
const config: ModelConfig = { ...GQA_CONFIG, vocabSize: 256 };

/** A model whose lm_head.weight[row, column] is `value`. */
function withWeight(row: number, column: number, value: number): LlamaModel {
  const original = createLlamaModel(config, { backend, seed: 3 });
  const parameters = new Map<string, Tensor>();
  for (const [name, parameter] of original.parameters) {
    const values = Float32Array.from(parameter.dataSync() as Float32Array);
    if (name === 'lm_head.weight') values[row * config.dModel + column] = value;
    parameters.set(name, tensor(values, parameter.shape, { backend }).requireGrad());
  }
  original.dispose();
  return new LlamaModel(config, parameters);
}

describe('weights beyond ±1e4', () => {
  let directory: string;
  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'kiln-weights-'));
  });
  afterAll(async () => rm(directory, { recursive: true, force: true }));

  it('are named with their position at load, for a model directory without state.json', async () => {
    const damaged = withWeight(101, 5, -1.2e37);
    await saveModelDirectory(directory, damaged);
    damaged.dispose();
    const notes: string[] = [];
    const loaded = await loadCheckpointModel(directory, { backend, onNotice: (message) => notes.push(message) });
    loaded.dispose();
    expect(notes).toHaveLength(1);
    expect(notes[0]).toBe(
      `${directory} holds extreme weights: lm_head.weight[101, 5] = -1.20e+37 (1 value beyond ±10000). ` +
        'Trained weights stay far smaller: the file is probably damaged (a flipped bit) or the run that wrote it diverged, and results will be wrong.',
    );
  });

  it('are found on a backend that reads device memory asynchronously only (a GPU)', async () => {
    const cpu = createCpuBackend();
    const asyncOnly = Object.create(cpu) as typeof cpu;
    asyncOnly.download = (buffer) => cpu.download(buffer);
    (asyncOnly as { downloadSync?: unknown }).downloadSync = undefined;
    const notes: string[] = [];
    const loaded = await loadCheckpointModel(directory, {
      backend: asyncOnly,
      onNotice: (message) => notes.push(message),
    });
    loaded.dispose();
    expect(notes[0]).toMatch(/holds extreme weights: lm_head\.weight\[101, 5\] = -1\.20e\+37/);
  });

  it('are not reported for a healthy model', async () => {
    const healthy = createLlamaModel(config, { backend, seed: 3 });
    expect(await extremeWeightsWarning(healthy.parameters, 'x')).toBeUndefined();
    healthy.dispose();
  });
});

describe('non-finite results', () => {
  it('an evaluation loss of inf names the extreme weight', async () => {
    const damaged = withWeight(101, 5, -1.2e37);
    await expect(
      assertFiniteEvaluationLoss(Number.POSITIVE_INFINITY, damaged.parameters, 'run/step-1'),
    ).rejects.toThrow(
      'The evaluation loss of run/step-1 is Infinity: no weight is NaN or infinite, but lm_head.weight[101, 5] = -1.20e+37 is extreme (|w| > 10000) and overflows the activations',
    );
    await expect(assertFiniteEvaluationLoss(5.5, damaged.parameters, 'run/step-1')).resolves.toBeUndefined();
    damaged.dispose();
  });

  it('a NaN logit stops generation with a NonFiniteError naming the first non-finite weight', async () => {
    const damaged = withWeight(7, 0, Number.NaN);
    const error = await generate(damaged, [1, 2, 3], { maxTokens: 4, temperature: 0, seed: 0 }).catch(
      (caught: unknown) => caught,
    );
    damaged.dispose();
    expect(error).toBeInstanceOf(NonFiniteError);
    expect((error as NonFiniteError).code).toBe('NON_FINITE');
    expect((error as Error).message).toMatch(
      /^generate: the logits of new token 1 hold 1 non-finite value of 256 \(token id 7: NaN\): the first non-finite weight is lm_head\.weight\[7, 0\] = NaN/,
    );
  });
});
