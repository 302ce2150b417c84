/**
 * Reference RMSNorm and LayerNorm (forward, backward) over the last axis of x [rows, cols];
 * weight and bias are [cols]; rstd, dWeight and dBias are f32. Numerics: float64, means divide by cols
 * (cols = 0 gives NaN statistics), LayerNorm uses the biased variance around the exact mean.
 */
import type { TensorRef } from '@kiln/core';
import type { ReferenceMemory } from './memory.js';

/** rstd = 1/√(mean(x²) + eps), out = x · rstd · weight. */
export function referenceRmsNorm(
  memory: ReferenceMemory,
  x: TensorRef,
  weight: TensorRef,
  out: TensorRef,
  rstd: TensorRef,
  rows: number,
  cols: number,
  eps: number,
): void {
  const values = memory.read(x);
  const scale = memory.read(weight);
  const result = new Float64Array(rows * cols);
  const inverse = new Float64Array(rows);
  for (let row = 0; row < rows; row++) {
    const start = row * cols;
    let sumSquares = 0;
    for (let col = 0; col < cols; col++) sumSquares += values[start + col] ** 2;
    inverse[row] = 1 / Math.sqrt(sumSquares / cols + eps);
    for (let col = 0; col < cols; col++) result[start + col] = values[start + col] * inverse[row] * scale[col];
  }
  memory.write(out, result);
  memory.write(rstd, inverse);
}

/** x̂ = x·rstd, g = dy·weight: dx = rstd·(g − x̂·mean(g·x̂)), dWeight[j] = Σ_rows dy·x̂ (overwritten). */
export function referenceRmsNormBackward(
  memory: ReferenceMemory,
  x: TensorRef,
  weight: TensorRef,
  rstd: TensorRef,
  dy: TensorRef,
  dx: TensorRef,
  dWeight: TensorRef,
  rows: number,
  cols: number,
): void {
  const values = memory.read(x);
  const scale = memory.read(weight);
  const inverse = memory.read(rstd);
  const gradient = memory.read(dy);
  const inputGradient = new Float64Array(rows * cols);
  const weightGradient = new Float64Array(cols);
  for (let row = 0; row < rows; row++) {
    const start = row * cols;
    let projection = 0;
    for (let col = 0; col < cols; col++) {
      const normalized = values[start + col] * inverse[row];
      projection += gradient[start + col] * scale[col] * normalized;
      weightGradient[col] += gradient[start + col] * normalized;
    }
    const mean = projection / cols;
    for (let col = 0; col < cols; col++) {
      const normalized = values[start + col] * inverse[row];
      inputGradient[start + col] = inverse[row] * (gradient[start + col] * scale[col] - normalized * mean);
    }
  }
  memory.write(dx, inputGradient);
  memory.write(dWeight, weightGradient);
}

/** The row's mean and 1/√(biased variance + eps), as the forward computes them. */
function layerNormStatistics(values: Float64Array, start: number, cols: number, eps: number): [number, number] {
  let sum = 0;
  for (let col = 0; col < cols; col++) sum += values[start + col];
  const mean = sum / cols;
  let sumSquares = 0;
  for (let col = 0; col < cols; col++) sumSquares += (values[start + col] - mean) ** 2;
  return [mean, 1 / Math.sqrt(sumSquares / cols + eps)];
}

/** out = (x − mean)/√(var + eps) · weight + bias, biased variance. */
export function referenceLayerNorm(
  memory: ReferenceMemory,
  x: TensorRef,
  weight: TensorRef,
  bias: TensorRef,
  out: TensorRef,
  rows: number,
  cols: number,
  eps: number,
): void {
  const values = memory.read(x);
  const scale = memory.read(weight);
  const shift = memory.read(bias);
  const result = new Float64Array(rows * cols);
  for (let row = 0; row < rows; row++) {
    const start = row * cols;
    const [mean, inverse] = layerNormStatistics(values, start, cols, eps);
    for (let col = 0; col < cols; col++)
      result[start + col] = (values[start + col] - mean) * inverse * scale[col] + shift[col];
  }
  memory.write(out, result);
}

/**
 * x̂ = (x − mean)·rstd, g = dy·weight: dx = rstd·(g − mean(g) − x̂·mean(g·x̂)), dWeight[j] =
 * Σ_rows dy·x̂, dBias[j] = Σ_rows dy (both overwritten).
 */
export function referenceLayerNormBackward(
  memory: ReferenceMemory,
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
  const values = memory.read(x);
  const scale = memory.read(weight);
  const gradient = memory.read(dy);
  const inputGradient = new Float64Array(rows * cols);
  const weightGradient = new Float64Array(cols);
  const biasGradient = new Float64Array(cols);
  for (let row = 0; row < rows; row++) {
    const start = row * cols;
    const [mean, inverse] = layerNormStatistics(values, start, cols, eps);
    let gradientSum = 0;
    let projection = 0;
    for (let col = 0; col < cols; col++) {
      const normalized = (values[start + col] - mean) * inverse;
      const scaled = gradient[start + col] * scale[col];
      gradientSum += scaled;
      projection += scaled * normalized;
      weightGradient[col] += gradient[start + col] * normalized;
      biasGradient[col] += gradient[start + col];
    }
    for (let col = 0; col < cols; col++) {
      const normalized = (values[start + col] - mean) * inverse;
      const scaled = gradient[start + col] * scale[col];
      inputGradient[start + col] = inverse * (scaled - gradientSum / cols - normalized * (projection / cols));
    }
  }
  memory.write(dx, inputGradient);
  memory.write(dWeight, weightGradient);
  memory.write(dBias, biasGradient);
}
