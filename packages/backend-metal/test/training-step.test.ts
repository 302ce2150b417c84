// One training step of the tiny reference model (MODEL_PRESETS.tiny, 139,584 parameters) on the
// simulated Metal backend against @kiln/backend-cpu: the same seed gives bit-identical initial
// weights (random on the GPU equals core's generator), and the loss, every gradient and every
// updated weight after one AdamW step agree within f32 tolerance. Every fused kernel runs as an MSL
// kernel: flash attention (forward and backward), RMSNorm, rope, SwiGLU, cross-entropy, multi-tensor AdamW (the trainer's adamwStep) and
// their backwards.
import { backward, crossEntropy, reshape, tensor, type KernelBackend, type Tensor } from '@kiln/core';
import { createCpuBackend } from '@kiln/backend-cpu';
import { adamwStep, createLlamaModel, createMoments, MODEL_PRESETS, type LlamaModel } from '@kiln/trainer';
import { describe, expect, it } from 'vitest';
import { createSimulatedMetalBackend } from '../src/simulator.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();
const config = MODEL_PRESETS.tiny.model;
const batch = 2;
const time = 32;

interface StepResult {
  initial: Map<string, Float32Array>;
  loss: number;
  gradients: Map<string, Float32Array>;
  updated: Map<string, Float32Array>;
}

async function values(x: Tensor): Promise<Float32Array> {
  return Float32Array.from((await x.data()) as ArrayLike<number>);
}

async function trainingStep(backend: KernelBackend): Promise<StepResult> {
  const model: LlamaModel = createLlamaModel(config, { backend, seed: 1234 });
  const initial = new Map<string, Float32Array>();
  for (const [name, parameter] of model.parameters) initial.set(name, await values(parameter));
  const tokens = Int32Array.from(
    { length: batch * (time + 1) },
    (_, i) => (i * 37 + ((i * i) % 11)) % config.vocabSize,
  );
  const ids = tensor(
    Int32Array.from({ length: batch * time }, (_, i) => tokens[Math.floor(i / time) * (time + 1) + (i % time)]),
    [batch, time],
    { dtype: 'i32', backend },
  );
  const targets = tensor(
    Int32Array.from({ length: batch * time }, (_, i) => tokens[Math.floor(i / time) * (time + 1) + (i % time) + 1]),
    [batch * time],
    { dtype: 'i32', backend },
  );
  const logits = model.forward(ids, { attention: 'flash', checkpointActivations: false, computeDType: 'f32' });
  const loss = crossEntropy(reshape(logits, [batch * time, config.vocabSize]), targets);
  backward(loss);
  const gradients = new Map<string, Float32Array>();
  for (const [name, parameter] of model.parameters) gradients.set(name, await values(parameter.grad!));
  const moments = createMoments(model.parameters);
  // eps 1e-3 rather than training's 1e-8: with 1e-8 the first step moves a weight whose gradient is
  // ≈ 0 by ±lr on either backend, decided by f32 rounding noise, which says nothing about the kernels.
  adamwStep(model.parameters, moments, {
    lr: 1e-2,
    optimizer: { lr: 1e-2, beta1: 0.9, beta2: 0.95, eps: 1e-3, weightDecay: 0.1, gradClip: 0 },
    step: 1,
    gradientScale: 1,
  });
  const updated = new Map<string, Float32Array>();
  for (const [name, parameter] of model.parameters) updated.set(name, await values(parameter));
  const result = { initial, loss: (await values(loss))[0], gradients, updated };
  for (const tensorValue of [ids, targets, logits, loss]) tensorValue.dispose();
  model.dispose();
  return result;
}

function worstRelative(a: Float32Array, b: Float32Array): number {
  let scale = 0;
  let worst = 0;
  for (let i = 0; i < a.length; i++) scale = Math.max(scale, Math.abs(b[i]));
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]) / Math.max(scale, 1e-30));
  return worst;
}

describe.skipIf(skipReason !== undefined)(
  `one training step of the tiny reference model${skipReason ? ` (${skipReason})` : ''}`,
  () => {
    it('matches backend-cpu: identical initial weights, loss, gradients and AdamW update within f32 tolerance', async () => {
      const cpu = createCpuBackend();
      const metal = createSimulatedMetalBackend();
      try {
        const expected = await trainingStep(cpu);
        metal.recordDispatches(true);
        const actual = await trainingStep(metal);
        const kernels = new Set(metal.takeDispatches().map((dispatch) => dispatch.kernel));
        metal.recordDispatches(false);
        for (const kernel of [
          'rms_norm_rows_f32',
          'rms_norm_backward_rows_f32',
          'rope_f32',
          'swiglu_f32',
          'swiglu_backward_f32',
          'cross_entropy_rows_f32',
          'cross_entropy_backward_rows_f32',
          'adamw_multi_f32_f32',
        ])
          expect(kernels, kernel).toContain(kernel);
        expect([...actual.initial.keys()]).toEqual([...expected.initial.keys()]);
        expect(actual.initial.size).toBeGreaterThan(10);
        for (const [name, weights] of expected.initial)
          expect(Buffer.from(actual.initial.get(name)!.buffer).equals(Buffer.from(weights.buffer)), name).toBe(true);
        expect(actual.loss).toBeCloseTo(expected.loss, 4);
        expect(Math.abs(actual.loss - Math.log(config.vocabSize))).toBeLessThan(0.5);
        for (const [name, gradient] of expected.gradients)
          expect(worstRelative(actual.gradients.get(name)!, gradient), `gradient of ${name}`).toBeLessThan(1e-4);
        for (const [name, weights] of expected.updated)
          expect(worstRelative(actual.updated.get(name)!, weights), `updated ${name}`).toBeLessThan(1e-5);
      } finally {
        metal.dispose();
        cpu.dispose?.();
      }
    });
  },
);
