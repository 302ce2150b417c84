/**
 * adamw: three consecutive steps (step = 1, 2, 3, so bias correction matters) with fresh
 * gradients; after each step param, m and v are compared, then the tested state is reset to the
 * reference's bytes so rounding differences cannot compound across steps. A second set of
 * hyper-parameters has lr·weightDecay = 0.25, large enough that decaying after the update (or
 * adding the decay to the gradient) differs visibly from decaying first.
 */
import { FLOAT_DTYPES, type DType } from '@kiln/core';
import type { AdamWParams } from '@kiln/core';
import { fusedCases, type CaseSettings } from '../case-builder.js';
import { runFused } from '../fused-call.js';
import { bySize } from '../sweeps.js';
import type { ConformanceCase } from '../types.js';

const STEPS = 3;
type Hyper = Omit<AdamWParams, 'step'>;
const HYPER: Hyper = { lr: 1e-2, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0.1 };
const STRONG_DECAY: Hyper = { ...HYPER, lr: 0.5, weightDecay: 0.5 };

function adamwCases(settings: CaseSettings, dtype: DType, length: number, hyper: Hyper = HYPER): ConformanceCase[] {
  const parameters = `length=${length},steps=${STEPS},lr=${hyper.lr},weightDecay=${hyper.weightDecay}`;
  return fusedCases(settings, 'adamw', dtype, parameters, async (context, mode) => {
    const param = context.uniform([length], dtype, -1, 1);
    const m = context.tensor([length], 'f32', new Float64Array(length));
    const v = context.tensor([length], 'f32', new Float64Array(length));
    for (let step = 1; step <= STEPS; step++) {
      // Gradients of very different magnitudes per element, as in real training.
      const grad = context.tensor(
        [length],
        dtype,
        context.random.uniform(length, -1, 1).map((value, i) => value * 10 ** ((i % 5) - 3)),
      );
      const params: AdamWParams = { ...hyper, lr: hyper.lr / step, step };
      runFused(context, mode, 'adamw', (side) => [param[side], grad[side], m[side], v[side], params]);
      await context.expectClose(param, `param after step ${step}`);
      await context.expectClose(m, `m after step ${step}`);
      await context.expectClose(v, `v after step ${step}`);
      for (const state of [param, m, v]) await context.adoptReference(state);
    }
  });
}

/** Every adamw (dtype, length) case. */
export function optimizerCases(settings: CaseSettings): ConformanceCase[] {
  const lengths = bySize(settings.sizes, [1, 37, 0, 4099], 3);
  return FLOAT_DTYPES.flatMap((dtype) => [
    ...lengths.flatMap((length) => adamwCases(settings, dtype, length)),
    ...adamwCases(settings, dtype, 37, STRONG_DECAY),
  ]);
}
