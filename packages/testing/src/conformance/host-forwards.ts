/**
 * Float64 host implementations of the fused forwards whose backwards the kit gradient-checks.
 * They are the functions finite differences are taken of, written straight from
 * docs/kernel-semantics.md and independent of every backend (the reference backend included).
 */

/** softmax over the last axis of [rows, cols]. */
export function hostSoftmax(x: Float64Array, rows: number, cols: number): Float64Array {
  const out = new Float64Array(rows * cols);
  for (let row = 0; row < rows; row++) {
    let max = -Infinity;
    for (let col = 0; col < cols; col++) max = Math.max(max, x[row * cols + col]);
    let sum = 0;
    for (let col = 0; col < cols; col++) sum += out[row * cols + col] = Math.exp(x[row * cols + col] - max);
    for (let col = 0; col < cols; col++) out[row * cols + col] /= sum;
  }
  return out;
}

/** The rstd (1/√(mean(x²) + eps)) of each row. */
export function hostRmsNormRstd(x: Float64Array, rows: number, cols: number, eps: number): Float64Array {
  const rstd = new Float64Array(rows);
  for (let row = 0; row < rows; row++) {
    let squares = 0;
    for (let col = 0; col < cols; col++) squares += x[row * cols + col] ** 2;
    rstd[row] = 1 / Math.sqrt(squares / cols + eps);
  }
  return rstd;
}

/** rmsNorm: x · rstd · weight per row. */
export function hostRmsNorm(
  x: Float64Array,
  weight: Float64Array,
  rows: number,
  cols: number,
  eps: number,
): Float64Array {
  const rstd = hostRmsNormRstd(x, rows, cols, eps);
  return x.map((value, index) => value * rstd[Math.floor(index / cols)] * weight[index % cols]);
}

/** rope (half-split) of x [B, H, T, D] at positions offset.. (inverse rotates by −angle). */
export function hostRope(
  x: Float64Array,
  shape: readonly number[],
  offset: number,
  theta: number,
  inverse = false,
): Float64Array {
  const [, , length, dim] = shape;
  const half = dim / 2;
  const out = new Float64Array(x.length);
  for (let base = 0; base < x.length; base += dim) {
    const position = offset + ((base / dim) % length);
    for (let i = 0; i < half; i++) {
      const angle = (inverse ? -1 : 1) * position * theta ** ((-2 * i) / dim);
      const [first, second] = [x[base + i], x[base + i + half]];
      out[base + i] = first * Math.cos(angle) - second * Math.sin(angle);
      out[base + i + half] = second * Math.cos(angle) + first * Math.sin(angle);
    }
  }
  return out;
}

/** swiglu: silu(gate) · up. */
export function hostSwiglu(gate: Float64Array, up: Float64Array): Float64Array {
  return gate.map((value, index) => (value / (1 + Math.exp(-value))) * up[index]);
}

/** Geometry of hostAttention. */
export interface HostAttentionShape {
  /** B. */
  batch: number;
  /** Hq. */
  headsQ: number;
  /** Hkv (divides Hq). */
  headsKV: number;
  /** Tq. */
  lengthQ: number;
  /** Tk. */
  lengthK: number;
  /** D. */
  headDim: number;
}

/** Attention forward; `mask` is dense [B, Hq, Tq, Tk] or null. Rows with no allowed key give 0. */
export function hostAttention(
  q: Float64Array,
  k: Float64Array,
  v: Float64Array,
  mask: Float64Array | null,
  shape: HostAttentionShape,
  scale: number,
  causal: boolean,
): Float64Array {
  const { batch, headsQ, headsKV, lengthQ, lengthK, headDim } = shape;
  const out = new Float64Array(batch * headsQ * lengthQ * headDim);
  const scores = new Float64Array(lengthK);
  for (let b = 0; b < batch; b++) {
    for (let h = 0; h < headsQ; h++) {
      const kvHead = Math.floor(h / (headsQ / headsKV));
      const kvBase = (b * headsKV + kvHead) * lengthK * headDim;
      for (let i = 0; i < lengthQ; i++) {
        const qBase = ((b * headsQ + h) * lengthQ + i) * headDim;
        let max = -Infinity;
        for (let j = 0; j < lengthK; j++) {
          let dot = 0;
          for (let d = 0; d < headDim; d++) dot += q[qBase + d] * k[kvBase + j * headDim + d];
          const allowed = !causal || j <= i + (lengthK - lengthQ);
          const masked = mask === null ? 0 : mask[((b * headsQ + h) * lengthQ + i) * lengthK + j];
          scores[j] = allowed ? scale * dot + masked : -Infinity;
          max = Math.max(max, scores[j]);
        }
        if (max === -Infinity) continue;
        let sum = 0;
        for (let j = 0; j < lengthK; j++) sum += scores[j] = Math.exp(scores[j] - max);
        for (let j = 0; j < lengthK; j++) {
          const weight = scores[j] / sum;
          for (let d = 0; d < headDim; d++) out[qBase + d] += weight * v[kvBase + j * headDim + d];
        }
      }
    }
  }
  return out;
}

/** Per-row cross-entropy loss (0 for rows whose target is ignoreIndex). */
export function hostCrossEntropy(
  logits: Float64Array,
  targets: ArrayLike<number>,
  rows: number,
  classes: number,
  ignoreIndex: number,
): Float64Array {
  const loss = new Float64Array(rows);
  for (let row = 0; row < rows; row++) {
    if (targets[row] === ignoreIndex) continue;
    let max = -Infinity;
    for (let c = 0; c < classes; c++) max = Math.max(max, logits[row * classes + c]);
    let sum = 0;
    for (let c = 0; c < classes; c++) sum += Math.exp(logits[row * classes + c] - max);
    loss[row] = max + Math.log(sum) - logits[row * classes + targets[row]];
  }
  return loss;
}

/** Σ weights ⊙ values (the random scalar projection the gradient checks differentiate). */
export function project(values: Float64Array, weights: Float64Array): number {
  let total = 0;
  for (let i = 0; i < values.length; i++) total += values[i] * weights[i];
  return total;
}
