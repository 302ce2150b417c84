/**
 * Reference AdamW step, in place: m = β1·m + (1−β1)·g; v = β2·v + (1−β2)·g²;
 * p = p·(1 − lr·wd); p = p − lr·(m/(1−β1^step)) / (√(v/(1−β2^step)) + eps).
 * Numerics: float64 from the stored values; m and v are rounded to f32 on store, p to its dtype.
 */
import type { AdamWParams, TensorRef } from '@kiln/core';
import type { ReferenceMemory } from './memory.js';

/** One AdamW update of param, m and v from grad. */
export function referenceAdamw(
  memory: ReferenceMemory,
  param: TensorRef,
  grad: TensorRef,
  m: TensorRef,
  v: TensorRef,
  params: AdamWParams,
): void {
  const parameters = memory.read(param);
  const firstMoment = memory.read(m);
  const secondMoment = memory.read(v);
  adamwValues(parameters, memory.read(grad), firstMoment, secondMoment, params);
  memory.write(param, parameters);
  memory.write(m, firstMoment);
  memory.write(v, secondMoment);
}

/** The AdamW update of float64 arrays, in place on parameters and the moments. */
export function adamwValues(
  parameters: Float64Array,
  gradient: Float64Array,
  firstMoment: Float64Array,
  secondMoment: Float64Array,
  params: AdamWParams,
): void {
  const { lr, beta1, beta2, eps, weightDecay, step } = params;
  const firstCorrection = 1 - beta1 ** step;
  const secondCorrection = 1 - beta2 ** step;
  for (let index = 0; index < parameters.length; index++) {
    const value = gradient[index];
    firstMoment[index] = beta1 * firstMoment[index] + (1 - beta1) * value;
    secondMoment[index] = beta2 * secondMoment[index] + (1 - beta2) * value * value;
    const decayed = parameters[index] * (1 - lr * weightDecay);
    const update = firstMoment[index] / firstCorrection / (Math.sqrt(secondMoment[index] / secondCorrection) + eps);
    parameters[index] = decayed - lr * update;
  }
}
