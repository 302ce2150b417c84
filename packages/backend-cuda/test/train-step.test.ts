// A whole training step of the tiny reference model (the trainer's "tiny" preset: vocab 256,
// ctx 64, d 64, 2 layers, 4 heads, mlp 192, batch 8) on the simulated CUDA backend — native fused
// kernels and kiln's matmul kernels running in gpu-sim — and on @kiln/backend-cpu, from the same
// seed: the initial parameters must be identical (both draw from kiln's Philox stream), then
// loss, every parameter gradient, the gradient norm (clipping) and the parameters and moments
// after AdamW must agree within f32 tolerance:
//   loss and gradient norm: |Δ| ≤ 1e-5·|value|;
//   each gradient, each AdamW moment: max |Δ| ≤ 1e-4 · max |value| of that tensor;
//   parameters after the update: max |Δ| ≤ 1e-6 + 1e-2·lr (lr = 3e-4: 1% of one step).
// The measured maxima are printed (see docs/backend-cuda.md for the figures).
import { backward, crossEntropy, mul, noGrad, tensor, tidy, type KernelBackend, type Tensor } from '@kiln/core';
import { createCpuBackend } from '@kiln/backend-cpu';
import {
  clearGradients,
  createLlamaModel,
  createMoments,
  disposeMoments,
  DynamicLossScaler,
  MODEL_PRESETS,
  runTrainStep,
  type AdamWMoments,
  type ForwardOptions,
  type LanguageModel,
  type OptimizerConfig,
} from '@kiln/trainer';
import { afterAll, describe, expect, it } from 'vitest';
import { createSimulatedCudaBackend } from '../src/simulator.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();
const PRESET = MODEL_PRESETS.tiny;
const BATCH = PRESET.batchSize;
const CONTEXT = PRESET.model.contextLength;
const OPTIMIZER: OptimizerConfig = { lr: 3e-4, beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0.1, gradClip: 1 };
const FORWARD: ForwardOptions = { attention: 'naive', checkpointActivations: false, computeDType: 'f32' };
const SEED = 20240917;

/** Deterministic token windows (xorshift32): inputs and next-token targets. */
function batch(): { inputs: Int32Array; targets: Int32Array } {
  let state = 12345;
  const next = () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) % PRESET.model.vocabSize;
  };
  const inputs = new Int32Array(BATCH * CONTEXT);
  const targets = new Int32Array(BATCH * CONTEXT);
  for (let row = 0; row < BATCH; row++) {
    let token = next();
    for (let t = 0; t < CONTEXT; t++) {
      inputs[row * CONTEXT + t] = token;
      token = next();
      targets[row * CONTEXT + t] = token;
    }
  }
  return { inputs, targets };
}

interface StepRecord {
  parameters0: Map<string, Float32Array>;
  loss: number;
  gradients: Map<string, Float32Array>;
  stepLoss: number;
  gradNorm: number;
  parameters1: Map<string, Float32Array>;
  moments: Map<string, { m: Float32Array; v: Float32Array }>;
}

async function read(tensors: Map<string, Tensor>): Promise<Map<string, Float32Array>> {
  const values = new Map<string, Float32Array>();
  for (const [name, value] of tensors) values.set(name, Float32Array.from(await value.data()));
  return values;
}

/** Forward + backward (loss, gradients), then one full trainer step (clip + AdamW) on `backend`. */
async function trainStep(backend: KernelBackend): Promise<StepRecord> {
  const { inputs, targets } = batch();
  const model: LanguageModel = createLlamaModel(PRESET.model, { backend, seed: SEED });
  const moments: AdamWMoments = createMoments(model.parameters);
  try {
    const parameters0 = await read(model.parameters);
    const loss = tidy(() => {
      const ids = tensor(inputs, [BATCH, CONTEXT], { dtype: 'i32', backend });
      const labels = tensor(targets, [BATCH, CONTEXT], { dtype: 'i32', backend });
      const value = crossEntropy(model.forward(ids, FORWARD), labels);
      backward(value);
      return noGrad(() => mul(value, 1));
    });
    const lossValue = (await loss.data())[0];
    loss.dispose();
    const gradients = new Map<string, Float32Array>();
    for (const [name, parameter] of model.parameters)
      gradients.set(name, Float32Array.from(await parameter.grad!.data()));
    clearGradients(model.parameters);

    const environment = {
      model,
      moments,
      backend,
      forwardOptions: FORWARD,
      optimizer: OPTIMIZER,
      scaler: new DynamicLossScaler({ enabled: false }),
      contextLength: CONTEXT,
      notice: () => undefined,
    };
    const outcome = await runTrainStep(
      environment,
      { microBatchSize: BATCH, optimizerStep: 0 },
      { step: 1, batchSize: BATCH, inputs, targets, lr: OPTIMIZER.lr },
    );
    const parameters1 = await read(model.parameters);
    const momentValues = new Map<string, { m: Float32Array; v: Float32Array }>();
    for (const [name, { m, v }] of moments)
      momentValues.set(name, { m: Float32Array.from(await m.data()), v: Float32Array.from(await v.data()) });
    return {
      parameters0,
      loss: lossValue,
      gradients,
      stepLoss: outcome.loss,
      gradNorm: outcome.gradNorm,
      parameters1,
      moments: momentValues,
    };
  } finally {
    disposeMoments(moments);
    model.dispose();
  }
}

