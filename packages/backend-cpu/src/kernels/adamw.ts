/**
 * One fused AdamW step in place: m = β1·m + (1−β1)·g; v = β2·v + (1−β2)·g²; p = p·(1 − lr·wd);
 * p = p − lr·(m/(1−β1^step)) / (√(v/(1−β2^step)) + eps). m and v are f32; p and g any float dtype.
 * Numerics: float64 per element, one rounding per stored value.
 */
import type { AdamWParams, TensorRef } from '@kiln/core';
import type { TensorAccess } from '../tensor-access.js';

/** The AdamW update on f32 arrays (param, m, v updated in place). */
export function adamwF32(
  param: Float32Array,
  grad: Float32Array,
  m: Float32Array,
  v: Float32Array,
  params: AdamWParams,
): void {
  const { lr, beta1, beta2, eps, weightDecay, step } = params;
  const firstCorrection = 1 - Math.pow(beta1, step);
  const secondCorrection = 1 - Math.pow(beta2, step);
  const decay = 1 - lr * weightDecay;
  for (let i = 0; i < param.length; i++) {
    const g = grad[i];
    const first = beta1 * m[i] + (1 - beta1) * g;
    const second = beta2 * v[i] + (1 - beta2) * g * g;
    m[i] = first;
    v[i] = second;
    param[i] = param[i] * decay - (lr * (first / firstCorrection)) / (Math.sqrt(second / secondCorrection) + eps);
  }
}

/** The adamw kernel (in place on param, m, v). */
export function runAdamw(
  access: TensorAccess,
  param: TensorRef,
  grad: TensorRef,
  m: TensorRef,
  v: TensorRef,
  params: AdamWParams,
): void {
  // readFloat is the storage itself for f32, and a decoded copy (committed below) otherwise.
  const values = access.readFloat(param, 'adamw');
  const first = access.readFloat(m, 'adamw');
  const second = access.readFloat(v, 'adamw');
  adamwF32(values, access.readFloat(grad, 'adamw'), first, second, params);
  access.commitFloat(param, values, 'adamw');
  access.commitFloat(m, first, 'adamw');
  access.commitFloat(v, second, 'adamw');
}
