/**
 * RMSNorm and LayerNorm (forward, backward) composed from primitives, over the last axis of
 * x [rows, cols]. Layout: per-row statistics are [rows] tensors broadcast with strides [1, 0],
 * weight/bias are [cols] broadcast with strides [0, 1]. Numerics: f32 throughout; means divide
 * by cols (so cols = 0 gives NaN statistics, like the definition); LayerNorm uses the two-pass
 * (centered) biased variance.
 */
import type { KernelBackend, TensorRef } from '../kernel-backend.js';
import { columnBroadcast, reshaped, rowBroadcast, scalarBroadcast, withScratch, type Scratch } from './helpers.js';

/** Σ over the last axis of x [rows, cols] divided by cols, as a new f32 [rows]. */
function rowMean(scratch: Scratch, x: TensorRef, rows: number, cols: number): TensorRef {
  const sum = scratch.reduce('sum', x, rows, cols, 1);
  return scratch.binary('div', sum, scalarBroadcast(scratch.constant(cols), sum.shape));
}

/** 1 / sqrt(meanSquare + eps) as a new f32 [rows] (or into `into`). */
function reciprocalRoot(scratch: Scratch, meanSquare: TensorRef, eps: number, into?: TensorRef): TensorRef {
  const shifted = scratch.binary('add', meanSquare, scalarBroadcast(scratch.constant(eps), meanSquare.shape));
  return scratch.unary('rsqrt', shifted, into);
}

/** out = x · rsqrt(mean(x²) + eps) · weight; rstd [rows] f32 receives the rsqrt. */
export function composedRmsNorm(
  backend: KernelBackend,
  x: TensorRef,
  weight: TensorRef,
  out: TensorRef,
  rstd: TensorRef,
  rows: number,
  cols: number,
  eps: number,
): void {
  withScratch(backend, (scratch) => {
    const input = reshaped(scratch.toF32(x), [rows, cols]);
    const meanSquare = rowMean(scratch, scratch.unary('square', input), rows, cols);
    const inverse = scratch.resultFor(rstd, [rows, 1]);
    reciprocalRoot(scratch, meanSquare, eps, inverse);
    scratch.commit(inverse, rstd);
    const normalized = scratch.binary('mul', input, rowBroadcast(inverse, rows, cols));
    const result = scratch.resultFor(out, [rows, cols]);
    scratch.binary('mul', normalized, columnBroadcast(scratch.toF32(weight), rows, cols), result);
    scratch.commit(result, out);
  });
}

/** dx = rstd · (g − x̂ · mean(g · x̂)) with x̂ = x · rstd, g = dy · weight; dWeight = Σ_rows dy · x̂. */
export function composedRmsNormBackward(
  backend: KernelBackend,
  x: TensorRef,
  weight: TensorRef,
  rstd: TensorRef,
  dy: TensorRef,
  dx: TensorRef,
  dWeight: TensorRef,
  rows: number,
  cols: number,
): void {
  withScratch(backend, (scratch) => {
    const input = reshaped(scratch.toF32(x), [rows, cols]);
    const gradient = reshaped(scratch.toF32(dy), [rows, cols]);
    const inverse = rowBroadcast(scratch.toF32(rstd), rows, cols);
    const normalized = scratch.binary('mul', input, inverse);
    const scaledGradient = scratch.binary('mul', gradient, columnBroadcast(scratch.toF32(weight), rows, cols));
    const projection = rowMean(scratch, scratch.binary('mul', scaledGradient, normalized), rows, cols);
    const along = scratch.binary('mul', normalized, rowBroadcast(projection, rows, cols));
    const residual = scratch.binary('sub', scaledGradient, along);
    const inputGradient = scratch.resultFor(dx, [rows, cols]);
    scratch.binary('mul', residual, inverse, inputGradient);
    scratch.commit(inputGradient, dx);

    const weightTerms = scratch.binary('mul', gradient, normalized);
    const weightGradient = scratch.resultFor(dWeight, [1, cols]);
    scratch.reduce('sum', weightTerms, 1, rows, cols, weightGradient);
    scratch.commit(weightGradient, dWeight);
  });
}

/** out = (x − mean) / sqrt(var + eps) · weight + bias, biased variance. */
export function composedLayerNorm(
  backend: KernelBackend,
  x: TensorRef,
  weight: TensorRef,
  bias: TensorRef,
  out: TensorRef,
  rows: number,
  cols: number,
  eps: number,
): void {
  withScratch(backend, (scratch) => {
    const input = reshaped(scratch.toF32(x), [rows, cols]);
    const mean = rowMean(scratch, input, rows, cols);
    const centered = scratch.binary('sub', input, rowBroadcast(mean, rows, cols));
    const variance = rowMean(scratch, scratch.unary('square', centered), rows, cols);
    const inverse = reciprocalRoot(scratch, variance, eps);
    const normalized = scratch.binary('mul', centered, rowBroadcast(inverse, rows, cols));
    const scaled = scratch.binary('mul', normalized, columnBroadcast(scratch.toF32(weight), rows, cols));
    const result = scratch.resultFor(out, [rows, cols]);
    scratch.binary('add', scaled, columnBroadcast(scratch.toF32(bias), rows, cols), result);
    scratch.commit(result, out);
  });
}

/**
 * Gradients of layerNorm: x̂ = (x − mean)·rstd (statistics recomputed as the forward does), g =
 * dy·weight, dx = rstd·(g − mean(g) − x̂·mean(g·x̂)), dWeight = Σ_rows dy·x̂, dBias = Σ_rows dy.
 */
export function composedLayerNormBackward(
  backend: KernelBackend,
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
  withScratch(backend, (scratch) => {
    const input = reshaped(scratch.toF32(x), [rows, cols]);
    const gradient = reshaped(scratch.toF32(dy), [rows, cols]);
    const centered = scratch.binary('sub', input, rowBroadcast(rowMean(scratch, input, rows, cols), rows, cols));
    const variance = rowMean(scratch, scratch.unary('square', centered), rows, cols);
    const inverse = rowBroadcast(reciprocalRoot(scratch, variance, eps), rows, cols);
    const normalized = scratch.binary('mul', centered, inverse);
    const scaledGradient = scratch.binary('mul', gradient, columnBroadcast(scratch.toF32(weight), rows, cols));
    const gradientMean = rowMean(scratch, scaledGradient, rows, cols);
    const projection = rowMean(scratch, scratch.binary('mul', scaledGradient, normalized), rows, cols);
    const shifted = scratch.binary('sub', scaledGradient, rowBroadcast(gradientMean, rows, cols));
    const along = scratch.binary('mul', normalized, rowBroadcast(projection, rows, cols));
    const residual = scratch.binary('sub', shifted, along);
    const inputGradient = scratch.resultFor(dx, [rows, cols]);
    scratch.binary('mul', residual, inverse, inputGradient);
    scratch.commit(inputGradient, dx);

    const weightGradient = scratch.resultFor(dWeight, [1, cols]);
    scratch.reduce('sum', scratch.binary('mul', gradient, normalized), 1, rows, cols, weightGradient);
    scratch.commit(weightGradient, dWeight);
    const biasGradient = scratch.resultFor(dBias, [1, cols]);
    scratch.reduce('sum', gradient, 1, rows, cols, biasGradient);
    scratch.commit(biasGradient, dBias);
  });
}
