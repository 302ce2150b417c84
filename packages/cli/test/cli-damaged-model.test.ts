/**
 * A model directory without state.json whose weights were damaged (one value of lm_head set to
 * NaN, or to −1.2e37 as a flipped exponent bit does): `kiln eval` fails (exit 1) naming the
 * weight instead of reporting a loss of NaN, `kiln generate` warns about the extreme weight at
 * load; and a prompt longer than the context is said to be cut.
 */
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, afterAll, describe, expect, it } from 'vitest';
import { parseSafetensors, serializeSafetensors } from '@kiln/core';
import {
  removeTemporaryDirectories,
  requireBuild,
  runKiln,
  temporaryDirectory,
  writeTinyConfig,
  writeTrainingText,
} from './kiln-process.js';

let directory: string;
let dataPath: string;
let checkpoint: string;

beforeAll(async () => {
  requireBuild();
  directory = temporaryDirectory('damaged');
  dataPath = writeTrainingText(directory);
  const config = writeTinyConfig(directory, { dataPath, outputDir: join(directory, 'run'), steps: 2, interval: 0 });
  const run = await runKiln(['train', '--config', config, '--json']);
  expect(run.code, run.stderr).toBe(0);
  checkpoint = (JSON.parse(run.stdout.trim().split('\n').at(-1) as string) as { checkpointPath: string })
    .checkpointPath;
}, 120_000);
afterAll(removeTemporaryDirectories);

/** A model directory (config.json + model.safetensors, no state.json) with lm_head.weight[row, column] = value. */
function damagedModel(name: string, row: number, column: number, value: number): string {
  const target = join(directory, name);
  mkdirSync(target);
  copyFileSync(join(checkpoint, 'config.json'), join(target, 'config.json'));
  const { tensors, metadata } = parseSafetensors(readFileSync(join(checkpoint, 'model.safetensors')));
  const head = tensors.get('lm_head.weight')!;
  const values = new Float32Array(Uint8Array.from(head.data).buffer);
  values[row * head.shape[1] + column] = value;
  tensors.set('lm_head.weight', { ...head, data: new Uint8Array(values.buffer) });
  writeFileSync(join(target, 'model.safetensors'), serializeSafetensors(tensors, metadata));
  return target;
}

describe('a damaged model', () => {
  it('kiln eval: a NaN loss is an error naming the first non-finite weight', async () => {
    const model = damagedModel('nan', 101, 5, Number.NaN);
    const run = await runKiln(['eval', '--checkpoint', model, '--data', dataPath, '--allow-non-finite']);
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr).toContain(
      `error: The evaluation loss of ${model} is NaN: the first non-finite weight is lm_head.weight[101, 5] = NaN`,
    );
  });

  it('kiln generate: an extreme weight is named at load', async () => {
    const model = damagedModel('extreme', 101, 5, -1.2e37);
    const run = await runKiln(['generate', '--checkpoint', model, '--max-tokens', '4', '--prompt', 'ab']);
    expect(run.stderr).toContain(
      `note: ${model} holds extreme weights: lm_head.weight[101, 5] = -1.20e+37 (1 value beyond ±10000)`,
    );
  });
});

describe('a prompt longer than the context', () => {
  it('is said to be cut to its last contextLength tokens, once', async () => {
    const run = await runKiln([
      'generate',
      '--checkpoint',
      checkpoint,
      '--max-tokens',
      '4',
      '--prompt',
      'x'.repeat(100),
    ]);
    expect(run.code, run.stderr).toBe(0);
    const notes = run.stderr.split('\n').filter((line) => line.includes('the prompt is'));
    expect(notes).toEqual([
      "note: the prompt is 100 tokens, more than the model's context of 32: the model reads only its last 32 tokens (the first 68 are ignored), and each new token slides that window on by one",
    ]);
  });
});
