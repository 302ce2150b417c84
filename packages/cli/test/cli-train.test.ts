import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  removeTemporaryDirectories,
  requireBuild,
  runKiln,
  temporaryDirectory,
  writeTinyConfig,
  writeTrainingText,
} from './kiln-process.js';

beforeAll(requireBuild);
afterAll(removeTemporaryDirectories);

describe('kiln train → generate → eval → tokenize', () => {
  const directory = temporaryDirectory('train');
  const dataPath = writeTrainingText(directory);
  const outputDir = join(directory, 'run');
  const config = writeTinyConfig(directory, { dataPath, outputDir, steps: 8, interval: 4 });

  it('trains a tiny config and writes metrics.jsonl, loss.svg and a checkpoint', async () => {
    const run = await runKiln(['train', '--config', config, '--steps', '4']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^backend: cpu /m);
    expect(run.stdout).toMatch(/^deterministic: yes \(bit-identical reruns with the same thread count\)$/m);
    expect(run.stdout).toMatch(/^step 4\/4 mean loss \d+\.\d{3} \(step 4\) lr \S+ [\d,]+ tok\/s eta \S+$/m);
    expect(run.stdout).toMatch(/^validation loss: \d+\.\d{3} nats\/byte \(\d+\.\d{3} bits\/byte\)$/m);
    expect(run.stdout).not.toMatch(/target (met|missed)/);
    expect(run.stdout).toContain(`metrics:    ${join(outputDir, 'metrics.jsonl')}`);
    expect(run.stdout).toMatch(/^sample \(temperature 0\.8, seed 0\):\nexport function /m);

    const lines = readFileSync(join(outputDir, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, number>);
    expect(lines.map((line) => line.step)).toEqual([1, 2, 3, 4]);
    for (const line of lines) {
      expect(Object.keys(line)).toEqual(expect.arrayContaining(['step', 'loss', 'lr', 'tokens_per_second']));
      expect(Number.isFinite(line.loss)).toBe(true);
    }
    expect(lines[3].val_loss).toBeGreaterThan(0);
    const svg = readFileSync(join(outputDir, 'loss.svg'), 'utf8');
    expect(svg).toMatch(/^(<\?xml[^>]*>\s*)?<svg[\s>]/);
    expect(svg.trim().endsWith('</svg>')).toBe(true);
    const checkpoints = readdirSync(join(outputDir, 'checkpoints')).filter((name) => name.startsWith('step-'));
    expect(checkpoints.length).toBeGreaterThan(0);
    const last = join(outputDir, 'checkpoints', checkpoints.sort().at(-1) as string);
    for (const file of ['model.safetensors', 'config.json', 'optimizer.safetensors', 'state.json'])
      expect(existsSync(join(last, file))).toBe(true);
  });

  it('generates the same text twice with the same seed, from the run or the checkpoint directory', async () => {
    const args = ['generate', '--checkpoint', outputDir, '--max-tokens', '10', '--seed', '1', '--prompt', 'export '];
    const first = await runKiln(args);
    const second = await runKiln(args);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout.startsWith('export ')).toBe(true);
    expect(Buffer.byteLength(first.stdout)).toBeGreaterThan('export \n'.length);
    expect(second.stdout).toBe(first.stdout);
    expect(first.stderr).toMatch(/^backend: cpu/m);
    const checkpoint = join(
      outputDir,
      'checkpoints',
      readdirSync(join(outputDir, 'checkpoints'))
        .filter((name) => name.startsWith('step-'))
        .sort()
        .at(-1) as string,
    );
    const direct = await runKiln([
      'generate',
      '--checkpoint',
      checkpoint,
      '--max-tokens',
      '10',
      '--seed',
      '1',
      '--prompt',
      'export ',
    ]);
    expect(direct.stdout).toBe(first.stdout);
    const other = await runKiln([
      'generate',
      '--checkpoint',
      outputDir,
      '--max-tokens',
      '10',
      '--seed',
      '2',
      '--prompt',
      'export ',
      '--temperature',
      '1.5',
    ]);
    expect(other.code).toBe(0);
  });

  it("evaluates a checkpoint on its run's data", async () => {
    const run = await runKiln(['eval', '--checkpoint', outputDir, '--json']);
    expect(run.code, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout) as { loss: number; perplexity: number; unit: string; split: string };
    expect(result.unit).toBe('nats/byte');
    expect(result.split).toBe('validation');
    expect(result.loss).toBeGreaterThan(0);
    expect(result.loss).toBeLessThan(Math.log(256) + 1);
    expect(result.perplexity).toBeCloseTo(Math.exp(result.loss), 6);
  });

  it('tokenizes text into a token file that training reads', async () => {
    const tokens = join(directory, 'train.kiln-tokens');
    const run = await runKiln(['tokenize', dataPath, '--output', tokens, '--json']);
    expect(run.code, run.stderr).toBe(0);
    const summary = JSON.parse(run.stdout) as { tokens: number; files: number; bytesPerToken: number };
    expect(summary.tokens).toBe(readFileSync(dataPath).length);
    expect(summary.files).toBe(1);
    expect(summary.bytesPerToken).toBe(1);
    const trained = await runKiln([
      'train',
      '--config',
      config,
      '--data',
      tokens,
      '--steps',
      '1',
      '--output',
      join(directory, 'run-tokens'),
      '--json',
    ]);
    expect(trained.code, trained.stderr).toBe(0);
    const events = trained.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { type: string });
    expect(events[0].type).toBe('start');
    expect(events.at(-1)?.type).toBe('result');
    expect(events.some((event) => event.type === 'end')).toBe(true);
    const wrongName = await runKiln(['tokenize', dataPath, '--output', join(directory, 'tokens.bin')]);
    expect(wrongName.code).toBe(2);
  });
});
