import { writeFileSync } from 'node:fs';
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

describe('bad config and data exit 2 with the path and a suggestion', () => {
  const directory = temporaryDirectory('errors');
  const dataPath = writeTrainingText(directory);

  it('names an unknown key with its dotted path and the nearest key', async () => {
    const file = join(directory, 'typo.yaml');
    writeFileSync(file, 'schedule:\n  stepz: 4\n');
    const run = await runKiln(['train', '--config', file, '--output', join(directory, 'run-typo')]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^error: /);
    expect(run.stderr).toContain('schedule.stepz');
    expect(run.stderr).toContain("did you mean 'steps'?");
    expect(run.stderr).toContain(file);
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });

  it('names a wrong type with what was expected and what was found', async () => {
    const file = join(directory, 'type.yaml');
    writeFileSync(file, 'model:\n  dModel: "wide"\n');
    const run = await runKiln(['train', '--config', file]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('model.dModel');
    expect(run.stderr).toMatch(/expected .*number|expected .*integer/);
    expect(run.stderr).toContain('wide');
  });

  it('names the bad record of a sequences file by index', async () => {
    const sequences = join(directory, 'token_sequences.json');
    writeFileSync(
      sequences,
      JSON.stringify([
        [1, 2, 3, 4],
        [5, 6, 7, 8],
        [9, 300, 11, 12],
        [1, 2, 3, 4],
      ]),
    );
    const config = writeTinyConfig(directory, { dataPath, outputDir: join(directory, 'run-bad-data') });
    const run = await runKiln(['train', '--config', config, '--sequences', sequences, '--steps', '1']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(sequences);
    expect(run.stderr).toMatch(/record 2\b/);
    expect(run.stderr).toContain('300');
  });

  it('rejects conflicting flags and a missing data path', async () => {
    const both = await runKiln(['train', '--steps', '2', '--epochs', '1']);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('--steps and --epochs');
    const missing = await runKiln([
      'train',
      '--data',
      join(directory, 'absent.txt'),
      '--steps',
      '1',
      '--output',
      join(directory, 'run-missing'),
    ]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('absent.txt');
  });

  it('refuses an unknown --cuda-graph mode by name, for train and bench', async () => {
    for (const command of ['train', 'bench']) {
      const run = await runKiln([command, '--cuda-graph', 'always']);
      expect(run.code).toBe(2);
      expect(run.stderr).toContain(
        "option '--cuda-graph <mode>' argument 'always' is invalid. expected one of auto, off, got 'always'.",
      );
    }
  });
});