function maxAbs(values: Float32Array): number {
  let worst = 0;
  for (const value of values) worst = Math.max(worst, Math.abs(value));
  return worst;
}

function maxDifference(a: Float32Array, b: Float32Array): number {
  expect(a.length).toBe(b.length);
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  return worst;
}

describe.skipIf(skipReason !== undefined)(
  `one training step of the tiny reference model: simulated CUDA vs CPU${skipReason ? ` (${skipReason})` : ''}`,
  () => {
    const cuda = createSimulatedCudaBackend({ matmul: 'kiln' });
    const cpu = createCpuBackend();
    afterAll(() => {
      cuda.dispose();
      cpu.dispose?.();
    });

    it('gives the same loss, gradients, clipped norm and AdamW update within f32 tolerance', async () => {
      const started = performance.now();
      const onCuda = await trainStep(cuda);
      const cudaSeconds = (performance.now() - started) / 1000;
      const onCpu = await trainStep(cpu);
      expect(
        cuda.capabilities.supports('crossEntropy', 'f32') && cuda.capabilities.supports('rmsNormBackward', 'f32'),
      ).toBe(true);

      for (const [name, values] of onCpu.parameters0)
        expect(maxDifference(onCuda.parameters0.get(name)!, values), `initial ${name}`).toBe(0);
      const lossError = Math.abs(onCuda.loss - onCpu.loss);
      expect(lossError).toBeLessThanOrEqual(1e-5 * Math.abs(onCpu.loss));
      expect(Math.abs(onCuda.stepLoss - onCpu.stepLoss)).toBeLessThanOrEqual(1e-5 * Math.abs(onCpu.stepLoss));
      const normError = Math.abs(onCuda.gradNorm - onCpu.gradNorm) / onCpu.gradNorm;
      expect(normError).toBeLessThanOrEqual(1e-5);

      let gradientError = 0;
      let momentError = 0;
      let parameterError = 0;
      for (const [name, expected] of onCpu.gradients) {
        const relative = maxDifference(onCuda.gradients.get(name)!, expected) / Math.max(maxAbs(expected), 1e-30);
        expect(relative, `gradient of ${name}`).toBeLessThanOrEqual(1e-4);
        gradientError = Math.max(gradientError, relative);
        const { m, v } = onCpu.moments.get(name)!;
        const got = onCuda.moments.get(name)!;
        for (const [moment, reference] of [
          [got.m, m],
          [got.v, v],
        ] as const) {
          const momentRelative = maxDifference(moment, reference) / Math.max(maxAbs(reference), 1e-30);
          expect(momentRelative, `AdamW moment of ${name}`).toBeLessThanOrEqual(1e-4);
          momentError = Math.max(momentError, momentRelative);
        }
        const updated = maxDifference(onCuda.parameters1.get(name)!, onCpu.parameters1.get(name)!);
        expect(updated, `updated ${name}`).toBeLessThanOrEqual(1e-6 + 1e-2 * OPTIMIZER.lr);
        parameterError = Math.max(parameterError, updated);
      }
      console.log(
        `tiny model, batch ${BATCH}×${CONTEXT}: loss ${onCpu.loss.toFixed(6)} (|Δ| ${lossError.toExponential(2)}), grad norm ${onCpu.gradNorm.toFixed(6)} ` +
          `(rel Δ ${normError.toExponential(2)}); max gradient error ${gradientError.toExponential(2)} of the tensor's max |g|, ` +
          `moments ${momentError.toExponential(2)}, parameters after AdamW ${parameterError.toExponential(2)} absolute; simulated step ${cudaSeconds.toFixed(1)} s`,
      );
    });
  },
);
