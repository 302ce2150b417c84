/**
 * Damaged checkpoints through the CLI: `kiln generate` refuses a checkpoint whose files no longer
 * match their checksums (naming the file and the previous checkpoint), falls back by itself when
 * given the run directory, refuses NaN weights unless --allow-non-finite, and refuses a model
 * whose context cannot fit before loading it; `kiln train --resume` falls back past a tampered
 * checkpoint.
 */
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  finished,
  removeTemporaryDirectories,
  requireBuild,
  runKiln,
  spawnKiln,
  temporaryDirectory,
  writeTinyConfig,
  writeTrainingText,
} from './kiln-process.js';

afterAll(removeTemporaryDirectories);

const directory = temporaryDirectory('integrity');
const trained = join(directory, 'trained');
let config: string;

beforeAll(async () => {
  requireBuild();
  const dataPath = writeTrainingText(directory);
  config = writeTinyConfig(directory, { dataPath, outputDir: trained, steps: 4, interval: 2 });
  const run = await runKiln(['train', '--config', config, '--json']);
  expect(run.code, run.stderr).toBe(0);
});

/** A fresh copy of the trained run directory. */
function copyOfRun(name: string): { run: string; newest: string; previous: string } {
  const run = join(directory, name);
  cpSync(trained, run, { recursive: true });
  return {
    run,
    newest: join(run, 'checkpoints', 'step-00000004'),
    previous: join(run, 'checkpoints', 'step-00000002'),
  };
}

/** Applies `change` to the tensor bytes of a safetensors file (after its header). */
function changeTensorBytes(path: string, change: (bytes: Uint8Array, start: number) => void): void {
  const bytes = new Uint8Array(readFileSync(path));
  change(bytes, 8 + new DataView(bytes.buffer, bytes.byteOffset).getUint32(0, true));
  writeFileSync(path, bytes);
}

const generateArgs = ['--prompt', 'export ', '--max-tokens', '8', '--temperature', '0', '--no-echo', '--quiet'];

