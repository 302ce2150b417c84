// The device optimizer's deferred reads (issue 15): each step writes its [loss, Σ‖grad‖²] into a
// device record and the device counts the updates it applied, so the host may read every N steps.
// Reading every step or every few steps — with skipped (non-finite) steps between reads, which must
// not advance AdamW's t — gives the same weights, moments and values bit for bit, and the applied
// count is exact. Runs on the CPU backend: the ops are core's, the same ones a CUDA graph captures.
import { createCpuBackend } from '@kiln/backend-cpu';
import { adamwDeviceScalars, tensor, type KernelBackend, type Tensor } from '@kiln/core';
import { describe, expect, it } from 'vitest';
import {
  adamwStepScalars,
  DeviceOptimizer,
  MAX_DEFERRED_STEPS,
  type DeferredValues,
} from '../src/train/device-optimizer.js';
import { createMoments, disposeMoments } from '../src/train/optimizer.js';

const OPTIMIZER = { lr: 1e-2, beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0.1, gradClip: 1 };
/** Steps 3 and 4 have a non-finite loss or norm: their updates are skipped on the device. */
const NON_FINITE: Record<number, [number, number]> = { 3: [Number.NaN, 2], 4: [1.5, Number.POSITIVE_INFINITY] };

/** A matrix (decayed) and a vector (not), with gradients that change every step. */
function setup(backend: KernelBackend) {
  const parameters = new Map<string, Tensor>([
    ['weight', tensor([0.5, -1, 2, 0.25, -0.75, 1.5], [2, 3], { backend }).requireGrad()],
    ['bias', tensor([0.1, -0.2, 0.3], [3], { backend }).requireGrad()],
  ]);
  return { parameters, moments: createMoments(parameters) };
}

/** Runs `steps` steps, reading the record after the steps `readAfter` lists; returns every read and the final state bytes. */
async function run(steps: number, readAfter: (step: number) => boolean) {
  const backend = createCpuBackend({ threads: 1 });
  const { parameters, moments } = setup(backend);
  const device = new DeviceOptimizer(backend);
  const reads: DeferredValues[] = [];
  let optimizerStep = 0;
  try {
    for (let step = 1; step <= steps; step++) {
      const lr = OPTIMIZER.lr * (1 - step / 20);
      for (const [name, parameter] of parameters)
        parameter.grad = tensor(
          Array.from({ length: parameter.size }, (_, index) => Math.sin(step * 3 + index + name.length)),
          [...parameter.shape],
          { backend },
        );
      const [lossValue, normValue] = NON_FINITE[step] ?? [2 / step, 0.5 + step];
      device.stage(parameters, moments, OPTIMIZER, lr, optimizerStep + 1);
      const loss = tensor([lossValue], [], { backend });
      const normSquared = tensor([normValue], [], { backend });
      device.apply(parameters, moments, {
        optimizer: OPTIMIZER,
        lossScale: 1,
        lr,
        step: optimizerStep + 1,
        loss,
        normSquared,
      });
      loss.dispose();
      normSquared.dispose();
      for (const parameter of parameters.values()) {
        parameter.grad?.dispose();
        parameter.grad = null;
      }
      device.recorded(step);
      if (readAfter(step)) {
        const values = await device.read();
        optimizerStep += values.applied;
        reads.push(values);
      }
    }
    const state = [...parameters.values(), ...[...moments.values()].flatMap((moment) => [moment.m, moment.v])];
    const bytes = Buffer.concat(await Promise.all(state.map(async (x) => Buffer.from((await x.data()).buffer))));
    return { reads, optimizerStep, bytes };
  } finally {
    device.release();
    disposeMoments(moments);
    for (const parameter of parameters.values()) parameter.dispose();
    backend.dispose();
  }
}

describe('device optimizer: deferred reads', () => {
  it('reading every step or every few steps gives the same bits, values and applied count, skipped steps included', async () => {
    const everyStep = await run(8, () => true);
    const deferred = await run(8, (step) => step === 5 || step === 8);
    expect(everyStep.bytes.equals(deferred.bytes)).toBe(true);
    expect(deferred.optimizerStep).toBe(6);
    expect(everyStep.optimizerStep).toBe(6);
    expect(deferred.reads.map((read) => read.applied)).toEqual([3, 3]);
    const flat = (reads: DeferredValues[]) => reads.flatMap((read) => read.steps);
    expect(flat(deferred.reads)).toEqual(flat(everyStep.reads));
    expect(flat(deferred.reads).map((entry) => entry.step)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(Number.isNaN(flat(deferred.reads)[2].loss)).toBe(true);
    expect(flat(deferred.reads)[3].normSquared).toBe(Number.POSITIVE_INFINITY);
    expect(flat(deferred.reads)[0]).toEqual({ step: 1, loss: 2, normSquared: 1.5 });
  });

  it("adamwStepScalars gives adamwDeviceScalars' step size and bias correction bit for bit", () => {
    for (const [lr, beta1, beta2] of [
      [1e-3, 0.9, 0.95],
      [3.7e-4, 0.85, 0.999],
      [2.5e-2, 0.5, 0.9],
    ] as const) {
      for (let step = 1; step <= 2000; step += step < 100 ? 1 : 37) {
        const expected = adamwDeviceScalars({ lr, beta1, beta2, step, weightDecays: [] });
        expect(adamwStepScalars(lr, beta1, beta2, step)).toEqual([expected[0], expected[1]]);
      }
    }
  });

  it('refuses a step when the record holds MAX_DEFERRED_STEPS unread steps', async () => {
    const backend = createCpuBackend({ threads: 1 });
    const { parameters, moments } = setup(backend);
    const device = new DeviceOptimizer(backend);
    try {
      for (let step = 1; step <= MAX_DEFERRED_STEPS; step++) device.recorded(step);
      device.stage(parameters, moments, OPTIMIZER, 1e-3, 1);
      for (const parameter of parameters.values())
        parameter.grad = tensor(new Array(parameter.size).fill(1), [...parameter.shape], { backend });
      const scalar = tensor([1], [], { backend });
      expect(() =>
        device.apply(parameters, moments, {
          optimizer: OPTIMIZER,
          lossScale: 1,
          lr: 1e-3,
          step: 1,
          loss: scalar,
          normSquared: scalar,
        }),
      ).toThrow(/64 steps are unread; the record holds 64/);
      scalar.dispose();
    } finally {
      device.release();
      disposeMoments(moments);
      for (const parameter of parameters.values()) parameter.dispose();
      backend.dispose();
    }
  });
});
