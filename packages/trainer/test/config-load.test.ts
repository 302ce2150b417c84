import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, KilnError } from '@kiln/core';
import { defaultTrainConfig } from '../src/config/defaults.js';
import { loadTrainConfig, type LoadTrainConfigOptions } from '../src/config/load-train-config.js';
import { MODEL_PRESETS } from '../src/config/presets.js';
import { parameterCount } from '../src/model/config.js';
import { levenshtein, nearestKey } from '../src/config/suggest-key.js';

function configErrorOf(options: LoadTrainConfigOptions): ConfigError {
  try {
    loadTrainConfig(options);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    expect(KilnError.isInstance(error) && error.code).toBe('CONFIG_ERROR');
    return error as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('loadTrainConfig', () => {
  let directory: string;
  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'kiln-config-'));
  });
  afterAll(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  it('returns the default run with no arguments', () => {
    const config = loadTrainConfig();
    expect(config).toEqual(defaultTrainConfig());
    expect(config.model.vocabSize).toBe(256);
    expect(config.data.path).toBeUndefined();
    expect(config.data.sequences).toBeUndefined();
    expect(loadTrainConfig({ text: '' })).toEqual(defaultTrainConfig());
  });

  it('reads a file and keeps defaults for what it leaves out', async () => {
    const file = join(directory, 'run.yaml');
    await writeFile(
      file,
      'seed: 7\nmodel:\n  dModel: 96\n  nHead: 6\noptimizer:\n  lr: 1e-3\ndata:\n  path: ./corpus\n',
    );
    const config = loadTrainConfig({ file });
    expect(config.seed).toBe(7);
    expect(config.model.dModel).toBe(96);
    expect(config.model.nKvHead).toBe(6);
    expect(config.model.mlpHidden).toBe(256);
    expect(config.optimizer.lr).toBe(1e-3);
    expect(config.optimizer.beta2).toBe(0.95);
    expect(config.data).toEqual({ path: './corpus', validationFraction: 0.1, minSequenceLength: 2 });
  });

  it('applies presets from models.json, with single-field overrides', () => {
    expect(loadTrainConfig({ text: 'model: { preset: small }' }).model).toEqual(MODEL_PRESETS.small.model);
    expect(MODEL_PRESETS.small.model).toMatchObject({
      contextLength: 128,
      dModel: 128,
      nLayer: 4,
      nHead: 4,
      mlpHidden: 352,
    });
    expect(MODEL_PRESETS.medium.model).toMatchObject({
      contextLength: 256,
      dModel: 256,
      nLayer: 6,
      nHead: 8,
      mlpHidden: 704,
    });
    for (const preset of Object.values(MODEL_PRESETS)) expect(parameterCount(preset.model)).toBe(preset.parameters);
    const overridden = loadTrainConfig({ text: 'model:\n  preset: medium\n  nLayer: 2\n  dModel: 128\n' }).model;
    expect(overridden).toMatchObject({
      contextLength: 256,
      nHead: 8,
      nLayer: 2,
      dModel: 128,
      mlpHidden: 352,
      nKvHead: 8,
    });
    const gqa = loadTrainConfig({ text: 'model: { preset: tiny, nKvHead: 2, mlpHidden: 100 }' }).model;
    expect(gqa).toMatchObject({ nHead: 4, nKvHead: 2, mlpHidden: 100 });
  });

  it('lets overrides win over the file, and the file over defaults', () => {
    const text = 'seed: 3\nschedule:\n  steps: 100\n  batchSize: 8\n  microBatchSize: 4\nmodel: { preset: small }\n';
    const config = loadTrainConfig({
      text,
      overrides: { schedule: { steps: 20, warmupSteps: 5 }, model: { nLayer: 1 } },
    });
    expect(config.seed).toBe(3);
    expect(config.schedule).toMatchObject({ steps: 20, warmupSteps: 5, batchSize: 8, microBatchSize: 4 });
    expect(config.model).toMatchObject({ dModel: 128, nLayer: 1 });
    expect(
      loadTrainConfig({ text: 'model: { preset: small }', overrides: { model: { preset: 'tiny' } } }).model,
    ).toEqual(MODEL_PRESETS.tiny.model);
    expect(loadTrainConfig({ overrides: { schedule: { steps: undefined } } }).schedule.steps).toBe(
      defaultTrainConfig().schedule.steps,
    );
  });

  it('derives the warmup of a short run unless it is set', () => {
    expect(loadTrainConfig({ overrides: { schedule: { steps: 30 } } }).schedule.warmupSteps).toBe(3);
    expect(loadTrainConfig({ overrides: { schedule: { steps: 5000 } } }).schedule.warmupSteps).toBe(50);
    expect(
      loadTrainConfig({ text: 'schedule: { warmupSteps: 0 }', overrides: { schedule: { steps: 30 } } }).schedule
        .warmupSteps,
    ).toBe(0);
  });

  it("shortens a file's warmup that a shorter --steps undercuts only when the caller allows it, and says so", () => {
    const changes: unknown[] = [];
    const onWarmupShortened = (change: unknown): void => void changes.push(change);
    // No warmup set anywhere: the default follows the steps and nothing is reported.
    expect(loadTrainConfig({ overrides: { schedule: { steps: 5 } }, onWarmupShortened }).schedule.warmupSteps).toBe(0);
    expect(
      loadTrainConfig({ text: 'schedule: { steps: 1000 }', overrides: { schedule: { steps: 25 } }, onWarmupShortened })
        .schedule.warmupSteps,
    ).toBe(2);
    expect(changes).toEqual([]);
    // The file's own warmup is cut to a tenth of the overriding steps, and reported.
    const config = loadTrainConfig({
      file: 'run.yaml',
      text: 'schedule: { warmupSteps: 40 }',
      overrides: { schedule: { steps: 30 } },
      onWarmupShortened,
    });
    expect(config.schedule.warmupSteps).toBe(3);
    expect(changes).toEqual([{ from: 40, to: 3, steps: 30, source: 'run.yaml' }]);
    // Without the callback it stays an error, and so does a warmup the same layer set too long.
    expect(() =>
      loadTrainConfig({ text: 'schedule: { warmupSteps: 40 }', overrides: { schedule: { steps: 30 } } }),
    ).toThrow(/warmupSteps: expected at most schedule.steps \(30\), got 40/);
    expect(() => loadTrainConfig({ text: 'schedule: { steps: 10, warmupSteps: 20 }', onWarmupShortened })).toThrow(
      /got 20/,
    );
  });

  it('treats steps/epochs and sequences/path as alternatives across layers', () => {
    const fromEpochs = loadTrainConfig({ text: 'schedule: { epochs: 2 }' });
    expect(fromEpochs.schedule.epochs).toBe(2);
    expect(fromEpochs.schedule.steps).toBe(0);
    const stepsWin = loadTrainConfig({ text: 'schedule: { epochs: 2 }', overrides: { schedule: { steps: 30 } } });
    expect(stepsWin.schedule).toMatchObject({ steps: 30 });
    expect(stepsWin.schedule.epochs).toBeUndefined();
    const pathWins = loadTrainConfig({ text: 'data: { sequences: a.json }', overrides: { data: { path: 'src' } } });
    expect(pathWins.data.path).toBe('src');
    expect(pathWins.data.sequences).toBeUndefined();
    const error = configErrorOf({ text: 'schedule: { steps: 5, epochs: 1 }\ndata: { sequences: a.json, path: b }' });
    expect(error.message).toContain(
      '<config>: schedule.epochs: expected only one of schedule.steps or schedule.epochs, got both',
    );
    expect(error.message).toContain('<config>: data.path: expected only one of data.sequences or data.path, got both');
  });

  it('reports type errors with file, dotted path, expected and got — all of them at once', async () => {
    const file = join(directory, 'types.yaml');
    await writeFile(
      file,
      [
        'seed: -1',
        'model:',
        '  dModel: "wide"',
        '  nLayer: 2.5',
        '  tieEmbeddings: yes please',
        'device:',
        '  precision: fp8',
        '  device: "cuda 0"',
        'optimizer:',
        '  lr: 0',
        'data:',
        '  validationFraction: 0.7',
        'schedule: 12',
        '',
      ].join('\n'),
    );
    const error = configErrorOf({ file });
    const lines = [
      `${file}: seed: expected an integer ≥ 0, got -1`,
      `${file}: model.dModel: expected an integer, got "wide"`,
      `${file}: model.nLayer: expected an integer, got 2.5`,
      `${file}: model.tieEmbeddings: expected true or false, got "yes please"`,
      `${file}: device.precision: expected one of 'auto', 'f32', 'bf16', 'f16', got "fp8"`,
      `${file}: device.device: expected a device name such as 'auto', 'cpu', 'cuda' or 'cuda:1', got "cuda 0"`,
      `${file}: optimizer.lr: expected a number > 0, got 0`,
      `${file}: data.validationFraction: expected a number < 0.5, got 0.7`,
      `${file}: schedule: expected a section (mapping), got 12`,
    ];
    for (const line of lines) expect(error.message).toContain(line);
    expect(error.message).toContain(`(${lines.length} problems)`);
  });

  it('device.cudaGraph defaults to auto, takes off, and refuses other values by name', () => {
    expect(loadTrainConfig({ text: '' }).device.cudaGraph).toBe('auto');
    expect(loadTrainConfig({ text: 'device: { cudaGraph: off }' }).device.cudaGraph).toBe('off');
    const error = configErrorOf({ text: 'device: { cudaGraph: always }' });
    expect(error.message).toContain(`<config>: device.cudaGraph: expected one of 'auto', 'off', got "always"`);
  });

  it('suggests the nearest key for an unknown key', () => {
    const error = configErrorOf({
      text: 'modle:\n  dModel: 64\nmodel:\n  dmodel: 64\n  n_layer: 2\n  heads: 4\n  colour: red\nschedule:\n  warmup: 10\n',
    });
    expect(error.message).toContain("<config>: modle: unknown key, did you mean 'model'?");
    expect(error.message).toContain("<config>: model.dmodel: unknown key, did you mean 'dModel'?");
    expect(error.message).toContain("<config>: model.n_layer: unknown key, did you mean 'nLayer'?");
    expect(error.message).toContain("<config>: model.heads: unknown key, did you mean 'nHead'?");
    expect(error.message).toContain(
      '<config>: model.colour: unknown key, known keys here: preset, vocabSize, contextLength',
    );
    expect(error.message).toContain("<config>: schedule.warmup: unknown key, did you mean 'warmupSteps'?");
    expect(configErrorOf({ text: 'optimiser:\n' }).message).toContain(
      "<config>: optimiser: unknown key, did you mean 'optimizer'?",
    );
    expect(loadTrainConfig({ text: 'model:\n  # nothing yet\nschedule:\n' })).toEqual(defaultTrainConfig());
    const override = configErrorOf({ overrides: { optimizer: { learningRate: 1 } } as never });
    expect(override.message).toContain('overrides: optimizer.learningRate: unknown key');
  });

  it('computes edit distances', () => {
    expect(levenshtein('kitten', 'sitting')).toBe(3);
    expect(levenshtein('', 'abc')).toBe(3);
    expect(levenshtein('same', 'same')).toBe(0);
    expect(nearestKey('bach_size', ['batchSize', 'microBatchSize'])).toBe('batchSize');
    expect(nearestKey('zzz', ['batchSize', 'steps'])).toBeUndefined();
  });

  it('reports YAML syntax errors with line and column', async () => {
    const file = join(directory, 'broken.yaml');
    await writeFile(file, 'seed: 1\nmodel:\n  dModel: 64\n\tnLayer: 2\n');
    expect(configErrorOf({ file }).message).toMatch(
      new RegExp(`${file.replace(/[.]/g, '\\.')}:4:1: YAML syntax error: Tabs are not allowed`),
    );
    expect(configErrorOf({ text: 'a: [1, 2\nb: 3\n' }).message).toMatch(
      /<config>:\d+:\d+: YAML syntax error: Flow sequence/,
    );
    expect(configErrorOf({ text: 'seed: 1\nseed: 2\n' }).message).toContain(
      '<config>:2:1: YAML syntax error: Map keys must be unique',
    );
    expect(configErrorOf({ text: '- 1\n- 2\n' }).message).toContain(
      '<config>: (top level): expected a mapping of sections',
    );
    expect(configErrorOf({ file: join(directory, 'missing.yaml') }).message).toMatch(
      /cannot read the config file .*missing\.yaml/,
    );
  });

  it.each([
    [
      'schedule: { batchSize: 10, microBatchSize: 4 }',
      '<config>: schedule.batchSize: expected a multiple of schedule.microBatchSize (4), got 10',
    ],
    [
      'schedule: { batchSize: 4, microBatchSize: 8 }',
      '<config>: schedule.microBatchSize: expected at most schedule.batchSize (4), got 8',
    ],
    ['model: { nHead: 4, nKvHead: 3 }', '<config>: model.nKvHead: expected a divisor of model.nHead (4), got 3'],
    ['model: { nHead: 3 }', '<config>: model.dModel: expected a multiple of model.nHead (3), got 64'],
    [
      'model: { dModel: 60, nHead: 4 }',
      '<config>: model.dModel: expected an even head size dModel / nHead (rotary embeddings rotate pairs), got 60 / 4 = 15',
    ],
    [
      'schedule: { steps: 10, warmupSteps: 20 }',
      '<config>: schedule.warmupSteps: expected at most schedule.steps (10), got 20',
    ],
    ['model: { vocabSize: 100 }', '<config>: model.vocabSize: expected at least 256 for byte-level text data, got 100'],
    ['schedule: { steps: 0 }', '<config>: schedule.steps: expected an integer ≥ 1, got 0'],
    ['data: { validationFraction: 0 }', '<config>: data.validationFraction: expected a number > 0, got 0'],
    [
      'schedule: { evalBatches: 1000000000 }',
      '<config>: schedule.evalBatches: expected an integer ≤ 10000, got 1000000000',
    ],
  ])('checks semantics: %s', (text, line) => {
    expect(configErrorOf({ text }).message).toContain(line);
  });

  it('names the layer that set a value in semantic errors', () => {
    const error = configErrorOf({
      text: 'schedule: { batchSize: 16 }',
      overrides: { schedule: { microBatchSize: 5 } },
    });
    expect(error.message).toContain(
      'overrides: schedule.batchSize: expected a multiple of schedule.microBatchSize (5), got 16',
    );
    const fromDefaults = configErrorOf({ overrides: { schedule: { warmupSteps: 10_000 } } });
    expect(fromDefaults.message).toContain(
      'overrides: schedule.warmupSteps: expected at most schedule.steps (400), got 10000',
    );
    expect(loadTrainConfig({ text: 'model: { vocabSize: 1000 }\ndata: { sequences: t.json }' }).model.vocabSize).toBe(
      1000,
    );
  });
});

