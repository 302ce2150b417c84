/**
 * sumOfSquaresMulti and adamwMulti: lists of tensors of odd sizes (size 1, empty, a few thousand,
 * one long enough to need several GPU blocks), with gradients of the case's dtype or a mix of f32
 * and bf16. sumOfSquaresMulti is compared with a tolerance scaled by the total element count;
 * adamwMulti runs two steps — a number scale, then a device-scalar scale — and a step whose guard
 * holds NaN, after which every state must keep its bytes. Where the tested side runs the
 * device-scalars form (composed, or natively when capabilities.adamwMultiDeviceScalars), two more
 * steps read stepSize, the bias correction and the decays from options.deviceScalars — rewritten
 * between them with a new lr and step, while options.lr and options.step keep stale values the
 * kernel must not use.
 */
import type { AdamWMultiParams } from '@kiln/core';
import { adamwDeviceScalars, FLOAT_DTYPES, type DType } from '@kiln/core';
import { fusedCases, type CaseSettings } from '../case-builder.js';
import type { CaseContext, Pair } from '../case-context.js';
import { runFused } from '../fused-call.js';
import { bySize } from '../sweeps.js';
import type { ConformanceCase } from '../types.js';

/** Gradient dtypes of one case: every tensor in the case's dtype, or f32 and bf16 alternating. */
type GradientMix = 'same' | 'mixed';

function gradientDType(dtype: DType, mix: GradientMix, index: number): DType {
  if (mix === 'same') return dtype;
  return index % 2 === 0 ? 'f32' : 'bf16';
}

/** Gradients of very different magnitudes per tensor and per element, as in real training. */
function gradients(context: CaseContext, lengths: readonly number[], dtype: DType, mix: GradientMix): Pair[] {
  return lengths.map((length, index) => {
    const values = context.random
      .uniform(length, -1, 1)
      .map((value, element) => value * 10 ** ((element % 5) - 3 + (index % 2)));
    return context.tensor([length], gradientDType(dtype, mix, index), values);
  });
}

function sumOfSquaresCases(
  settings: CaseSettings,
  dtype: DType,
  lengths: readonly number[],
  mix: GradientMix,
): ConformanceCase[] {
  const parameters = `lengths=${lengths.join('+')},grads=${mix}`;
  return fusedCases(settings, 'sumOfSquaresMulti', dtype, parameters, async (context, mode) => {
    const tensors = gradients(context, lengths, dtype, mix);
    const out = context.output([], 'f32');
    runFused(context, mode, 'sumOfSquaresMulti', (side) => [tensors.map((tensor) => tensor[side]), out[side]]);
    const total = lengths.reduce((sum, length) => sum + length, 0);
    await context.expectClose(out, 'sum of squares', { reductionLength: Math.max(total, 1) });
  });
}

const HYPER = { lr: 1e-2, beta1: 0.9, beta2: 0.999, eps: 1e-8 };

function adamwMultiCases(
  settings: CaseSettings,
  dtype: DType,
  lengths: readonly number[],
  mix: GradientMix,
): ConformanceCase[] {
  const parameters = `lengths=${lengths.join('+')},grads=${mix}`;
  return fusedCases(settings, 'adamwMulti', dtype, parameters, async (context, mode) => {
    const params = lengths.map((length) => context.uniform([length], dtype, -1, 1));
    const ms = lengths.map((length) => context.tensor([length], 'f32', new Float64Array(length)));
    const vs = lengths.map((length) => context.tensor([length], 'f32', new Float64Array(length)));
    const weightDecays = lengths.map((_, index) => (index % 2 === 0 ? 0.1 : 0));
    const states = [...params, ...ms, ...vs];
    const expectStates = async (label: string) => {
      for (const [index, param] of params.entries()) await context.expectClose(param, `param ${index} ${label}`);
      for (const [index, m] of ms.entries()) await context.expectClose(m, `m ${index} ${label}`);
      for (const [index, v] of vs.entries()) await context.expectClose(v, `v ${index} ${label}`);
      for (const state of states) await context.adoptReference(state);
    };
    const run = (grads: Pair[], options: (side: 'tested' | 'reference') => AdamWMultiParams) =>
      runFused(context, mode, 'adamwMulti', (side) => [
        params.map((pair) => pair[side]),
        grads.map((pair) => pair[side]),
        ms.map((pair) => pair[side]),
        vs.map((pair) => pair[side]),
        options(side),
      ]);
    // Step 1: the scale is a number.
    run(gradients(context, lengths, dtype, mix), () => ({ ...HYPER, step: 1, weightDecays, gradientScale: 0.5 }));
    await expectStates('after step 1 (number scale)');
    // Step 2: the scale is a device scalar, and a finite guard lets the update through.
    const scale = context.tensor([1], 'f32', [0.25]);
    const finiteGuard = context.tensor([1], 'f32', [3]);
    run(gradients(context, lengths, dtype, mix), (side) => ({
      ...HYPER,
      step: 2,
      weightDecays,
      gradientScale: scale[side],
      skipIfNonFinite: finiteGuard[side],
    }));
    await expectStates('after step 2 (device scale)');
    // Step 3: a NaN guard makes the step a no-op: every state keeps the bytes it had.
    const before = await Promise.all(states.map((state) => context.read(state, 'tested')));
    const nanGuard = context.tensor([1], 'f32', [NaN]);
    run(gradients(context, lengths, dtype, mix), (side) => ({
      ...HYPER,
      step: 3,
      weightDecays,
      gradientScale: 1,
      skipIfNonFinite: nanGuard[side],
    }));
    for (const [index, state] of states.entries())
      await context.expectValues(state, `state ${index} after a step guarded by NaN`, before[index], { exact: true });
    if (mode !== 'composed' && context.backend.capabilities.adamwMultiDeviceScalars !== true) return;
    // Steps 3 and 4 from device scalars (a schedule's lr per step), with a device clip scale; options.lr/step are stale on purpose.
    for (const [step, lr] of [
      [3, 4e-3],
      [4, 2.5e-3],
    ] as const) {
      const deviceScalars = context.tensor(
        [2 + lengths.length],
        'f32',
        adamwDeviceScalars({ lr, beta1: HYPER.beta1, beta2: HYPER.beta2, step, weightDecays }),
      );
      run(gradients(context, lengths, dtype, mix), (side) => ({
        ...HYPER,
        lr: 1,
        step: 1,
        weightDecays,
        gradientScale: scale[side],
        skipIfNonFinite: finiteGuard[side],
        deviceScalars: deviceScalars[side],
      }));
      await expectStates(`after step ${step} (device scalars, lr ${lr})`);
    }
  });
}

/** Every sumOfSquaresMulti and adamwMulti case. */
export function multiTensorCases(settings: CaseSettings): ConformanceCase[] {
  const lists = bySize(settings.sizes, [[1, 37, 0, 4099], [70001, 5], [0]], 2);
  return FLOAT_DTYPES.flatMap((dtype) => [
    ...lists.flatMap((lengths) => sumOfSquaresCases(settings, dtype, lengths, 'same')),
    ...sumOfSquaresCases(settings, dtype, [3, 1, 129], 'mixed'),
    ...lists.flatMap((lengths) => adamwMultiCases(settings, dtype, lengths, 'same')),
    ...adamwMultiCases(settings, dtype, [3, 1, 129], 'mixed'),
  ]);
}