describe('kiln generate on damaged checkpoints', () => {
  it('flipped bytes: refuses the checkpoint naming the file and the previous one; the run directory falls back to it', async () => {
    const { run, newest, previous } = copyOfRun('flipped');
    changeTensorBytes(join(newest, 'model.safetensors'), (bytes, start) => {
      for (let index = start + 96; index < bytes.length; index += 97) bytes[index] ^= 0xff;
    });
    const refused = await runKiln(['generate', '--checkpoint', newest, ...generateArgs]);
    expect(refused.code, refused.stderr).toBe(1);
    expect(refused.stderr).toMatch(
      /error: .*step-00000004[\\/]model\.safetensors does not match the SHA-256 recorded when it was written/,
    );
    expect(refused.stderr).toContain(`Use the previous checkpoint ${previous}`);
    expect(refused.stdout).toBe('');

    const fallback = await runKiln(['generate', '--checkpoint', run, ...generateArgs]);
    expect(fallback.code, fallback.stderr).toBe(0);
    expect(fallback.stderr).toMatch(
      /note: checkpoint .*step-00000004 is unusable \(.*model\.safetensors does not match.*\); falling back to the previous checkpoint/,
    );
    const fromPrevious = await runKiln(['generate', '--checkpoint', previous, ...generateArgs]);
    expect(fallback.stdout).toBe(fromPrevious.stdout);
  });

  it('weights overwritten with 0xFF (all NaN) and a config.json with another head count: both refused', async () => {
    const { newest } = copyOfRun('nan-and-heads');
    changeTensorBytes(join(newest, 'model.safetensors'), (bytes, start) => bytes.fill(0xff, start));
    const nan = await runKiln(['generate', '--checkpoint', newest, ...generateArgs]);
    expect(nan.code).toBe(1);
    expect(nan.stderr).toMatch(/model\.safetensors does not match the SHA-256/);

    const { newest: other } = copyOfRun('heads');
    const path = join(other, 'config.json');
    const hf = JSON.parse(readFileSync(path, 'utf8')) as Record<string, number>;
    // 2 heads of 16 → 4 heads of 8: every weight keeps its shape, the model computes something else.
    writeFileSync(
      path,
      `${JSON.stringify({ ...hf, num_attention_heads: 4, num_key_value_heads: 4, head_dim: 8 }, null, 2)}\n`,
    );
    const heads = await runKiln(['generate', '--checkpoint', other, ...generateArgs]);
    expect(heads.code).toBe(1);
    expect(heads.stderr).toMatch(/config\.json (is \d+ bytes but was written with \d+|does not match the SHA-256)/);
  });

  it('a model directory with NaN weights: refused, and with --allow-non-finite loaded but stopped at the first NaN logit', async () => {
    const model = join(directory, 'nan-model');
    mkdirSync(model);
    for (const file of ['config.json', 'model.safetensors'])
      cpSync(join(trained, 'checkpoints', 'step-00000004', file), join(model, file));
    changeTensorBytes(join(model, 'model.safetensors'), (bytes, start) => bytes.fill(0xff, start));
    const refused = await runKiln(['generate', '--checkpoint', model, ...generateArgs]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /tensor "model\.embed_tokens\.weight" holds \d+ non-finite values .*\(the first, NaN, at index 0\)/,
    );
    expect(refused.stderr).toContain('--allow-non-finite');
    // Loading is allowed (to inspect the weights), but sampling from NaN logits would print garbage: a NonFiniteError naming the weight.
    const allowed = await runKiln(['generate', '--checkpoint', model, ...generateArgs, '--allow-non-finite']);
    expect(allowed.code, allowed.stderr).toBe(1);
    expect(allowed.stderr).toMatch(
      /error: generate: the logits of new token 1 hold \d+ non-finite values of \d+ \(token id 0: NaN\): the first non-finite weight is model\.embed_tokens\.weight\[0, 0\] = NaN/,
    );
  });

  it('a context of 10⁹ tokens with a 100k-character prompt: refused before loading, naming the key', async () => {
    const model = join(directory, 'huge-context');
    mkdirSync(model);
    cpSync(join(trained, 'checkpoints', 'step-00000004', 'model.safetensors'), join(model, 'model.safetensors'));
    const hf = JSON.parse(readFileSync(join(trained, 'checkpoints', 'step-00000004', 'config.json'), 'utf8')) as Record<
      string,
      number
    >;
    writeFileSync(join(model, 'config.json'), JSON.stringify({ ...hf, max_position_embeddings: 1_000_000_000 }));
    // Before the memory check this ran for many minutes: kill it well before the test times out.
    const child = spawnKiln([
      'generate',
      '--checkpoint',
      model,
      '--prompt',
      'x'.repeat(100_000),
      '--max-tokens',
      '4',
      '--quiet',
    ]);
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    const run = await finished(child);
    clearTimeout(timer);
    expect(run.signal).toBeNull();
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(
      /error: model\.contextLength = 1000000000 \(max_position_embeddings in .*huge-context[\\/]config\.json\): generating at the model's full context needs an estimated [\d.]+ [GT]iB .*KV cache .* for 1000000000 positions.*more than the .* free on cpu.*nothing was loaded/,
    );
  });
});

describe('kiln train --resume past a tampered checkpoint', () => {
  it('falls back to the previous checkpoint with a note naming what failed', async () => {
    const { run, newest } = copyOfRun('tampered-resume');
    const path = join(newest, 'config.json');
    const hf = JSON.parse(readFileSync(path, 'utf8')) as Record<string, number>;
    writeFileSync(
      path,
      `${JSON.stringify({ ...hf, num_attention_heads: 4, num_key_value_heads: 4, head_dim: 8 }, null, 2)}\n`,
    );
    const resumed = await runKiln(['train', '--config', config, '--output', run, '--steps', '6', '--resume', '--json']);
    expect(resumed.code, resumed.stderr).toBe(0);
    const events = resumed.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { type: string; step?: number; message?: string });
    expect(events.find((event) => event.type === 'start')?.step).toBe(2);
    expect(
      events
        .filter((event) => event.type === 'notice')
        .map((event) => event.message)
        .join('\n'),
    ).toMatch(/checkpoint .*step-00000004 is unusable \(.*config\.json.*\); falling back to the previous checkpoint/);
  });
});

describe('kiln eval with batches that would hang or crash', () => {
  it('refuses --batch-size 1000000000 (was: RangeError: Invalid typed array length) and --batches 1000000000 with exit 2', async () => {
    const [size, count] = await Promise.all([
      runKiln(['eval', '--checkpoint', trained, '--batch-size', '1000000000']),
      runKiln(['eval', '--checkpoint', trained, '--batches', '1000000000']),
    ]);
    expect(size.code, size.stderr).toBe(2);
    expect(size.stderr).toMatch(
      /error: --batch-size 1000000000: a batch of 32000000000 tokens .* more than the largest array Node can allocate/,
    );
    expect(count.code, count.stderr).toBe(2);
    expect(count.stderr).toMatch(/error: --batches 1000000000 is more than 10000/);
  });
});
