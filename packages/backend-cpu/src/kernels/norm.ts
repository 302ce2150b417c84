/**
 * rmsNorm (forward, backward) and layerNorm over the last axis of [rows, cols].
 * rmsNorm: rstd = 1/√(mean(x²) + eps), out = x·rstd·weight, rstd [rows] f32.
 * rmsNormBackward: x̂ = x·rstd, g = dy·weight, dx = rstd·(g − x̂·mean(g·x̂)), dWeight = Σ_rows dy·x̂.
 * layerNorm: (x − mean)/√(var + eps)·weight + bias with the biased variance (two passes).
 * Numerics: float64 row statistics and dWeight accumulation, one rounding per stored value.
 */
import type { TensorRef } from '@kiln/core';
import type { TensorAccess } from '../tensor-access.js';

/** rmsNorm on f32 arrays. */
export function rmsNormF32(
  x: Float32Array,
  weight: Float32Array,
  out: Float32Array,
  rstd: Float32Array,
  rows: number,
  cols: number,
  eps: number,
): void {
  for (let r = 0; r < rows; r++) {
    const base = r * cols;
    let squares = 0;
    for (let c = 0; c < cols; c++) squares += x[base + c] * x[base + c];
    const scale = 1 / Math.sqrt(squares / cols + eps);
    rstd[r] = scale;
    for (let c = 0; c < cols; c++) out[base + c] = x[base + c] * scale * weight[c];
  }
}

/** rmsNormBackward on f32 arrays (dWeight overwritten). */
export function rmsNormBackwardF32(
  x: Float32Array,
  weight: Float32Array,
  rstd: Float32Array,
  dy: Float32Array,
  dx: Float32Array,
  dWeight: Float32Array,
  rows: number,
  cols: number,
): void {
  const weightSums = new Float64Array(cols);
  for (let r = 0; r < rows; r++) {
    const base = r * cols;
    const scale = rstd[r];
    let dot = 0;
    for (let c = 0; c < cols; c++) {
      const normalized = x[base + c] * scale;
      dot += dy[base + c] * weight[c] * normalized;
      weightSums[c] += dy[base + c] * normalized;
    }
    const mean = cols > 0 ? dot / cols : 0;
    for (let c = 0; c < cols; c++) dx[base + c] = scale * (dy[base + c] * weight[c] - x[base + c] * scale * mean);
  }
  dWeight.set(weightSums);
}

/** layerNorm on f32 arrays. */
export function layerNormF32(
  x: Float32Array,
  weight: Float32Array,
  bias: Float32Array,
  out: Float32Array,
  rows: number,
  cols: number,
  eps: number,
): void {
  for (let r = 0; r < rows; r++) {
    const base = r * cols;
    let sum = 0;
    for (let c = 0; c < cols; c++) sum += x[base + c];
    const mean = sum / cols;
    let squares = 0;
    for (let c = 0; c < cols; c++) {
      const centered = x[base + c] - mean;
      squares += centered * centered;
    }
    const scale = 1 / Math.sqrt(squares / cols + eps);
    for (let c = 0; c < cols; c++) out[base + c] = (x[base + c] - mean) * scale * weight[c] + bias[c];
  }
}

/** The rmsNorm kernel on float tensors. */
export function runRmsNorm(
  access: TensorAccess,
  x: TensorRef,
  weight: TensorRef,
  out: TensorRef,
  rstd: TensorRef,
  rows: number,
  cols: number,
  eps: number,
): void {
  const target = access.floatTarget(out, 'rmsNorm');
  const rstdTarget = access.floatTarget(rstd, 'rmsNorm');
  rmsNormF32(access.readFloat(x, 'rmsNorm'), access.readFloat(weight, 'rmsNorm'), target, rstdTarget, rows, cols, eps);
  access.commitFloat(out, target, 'rmsNorm');
  access.commitFloat(rstd, rstdTarget, 'rmsNorm');
}

/** The rmsNormBackward kernel on float tensors. */
export function runRmsNormBackward(
  access: TensorAccess,
  x: TensorRef,
  weight: TensorRef,
  rstd: TensorRef,
  dy: TensorRef,
  dx: TensorRef,
  dWeight: TensorRef,
  rows: number,
  cols: number,
): void {
  const target = access.floatTarget(dx, 'rmsNormBackward');
  const weightTarget = access.floatTarget(dWeight, 'rmsNormBackward');
  rmsNormBackwardF32(
    access.readFloat(x, 'rmsNormBackward'),
    access.readFloat(weight, 'rmsNormBackward'),
    access.readFloat(rstd, 'rmsNormBackward'),
    access.readFloat(dy, 'rmsNormBackward'),
    target,
    weightTarget,
    rows,
    cols,
  );
  access.commitFloat(dx, target, 'rmsNormBackward');
  access.commitFloat(dWeight, weightTarget, 'rmsNormBackward');
}

/** The layerNorm kernel on float tensors. */
export function runLayerNorm(
  access: TensorAccess,
  x: TensorRef,
  weight: TensorRef,
  bias: TensorRef,
  out: TensorRef,
  rows: number,
  cols: number,
  eps: number,
): void {
  const target = access.floatTarget(out, 'layerNorm');
  layerNormF32(
    access.readFloat(x, 'layerNorm'),
    access.readFloat(weight, 'layerNorm'),
    access.readFloat(bias, 'layerNorm'),
    target,
    rows,
    cols,
    eps,
  );
  access.commitFloat(out, target, 'layerNorm');
}