describe('config files that would hang or crash the parser', () => {
  let directory: string;
  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'kiln-config-limits-'));
  });
  afterAll(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  /** "Billion laughs": each anchor refers to the previous one nine times (9⁹ strings when expanded). */
  function aliasBomb(): string {
    const lines = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]'];
    for (let level = 1; level < 9; level++) {
      const name = String.fromCharCode(97 + level);
      const previous = `*${String.fromCharCode(96 + level)}`;
      lines.push(`${name}: &${name} [${new Array(9).fill(previous).join(', ')}]`);
    }
    return `${lines.join('\n')}\n`;
  }

  it('refuses a YAML alias bomb with a ConfigError naming the file', async () => {
    const file = join(directory, 'laughs.yaml');
    await writeFile(file, aliasBomb());
    const message = configErrorOf({ file }).message;
    expect(message).toContain(file);
    expect(message).toMatch(/aliases/);
    // A few aliases are fine: YAML anchors are a legitimate way to repeat a value.
    expect(loadTrainConfig({ text: 'schedule: { batchSize: &b 8, microBatchSize: *b }' }).schedule.microBatchSize).toBe(
      8,
    );
  });

  it('refuses a config file larger than the limit before parsing it', async () => {
    const file = join(directory, 'huge.yaml');
    await writeFile(file, `seed: 1\n# ${'x'.repeat(2 * 1024 * 1024)}\n`);
    const message = configErrorOf({ file }).message;
    expect(message).toContain(file);
    expect(message).toMatch(/2\.0 MiB.*limit.*1\.0 MiB/);
  });

  it('refuses nesting deep enough to overflow the parser (which would abort the process)', async () => {
    const file = join(directory, 'deep.yaml');
    await writeFile(file, `seed: ${'['.repeat(20_000)}${']'.repeat(20_000)}\n`);
    const message = configErrorOf({ file }).message;
    expect(message).toContain(file);
    expect(message).toMatch(/nested .* deep/);
  });
});
