/**
 * rmsNorm and layerNorm (forward, backward) over the last axis of [rows, cols] (the TypeScript
 * path: f16/bf16 data, or KILN_CPU_SIMD=0; simd/emit-rows.ts has the f32 WebAssembly kernels).
 * rmsNorm: rstd = 1/√(mean(x²) + eps), out = x·rstd·weight, rstd [rows] f32.
 * rmsNormBackward: x̂ = x·rstd, g = dy·weight, dx = rstd·(g − x̂·mean(g·x̂)), dWeight = Σ_rows dy·x̂.
 * layerNorm: (x − mean)/√(var + eps)·weight + bias with the biased variance (two passes).
 * layerNormBackward: the row statistics recomputed as the forward takes them, x̂ = (x − mean)·rstd,
 * g = dy·weight, dx = rstd·(g − mean(g) − x̂·mean(g·x̂)), dWeight = Σ_rows dy·x̂, dBias = Σ_rows dy.
 * Numerics: float64 row statistics and dWeight/dBias accumulation, one rounding per stored value.
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

/** layerNormBackward on f32 arrays (dWeight and dBias overwritten). */
export function layerNormBackwardF32(
  x: Float32Array,
  weight: Float32Array,
  dy: Float32Array,
  dx: Float32Array,
  dWeight: Float32Array,
  dBias: Float32Array,
  rows: number,
  cols: number,
  eps: number,
): void {
  const weightSums = new Float64Array(cols);
  const biasSums = new Float64Array(cols);
  for (let r = 0; r < rows; r++) {
    const base = r * cols;
    const [mean, scale] = layerNormStatistics(x, base, cols, eps);
    let gradientSum = 0;
    let projection = 0;
    for (let c = 0; c < cols; c++) {
      const normalized = (x[base + c] - mean) * scale;
      const scaled = dy[base + c] * weight[c];
      gradientSum += scaled;
      projection += scaled * normalized;
      weightSums[c] += dy[base + c] * normalized;
      biasSums[c] += dy[base + c];
    }
    const gradientMean = gradientSum / cols;
    const projectionMean = projection / cols;
    for (let c = 0; c < cols; c++) {
      const normalized = (x[base + c] - mean) * scale;
      dx[base + c] = scale * (dy[base + c] * weight[c] - gradientMean - normalized * projectionMean);
    }
  }
  dWeight.set(weightSums);
  dBias.set(biasSums);
}

/** The row's mean and 1/√(biased variance + eps) (float64), as layerNorm takes them. */
function layerNormStatistics(x: Float32Array, base: number, cols: number, eps: number): [number, number] {
  let sum = 0;
  for (let c = 0; c < cols; c++) sum += x[base + c];
  const mean = sum / cols;
  let squares = 0;
  for (let c = 0; c < cols; c++) {
    const centered = x[base + c] - mean;
    squares += centered * centered;
  }
  return [mean, 1 / Math.sqrt(squares / cols + eps)];
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
    const [mean, scale] = layerNormStatistics(x, base, cols, eps);
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

/** The layerNormBackward kernel on float tensors. */
export function runLayerNormBackward(
  access: TensorAccess,
  x: TensorRef,
  weight: TensorRef,
  dy: TensorRef,
  dx: TensorRef,
  dWeight: TensorRef,
  dBias: TensorRef,
  rows: number,
  cols: number,
  eps: number,
): void {
  const kernel = 'layerNormBackward';
  const [target, weightTarget, biasTarget] = [dx, dWeight, dBias].map((ref) => access.floatTarget(ref, kernel));
  layerNormBackwardF32(
    access.readFloat(x, kernel),
    access.readFloat(weight, kernel),
    access.readFloat(dy, kernel),
    target,
    weightTarget,
    biasTarget,
    rows,
    cols,
    eps,
  );
  access.commitFloat(dx, target, kernel);
  access.commitFloat(dWeight, weightTarget, kernel);
  access.commitFloat(dBias, biasTarget, kernel);
}
