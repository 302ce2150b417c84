/**
 * LoRA fine-tuning through train(): the transformers-made llama-gqa fixture is the frozen base,
 * only the adapter is optimized (the base weights are untouched), the loss falls, checkpoints are
 * PEFT adapter directories with the adapter's optimizer moments (and load back as a model with the
 * adapter for generation), and a run stopped and resumed matches an uninterrupted one bit for bit,
 * LoRA dropout included.
 */
import { cp, readdir, readFile, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, setBackend } from '@kiln/core';
import { createCpuBackend } from '@kiln/backend-cpu';
import { loadCheckpoint, loadCheckpointModel } from '../src/checkpoint/index.js';
import type { TrainConfig } from '../src/contracts.js';
import { loadModelDirectory, LoraTrainingModel, parseLoraOption } from '../src/index.js';
import { train } from '../src/train/index.js';
import { withAbsoluteInputPaths } from '../src/train/run-setup.js';
import { HF_FIXTURES } from './hf-fixtures.js';
import { eventRecorder, makeWorkspace, tinyTrainConfig } from './train-fixtures.js';

const backend = createCpuBackend();
const BASE = join(HF_FIXTURES, 'llama-gqa');

describe('LoRA fine-tuning', () => {
  let workspace: Awaited<ReturnType<typeof makeWorkspace>>;
  let config: (outputDir: string, steps?: number) => TrainConfig;

  beforeEach(async () => {
    setBackend(backend);
    workspace = await makeWorkspace();
    config = (outputDir, steps = 6) => {
      const tiny = tinyTrainConfig(workspace.dataPath, join(workspace.root, outputDir), {
        optimizer: { lr: 1e-2, weightDecay: 0 },
        schedule: { steps, batchSize: 4, microBatchSize: 4, warmupSteps: 1, evalInterval: 3, logInterval: 1 },
        checkpoint: { interval: 3, keepLast: 3 },
      });
      return {
        ...tiny,
        // The fixture has no tokenizer.json: its text is read as bytes, on purpose.
        data: { ...tiny.data, tokenizer: 'byte' },
        initFrom: BASE,
        lora: { rank: 4, alpha: 8, dropout: 0.1, targets: ['q_proj', 'v_proj', 'down_proj'] },
      };
    };
  });
  afterEach(async () => workspace.cleanup());

  it('trains only the adapter, lowers the loss and checkpoints a PEFT adapter with its moments', async () => {
    const recorder = eventRecorder();
    const result = await train(config('run', 12), { backend, onEvent: recorder.onEvent });
    const losses = recorder.steps().map((event) => event.loss);
    expect(losses).toHaveLength(12);
    expect(losses.slice(-3).reduce((a, b) => a + b) / 3).toBeLessThan(losses.slice(0, 3).reduce((a, b) => a + b) / 3);
    expect(recorder.of('start')[0].parameters).toBe(
      2 * (4 * 64 + 64 * 4) + 2 * (4 * 64 + 32 * 4) + 2 * (4 * 176 + 64 * 4),
    );
    expect((await readdir(result.checkpointPath)).sort()).toEqual([
      'adapter_config.json',
      'adapter_model.safetensors',
      'optimizer.safetensors',
      'state.json',
    ]);
    expect(JSON.parse(await readFile(join(result.checkpointPath, 'adapter_config.json'), 'utf8'))).toMatchObject({
      peft_type: 'LORA',
      r: 4,
      lora_alpha: 8,
      base_model_name_or_path: BASE,
    });
    const loaded = await loadCheckpoint(result.checkpointPath, { backend });
    expect(loaded.model).toBeInstanceOf(LoraTrainingModel);
    expect([...loaded.moments.keys()]).toEqual([...loaded.model.parameters.keys()]);
    expect([...loaded.model.parameters.keys()][0]).toBe(
      'base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight',
    );
    // The frozen base is exactly the fixture.
    const base = (loaded.model as LoraTrainingModel).base;
    const original = await loadModelDirectory(BASE, { backend });
    for (const [name, weight] of original.parameters)
      expect(await base.parameters.get(name)!.data(), name).toEqual(await weight.data());
    original.dispose();
    loaded.model.dispose();
    for (const { m, v } of loaded.moments.values()) {
      m.dispose();
      v.dispose();
    }
    const forGeneration = await loadCheckpointModel(result.checkpointPath, { backend });
    expect(forGeneration.adapter?.modules.size).toBe(6);
    forGeneration.dispose();
  });

  it('resumes bit for bit (dropout masks included)', async () => {
    const whole = eventRecorder();
    await train(config('whole'), { backend, onEvent: whole.onEvent });
    const controller = new AbortController();
    const first = eventRecorder();
    await train(config('split'), {
      backend,
      signal: controller.signal,
      onEvent: (event) => {
        first.onEvent(event);
        if (event.type === 'step' && event.step === 3) controller.abort();
      },
    });
    const second = eventRecorder();
    await train(config('split'), { backend, resume: true, onEvent: second.onEvent });
    const resumed = [...first.steps(), ...second.steps()].map((event) => event.loss);
    expect(resumed).toEqual(whole.steps().map((event) => event.loss));
    expect(backend.memory().bufferCount).toBe(0);
  });

  it("holds the frozen base in bf16 (lora.baseDType): it trains, the adapter stays f32 and its checkpoint is the f32 run's format", async () => {
    const recorder = eventRecorder();
    const bf16 = {
      ...config('bf16', 12),
      lora: { rank: 4, alpha: 8, dropout: 0, targets: ['q_proj', 'v_proj'], baseDType: 'bf16' as const },
    };
    const result = await train(bf16, { backend, onEvent: recorder.onEvent });
    const losses = recorder.steps().map((event) => event.loss);
    expect(losses.every(Number.isFinite)).toBe(true);
    expect(losses.slice(-3).reduce((a, b) => a + b) / 3).toBeLessThan(losses.slice(0, 3).reduce((a, b) => a + b) / 3);
    expect((await readdir(result.checkpointPath)).sort()).toEqual([
      'adapter_config.json',
      'adapter_model.safetensors',
      'optimizer.safetensors',
      'state.json',
    ]);
    const adapterConfig = JSON.parse(
      await readFile(join(result.checkpointPath, 'adapter_config.json'), 'utf8'),
    ) as Record<string, unknown>;
    expect(adapterConfig).toMatchObject({
      peft_type: 'LORA',
      r: 4,
      lora_alpha: 8,
      target_modules: ['q_proj', 'v_proj'],
    });
    expect(JSON.stringify(adapterConfig)).not.toMatch(/bf16|baseDType/);
    // Resuming loads the base in bf16 again; the adapter and its moments are f32.
    const loaded = await loadCheckpoint(result.checkpointPath, { backend });
    const base = (loaded.model as LoraTrainingModel).base;
    expect(base.parameters.get('model.layers.0.self_attn.q_proj.weight')!.dtype).toBe('bf16');
    expect(base.parameters.get('model.embed_tokens.weight')!.dtype).toBe('bf16');
    expect(base.parameters.get('model.layers.0.input_layernorm.weight')!.dtype).toBe('f32');
    for (const parameter of loaded.model.parameters.values()) expect(parameter.dtype).toBe('f32');
    for (const { m } of loaded.moments.values()) expect(m.dtype).toBe('f32');
    loaded.model.dispose();
    for (const { m, v } of loaded.moments.values()) {
      m.dispose();
      v.dispose();
    }
    // The saved adapter applies to the f32 base as any PEFT adapter does.
    const onF32 = await loadCheckpointModel(result.checkpointPath, { backend });
    expect(onF32.parameters.get('model.layers.0.self_attn.q_proj.weight')!.dtype).toBe('f32');
    expect(onF32.adapter?.modules.size).toBe(4);
    onF32.dispose();
    expect(backend.memory().bufferCount).toBe(0);
  });

  it('refuses a base dtype the backend cannot hold, naming it', async () => {
    const limited = createCpuBackend();
    const supports = limited.capabilities.supports.bind(limited.capabilities);
    Object.defineProperty(limited, 'capabilities', {
      value: {
        ...limited.capabilities,
        supports: (kernel: string, dtype: string) => dtype !== 'f16' && supports(kernel as never, dtype as never),
      },
    });
    const f16 = {
      ...config('f16'),
      lora: { rank: 4, alpha: 8, dropout: 0, targets: ['q_proj'], baseDType: 'f16' as const },
    };
    await expect(train(f16, { backend: limited })).rejects.toThrow(ConfigError);
    await expect(train(f16, { backend: limited })).rejects.toThrow(
      /lora\.baseDType f16: the cpu backend cannot hold or compute with f16 tensors/,
    );
    limited.dispose?.();
  });

  it('reads base-dtype from --lora and refuses an unknown one', () => {
    expect(parseLoraOption('r=4,alpha=8,base-dtype=bf16,targets=q_proj,v_proj')).toEqual({
      rank: 4,
      alpha: 8,
      dropout: 0,
      baseDType: 'bf16',
      targets: ['q_proj', 'v_proj'],
    });
    expect(() => parseLoraOption('r=4,base-dtype=f8,targets=q_proj')).toThrow(
      /--lora: base-dtype must be one of f32, bf16, f16, got "f8"/,
    );
  });

  it('refuses lora without initFrom', async () => {
    const { initFrom: _ignored, ...withoutBase } = config('none');
    await expect(train(withoutBase, { backend })).rejects.toThrow(ConfigError);
    await expect(train(withoutBase, { backend })).rejects.toThrow(/lora is set but initFrom is not/);
  });

  it('resumes and loads a checkpoint only with its base, and names a missing base instead of calling the checkpoint damaged', async () => {
    const base = join(workspace.root, 'base-copy');
    await cp(BASE, base, { recursive: true });
    const run = { ...config('moved-base', 3), initFrom: base };
    await train(run, { backend });
    const checkpoint = join(workspace.root, 'moved-base', 'checkpoints', 'step-00000003');
    await rm(base, { recursive: true });
    for (const load of [
      () => loadCheckpoint(checkpoint, { backend }),
      () => loadCheckpointModel(checkpoint, { backend }),
      () => train({ ...run, schedule: { ...run.schedule, steps: 4 } }, { backend, resume: true }),
    ]) {
      const attempt = load();
      await expect(attempt).rejects.toBeInstanceOf(ConfigError);
      await expect(attempt).rejects.toThrow(
        `the LoRA checkpoint ${checkpoint} is an adapter on the base model ${base}, which is not there`,
      );
    }
  });
});

describe('withAbsoluteInputPaths', () => {
  it("makes initFrom and the data paths absolute against the current directory, leaving 'byte' and unset paths", () => {
    const tiny = tinyTrainConfig('data/train.txt', 'out');
    const relative: TrainConfig = {
      ...tiny,
      initFrom: 'models/base',
      data: { ...tiny.data, sequences: undefined, tokenizer: 'tok/tokenizer.json' },
    };
    const absolute = withAbsoluteInputPaths(relative);
    expect(absolute.initFrom).toBe(resolve('models/base'));
    expect(absolute.data.path).toBe(resolve('data/train.txt'));
    expect(absolute.data.tokenizer).toBe(resolve('tok/tokenizer.json'));
    expect(absolute.data.sequences).toBeUndefined();
    expect(absolute.checkpoint.outputDir).toBe('out');
    expect(withAbsoluteInputPaths({ ...relative, data: { ...relative.data, tokenizer: 'byte' } }).data.tokenizer).toBe(
      'byte',
    );
    expect(withAbsoluteInputPaths({ ...relative, initFrom: undefined }).initFrom).toBeUndefined();
  });
});
