/**
 * Planted bugs in the fused kernels: eps outside the square root, unstable variance, softmax and
 * cross-entropy without the max subtraction, a warp-sized row reduction, flash attention without
 * the rescale or with the wrong scale, mask strides or block-local causal limit, rope with a fixed
 * theta or interleaved pairs, cross-entropy targets ignored or clamped, AdamW decay in the wrong
 * place, multi-tensor AdamW that ignores its guard or its device-side scale, a sum of squares that
 * stops at an empty tensor.
 */
import type { AdamWMultiParams, AdamWParams, AttentionParams, StridedView, TensorRef } from '@kiln/core';
import type { ReferenceBackend } from '../../src/index.js';
import { f32, load, store, type PlantedBug } from './host.js';

/** rmsNorm with rstd = rstdOf(mean(x²), eps). */
function rmsNormKernel(base: ReferenceBackend, rstdOf: (meanSquare: number, eps: number) => number) {
  return {
    rmsNorm(
      x: TensorRef,
      weight: TensorRef,
      out: TensorRef,
      rstd: TensorRef,
      rows: number,
      cols: number,
      eps: number,
    ): void {
      const [values, scale] = [load(base, x), load(base, weight)];
      const [result, inverse] = [new Float64Array(rows * cols), new Float64Array(rows)];
      for (let row = 0; row < rows; row++) {
        let squares = 0;
        for (let col = 0; col < cols; col++) squares += values[row * cols + col] ** 2;
        inverse[row] = rstdOf(squares / cols, eps);
        for (let col = 0; col < cols; col++)
          result[row * cols + col] = values[row * cols + col] * inverse[row] * scale[col];
      }
      store(base, out, result);
      store(base, rstd, inverse);
    },
  };
}

/** layerNorm from per-row statistics `statistics(row)` and an inverse deviation `inverseOf(variance, eps)`. */
function layerNormKernel(
  base: ReferenceBackend,
  statistics: (row: Float64Array) => { mean: number; variance: number },
  inverseOf: (variance: number, eps: number) => number,
) {
  return {
    layerNorm(
      x: TensorRef,
      weight: TensorRef,
      bias: TensorRef,
      out: TensorRef,
      rows: number,
      cols: number,
      eps: number,
    ): void {
      const [values, scale, shift] = [load(base, x), load(base, weight), load(base, bias)];
      const result = new Float64Array(rows * cols);
      for (let row = 0; row < rows; row++) {
        const { mean, variance } = statistics(values.subarray(row * cols, (row + 1) * cols));
        const inverse = inverseOf(variance, eps);
        for (let col = 0; col < cols; col++)
          result[row * cols + col] = (values[row * cols + col] - mean) * inverse * scale[col] + shift[col];
      }
      store(base, out, result);
    },
  };
}

/** Mean, then the mean squared deviation from it (two passes, float64). */
function twoPassStatistics(row: Float64Array): { mean: number; variance: number } {
  const mean = row.reduce((sum, value) => sum + value, 0) / row.length;
  return { mean, variance: row.reduce((sum, value) => sum + (value - mean) ** 2, 0) / row.length };
}

/** E[x²] − E[x]² accumulated in f32 registers (one pass). */
function onePassF32Statistics(row: Float64Array): { mean: number; variance: number } {
  let [sum, squares] = [0, 0];
  for (const value of row) {
    sum = f32(sum + value);
    squares = f32(squares + f32(value * value));
  }
  const mean = f32(sum / row.length);
  return { mean, variance: f32(f32(squares / row.length) - f32(mean * mean)) };
}

/** softmax or logSoftmax per row; `shift(row)` is what is subtracted before exp (the row max, or 0 when forgotten); `width` limits the reduction. */
function softmaxKernel(
  base: ReferenceBackend,
  kind: 'softmax' | 'logSoftmax',
  shift: (row: Float64Array) => number,
  width: (cols: number) => number = (cols) => cols,
) {
  return {
    [kind](x: TensorRef, out: TensorRef, rows: number, cols: number): void {
      const values = load(base, x);
      const result = new Float64Array(rows * cols);
      for (let r = 0; r < rows; r++) {
        const row = values.subarray(r * cols, (r + 1) * cols);
        const reduced = row.subarray(0, width(cols));
        const max = shift(reduced);
        const sum = reduced.reduce((total, value) => total + Math.exp(value - max), 0);
        for (let c = 0; c < cols; c++)
          result[r * cols + c] = kind === 'softmax' ? Math.exp(row[c] - max) / sum : row[c] - max - Math.log(sum);
      }
      store(base, out, result);
    },
  };
}

const rowMax = (row: Float64Array) => row.reduce((max, value) => Math.max(max, value), -Infinity);

/** How a flash-attention kernel may go wrong (every flag false: a correct kernel). */
interface FlashMistakes {
  /** Uses 1/√D instead of params.scale. */
  defaultScale?: boolean;
  /** Rescales the running sum but not the output accumulator when the running max grows. */
  noAccumulatorRescale?: boolean;
  /** Reads the mask without its head stride. */
  maskIgnoresHead?: boolean;
  /** Reads the mask without its batch stride. */
  maskIgnoresBatch?: boolean;
  /** Applies the causal limit to the key's index within its block. */
  blockLocalCausal?: boolean;
  /** Ignores params.causal. */
  ignoresCausal?: boolean;
}

const KEY_BLOCK = 64;

/** A FlashAttention-2 style forward over key blocks of 64 with an online softmax, with the given mistakes. */
function flashAttention(base: ReferenceBackend, mistakes: FlashMistakes) {
  return {
    attention(
      q: TensorRef,
      k: TensorRef,
      v: TensorRef,
      mask: StridedView | null,
      out: TensorRef,
      lse: TensorRef,
      params: AttentionParams,
    ): void {
      const [batch, headsQ, lengthQ, depth] = q.shape;
      const [headsKV, lengthK] = [k.shape[1], k.shape[2]];
      const [queries, keys, values] = [load(base, q), load(base, k), load(base, v)];
      const maskValues = mask ? load(base, mask) : null;
      const scale = mistakes.defaultScale ? 1 / Math.sqrt(depth) : params.scale;
      const causal = params.causal && !mistakes.ignoresCausal;
      const result = new Float64Array(batch * headsQ * lengthQ * depth);
      const logSumExp = new Float64Array(batch * headsQ * lengthQ);
      for (let b = 0; b < batch; b++) {
        for (let h = 0; h < headsQ; h++) {
          const kvBase = (b * headsKV + Math.floor(h / (headsQ / headsKV))) * lengthK * depth;
          for (let i = 0; i < lengthQ; i++) {
            const row = (b * headsQ + h) * lengthQ + i;
            let [runningMax, runningSum] = [-Infinity, 0];
            const accumulator = new Float64Array(depth);
            for (let key0 = 0; key0 < lengthK; key0 += KEY_BLOCK) {
              const scores: number[] = [];
              for (let j = key0; j < Math.min(lengthK, key0 + KEY_BLOCK); j++) {
                const limitIndex = mistakes.blockLocalCausal ? j - key0 : j;
                if (causal && limitIndex > i + lengthK - lengthQ) {
                  scores.push(-Infinity);
                  continue;
                }
                let dot = 0;
                for (let d = 0; d < depth; d++) dot += queries[row * depth + d] * keys[kvBase + j * depth + d];
                let score = scale * dot;
                if (mask && maskValues) {
                  const headTerm = mistakes.maskIgnoresHead ? 0 : h * mask.strides[1];
                  const batchTerm = mistakes.maskIgnoresBatch ? 0 : b * mask.strides[0];
                  score += maskValues[mask.offset + batchTerm + headTerm + i * mask.strides[2] + j * mask.strides[3]];
                }
                scores.push(score);
              }
              const newMax = Math.max(runningMax, ...scores);
              if (newMax === -Infinity) continue;
              const correction = Math.exp(runningMax - newMax);
              runningSum *= correction;
              if (!mistakes.noAccumulatorRescale) for (let d = 0; d < depth; d++) accumulator[d] *= correction;
              scores.forEach((score, offset) => {
                const probability = Math.exp(score - newMax);
                runningSum += probability;
                for (let d = 0; d < depth; d++)
                  accumulator[d] += probability * values[kvBase + (key0 + offset) * depth + d];
              });
              runningMax = newMax;
            }
            const empty = runningMax === -Infinity || runningSum === 0;
            for (let d = 0; d < depth; d++) result[row * depth + d] = empty ? 0 : accumulator[d] / runningSum;
            logSumExp[row] = empty ? -Infinity : runningMax + Math.log(runningSum);
          }
        }
      }
      store(base, out, result);
      store(base, lse, logSumExp);
    },
  };
}

/** rope over x [B, H, T, D]; `pairs` 'half' rotates (i, i + D/2), 'interleaved' (2i, 2i + 1); theta is `thetaOf(theta)`. */
function ropeKernel(base: ReferenceBackend, pairs: 'half' | 'interleaved', thetaOf: (theta: number) => number) {
  return {
    rope(x: TensorRef, out: TensorRef, offset: number, theta: number, inverse: boolean): void {
      const [, , length, depth] = x.shape;
      const half = depth / 2;
      const values = load(base, x);
      const result = new Float64Array(values.length);
      for (let rowStart = 0; rowStart < values.length; rowStart += depth) {
        const position = offset + ((rowStart / depth) % length);
        for (let i = 0; i < half; i++) {
          const angle = (inverse ? -1 : 1) * position * thetaOf(theta) ** ((-2 * i) / depth);
          const [first, second] =
            pairs === 'half' ? [rowStart + i, rowStart + i + half] : [rowStart + 2 * i, rowStart + 2 * i + 1];
          result[first] = values[first] * Math.cos(angle) - values[second] * Math.sin(angle);
          result[second] = values[second] * Math.cos(angle) + values[first] * Math.sin(angle);
        }
      }
      store(base, out, result);
    },
  };
}

/** How a cross-entropy kernel may go wrong (every flag false: a correct kernel). */
interface CrossEntropyMistakes {
  /** Compares targets with −100 instead of ignoreIndex. */
  fixedIgnoreIndex?: boolean;
  /** Treats every negative target as ignored. */
  negativeIgnored?: boolean;
  /** Clamps an out-of-range target into [0, classes). */
  clampsTarget?: boolean;
  /** Exponentiates the logits without subtracting the row max. */
  noMaxShift?: boolean;
}

/** The target a row uses: 'ignored', a class, or 'invalid' (NaN row). */
function resolveTarget(
  target: number,
  ignoreIndex: number,
  classes: number,
  mistakes: CrossEntropyMistakes,
): 'ignored' | 'invalid' | number {
  if (target === (mistakes.fixedIgnoreIndex ? -100 : ignoreIndex) || (mistakes.negativeIgnored && target < 0))
    return 'ignored';
  if (target >= 0 && target < classes) return target;
  return mistakes.clampsTarget ? Math.min(classes - 1, Math.max(0, target)) : 'invalid';
}

/** log Σ exp(row), max-shifted unless the mistake says otherwise. */
function logSumExpOf(row: Float64Array, mistakes: CrossEntropyMistakes): number {
  const max = mistakes.noMaxShift ? 0 : rowMax(row);
  return max + Math.log(row.reduce((sum, value) => sum + Math.exp(value - max), 0));
}

function crossEntropyKernel(base: ReferenceBackend, mistakes: CrossEntropyMistakes) {
  return {
    crossEntropy(
      logits: TensorRef,
      targets: TensorRef,
      loss: TensorRef,
      rows: number,
      classes: number,
      ignoreIndex: number,
    ): void {
      const [values, labels] = [load(base, logits), load(base, targets)];
      const result = new Float64Array(rows);
      for (let r = 0; r < rows; r++) {
        const target = resolveTarget(labels[r], ignoreIndex, classes, mistakes);
        const row = values.subarray(r * classes, (r + 1) * classes);
        result[r] =
          target === 'ignored' ? 0 : target === 'invalid' ? Number.NaN : logSumExpOf(row, mistakes) - row[target];
      }
      store(base, loss, result);
    },
    crossEntropyBackward(
      logits: TensorRef,
      targets: TensorRef,
      dLogits: TensorRef,
      rows: number,
      classes: number,
      ignoreIndex: number,
      scale: number,
    ): void {
      const [values, labels] = [load(base, logits), load(base, targets)];
      const result = new Float64Array(rows * classes);
      for (let r = 0; r < rows; r++) {
        const target = resolveTarget(labels[r], ignoreIndex, classes, mistakes);
        const row = values.subarray(r * classes, (r + 1) * classes);
        const logSumExp = logSumExpOf(row, mistakes);
        for (let c = 0; c < classes; c++) {
          const gradient = Math.exp(row[c] - logSumExp) - (c === target ? 1 : 0);
          result[r * classes + c] = target === 'ignored' ? 0 : target === 'invalid' ? Number.NaN : gradient * scale;
        }
      }
      store(base, dLogits, result);
    },
  };
}

/** How an AdamW kernel may go wrong (every flag false: a correct kernel). */
interface AdamWMistakes {
  /** Multiplies by (1 − lr·wd) after the update instead of before. */
  decayAfterUpdate?: boolean;
  /** Adds wd·p to the gradient (Adam with L2) instead of decaying p. */
  coupledDecay?: boolean;
  /** Skips the bias corrections 1 − β^step. */
  noBiasCorrection?: boolean;
}

function adamwKernel(base: ReferenceBackend, mistakes: AdamWMistakes) {
  return {
    adamw(param: TensorRef, grad: TensorRef, m: TensorRef, v: TensorRef, params: AdamWParams): void {
      const { lr, beta1, beta2, eps, weightDecay, step } = params;
      const [p, g, first, second] = [load(base, param), load(base, grad), load(base, m), load(base, v)];
      for (let i = 0; i < p.length; i++) {
        const gradient = mistakes.coupledDecay ? g[i] + weightDecay * p[i] : g[i];
        first[i] = beta1 * first[i] + (1 - beta1) * gradient;
        second[i] = beta2 * second[i] + (1 - beta2) * gradient * gradient;
        const [firstHat, secondHat] = mistakes.noBiasCorrection
          ? [first[i], second[i]]
          : [first[i] / (1 - beta1 ** step), second[i] / (1 - beta2 ** step)];
        const update = (lr * firstHat) / (Math.sqrt(secondHat) + eps);
        const decay = mistakes.coupledDecay ? 1 : 1 - lr * weightDecay;
        p[i] = mistakes.decayAfterUpdate ? (p[i] - update) * decay : p[i] * decay - update;
      }
      store(base, param, p);
      store(base, m, first);
      store(base, v, second);
    },
  };
}

/** The reference multi-tensor kernels with `options` or `tensors` altered by the planted mistake. */
function multiTensorKernels(
  base: ReferenceBackend,
  alter: {
    options?: (options: AdamWMultiParams) => AdamWMultiParams;
    tensors?: (tensors: readonly TensorRef[]) => readonly TensorRef[];
  },
) {
  return {
    sumOfSquaresMulti(tensors: readonly TensorRef[], out: TensorRef): void {
      base.sumOfSquaresMulti!(alter.tensors ? alter.tensors(tensors) : tensors, out);
    },
    adamwMulti(
      params: readonly TensorRef[],
      grads: readonly TensorRef[],
      ms: readonly TensorRef[],
      vs: readonly TensorRef[],
      options: AdamWMultiParams,
    ): void {
      base.adamwMulti!(params, grads, ms, vs, alter.options ? alter.options(options) : options);
    },
  };
}

export const FUSED_BUGS: PlantedBug[] = [
  {
    name: 'a multi-tensor AdamW that ignores skipIfNonFinite (updates after a NaN norm)',
    kernel: 'adamwMulti',
    caughtBy: 'adamwMulti f32 [lengths=1+37+0+4099,grads=same]',
    plant: (base, planted) =>
      multiTensorKernels(base, {
        options: ({ skipIfNonFinite, ...rest }) =>
          planted ? rest : { ...rest, ...(skipIfNonFinite ? { skipIfNonFinite } : {}) },
      }),
  },
  {
    name: 'a multi-tensor AdamW that treats a device-scalar gradientScale as 1',
    kernel: 'adamwMulti',
    caughtBy: 'adamwMulti f32 [lengths=1+37+0+4099,grads=same]',
    plant: (base, planted) =>
      multiTensorKernels(base, {
        options: (options) =>
          planted && typeof options.gradientScale !== 'number' ? { ...options, gradientScale: 1 } : options,
      }),
  },
  {
    name: 'a sum of squares that stops at the first empty tensor',
    kernel: 'sumOfSquaresMulti',
    caughtBy: 'sumOfSquaresMulti f32 [lengths=1+37+0+4099,grads=same]',
    plant: (base, planted) =>
      multiTensorKernels(base, {
        tensors: (tensors) => {
          const empty = tensors.findIndex((tensor) => tensor.shape.reduce((product, size) => product * size, 1) === 0);
          return planted && empty >= 0 ? tensors.slice(0, empty) : tensors;
        },
      }),
  },
  {
    name: 'an rmsNorm with eps outside the square root: 1/(√mean(x²) + eps)',
    kernel: 'rmsNorm',
    caughtBy: 'rmsNorm f32 [rows=4,cols=33,eps=0.001,mean(x²)≈eps]',
    plant: (base, planted) =>
      rmsNormKernel(base, (meanSquare, eps) =>
        planted ? 1 / (Math.sqrt(meanSquare) + eps) : 1 / Math.sqrt(meanSquare + eps),
      ),
  },
  {
    name: 'an rmsNorm that ignores its eps argument and uses 1e-5',
    kernel: 'rmsNorm',
    caughtBy: 'rmsNorm f32 [rows=4,cols=33,eps=0.001,mean(x²)≈eps]',
    plant: (base, planted) =>
      rmsNormKernel(base, (meanSquare, eps) => 1 / Math.sqrt(meanSquare + (planted ? 1e-5 : eps))),
  },
  {
    name: 'a layerNorm with eps outside the square root',
    kernel: 'layerNorm',
    caughtBy: 'layerNorm f32 [rows=4,cols=33,eps=0.001,var≈eps,mean≈8]',
    plant: (base, planted) =>
      layerNormKernel(base, twoPassStatistics, (variance, eps) =>
        planted ? 1 / (Math.sqrt(variance) + eps) : 1 / Math.sqrt(variance + eps),
      ),
  },
  {
    name: 'a layerNorm whose variance is E[x²] − E[x]² in one f32 pass (cancels catastrophically off-centre)',
    kernel: 'layerNorm',
    caughtBy: 'layerNorm f32 [rows=4,cols=33,eps=0.001,var≈eps,mean≈8]',
    plant: (base, planted) =>
      layerNormKernel(
        base,
        planted ? onePassF32Statistics : twoPassStatistics,
        (variance, eps) => 1 / Math.sqrt(variance + eps),
      ),
  },
  {
    name: 'a softmax that does not subtract the row max (float64 exp, as a CPU kernel would)',
    kernel: 'softmax',
    caughtBy: 'softmax f32 [rows=4,cols=37 logits≈±1000]',
    plant: (base, planted) => softmaxKernel(base, 'softmax', (row) => (planted ? 0 : rowMax(row))),
  },
  {
    name: 'a softmax whose row max and sum come from one 32-lane warp (columns past 32 left out)',
    kernel: 'softmax',
    caughtBy: 'softmax f32 [rows=4,cols=33]',
    plant: (base, planted) => softmaxKernel(base, 'softmax', rowMax, (cols) => (planted ? Math.min(cols, 32) : cols)),
  },
  {
    name: 'a logSoftmax that does not subtract the row max',
    kernel: 'logSoftmax',
    caughtBy: 'logSoftmax f32 [rows=4,cols=37 logits≈±1000]',
    plant: (base, planted) => softmaxKernel(base, 'logSoftmax', (row) => (planted ? 0 : rowMax(row))),
  },
  {
    name: 'a flash attention that uses 1/√D instead of the scale argument',
    kernel: 'attention',
    caughtBy: 'attention f32 [B=1,Hq=4,Hkv=1,Tq=6,Tk=9,D=12,non-causal,scale=0.75]',
    plant: (base, planted) => flashAttention(base, { defaultScale: planted }),
  },
  {
    name: 'a flash attention that rescales the running sum but not the output accumulator when the running max grows',
    kernel: 'attention',
    caughtBy: 'attention f32 [B=1,Hq=2,Hkv=1,Tq=3,Tk=257,D=8,non-causal,keys=rising]',
    plant: (base, planted) => flashAttention(base, { noAccumulatorRescale: planted }),
  },
  {
    name: 'a flash attention that reads the mask without its head stride',
    kernel: 'attention',
    caughtBy: 'attention f32 [B=2,Hq=4,Hkv=2,Tq=5,Tk=7,D=8,non-causal,mask=dense]',
    plant: (base, planted) => flashAttention(base, { maskIgnoresHead: planted }),
  },
  {
    name: 'a flash attention that reads the mask without its batch stride',
    kernel: 'attention',
    caughtBy: 'attention f32 [B=2,Hq=4,Hkv=2,Tq=5,Tk=7,D=8,non-causal,mask=dense]',
    plant: (base, planted) => flashAttention(base, { maskIgnoresBatch: planted }),
  },
  {
    name: 'a flash attention that applies the causal limit to the key index within its block',
    kernel: 'attention',
    caughtBy: 'attention f32 [B=1,Hq=1,Hkv=1,Tq=150,Tk=150,D=8,causal,keys=rising]',
    plant: (base, planted) => flashAttention(base, { blockLocalCausal: planted }),
  },
  {
    name: 'a flash attention that ignores the causal flag',
    kernel: 'attention',
    caughtBy: 'attention f32 [B=2,Hq=2,Hkv=2,Tq=5,Tk=5,D=8,causal]',
    plant: (base, planted) => flashAttention(base, { ignoresCausal: planted }),
  },
  {
    name: 'a rope that ignores its theta argument and uses 10 000',
    kernel: 'rope',
    caughtBy: 'rope f32 [1×2×9×16,offset=5,theta=1000000]',
    plant: (base, planted) => ropeKernel(base, 'half', (theta) => (planted ? 10000 : theta)),
  },
  {
    name: 'a rope that rotates interleaved pairs (2i, 2i+1) instead of (i, i + D/2)',
    kernel: 'rope',
    caughtBy: 'rope f32 [2×3×5×8,offset=0,theta=10000]',
    plant: (base, planted) => ropeKernel(base, planted ? 'interleaved' : 'half', (theta) => theta),
  },
  {
    name: 'a crossEntropy that compares targets with −100 instead of the ignoreIndex argument',
    kernel: 'crossEntropy',
    caughtBy: 'crossEntropy f32 [rows=8,classes=37,ignoreIndex=-1,out-of-range targets]',
    plant: (base, planted) => crossEntropyKernel(base, { fixedIgnoreIndex: planted }),
  },
  {
    name: 'a crossEntropy that ignores every negative target',
    kernel: 'crossEntropy',
    caughtBy: 'crossEntropy f32 [rows=8,classes=37,ignoreIndex=-1,out-of-range targets]',
    plant: (base, planted) => crossEntropyKernel(base, { negativeIgnored: planted }),
  },
  {
    name: 'a crossEntropy that clamps an out-of-range target into [0, classes)',
    kernel: 'crossEntropy',
    caughtBy: 'crossEntropy f32 [rows=8,classes=37,ignoreIndex=-1,out-of-range targets]',
    plant: (base, planted) => crossEntropyKernel(base, { clampsTarget: planted }),
  },
  {
    name: 'a crossEntropy that does not subtract the row max (float64 exp)',
    kernel: 'crossEntropy',
    caughtBy: 'crossEntropy f32 [rows=6,classes=37,ignoreIndex=-100 logits≈±1000]',
    plant: (base, planted) => crossEntropyKernel(base, { noMaxShift: planted }),
  },
  {
    name: 'a crossEntropyBackward that ignores every negative target',
    kernel: 'crossEntropyBackward',
    caughtBy: 'crossEntropyBackward f32 [rows=8,classes=37,ignoreIndex=-1,out-of-range targets,scale=0.125]',
    plant: (base, planted) => crossEntropyKernel(base, { negativeIgnored: planted }),
  },
  {
    name: 'an AdamW that applies the weight decay after the update',
    kernel: 'adamw',
    caughtBy: 'adamw f32 [length=37,steps=3,lr=0.5,weightDecay=0.5]',
    plant: (base, planted) => adamwKernel(base, { decayAfterUpdate: planted }),
  },
  {
    name: 'an Adam with L2 regularisation (wd·p added to the gradient) instead of decoupled decay',
    kernel: 'adamw',
    caughtBy: 'adamw f32 [length=37,steps=3,lr=0.5,weightDecay=0.5]',
    plant: (base, planted) => adamwKernel(base, { coupledDecay: planted }),
  },
  {
    name: 'an AdamW without bias correction',
    kernel: 'adamw',
    caughtBy: 'adamw f32 [length=37,steps=3,lr=0.01,weightDecay=0.1]',
    plant: (base, planted) => adamwKernel(base, { noBiasCorrection: planted }),
  },
  {
    name: 'an rmsNormBackward whose dWeight forgets rstd',
    kernel: 'rmsNormBackward',
    caughtBy: 'rmsNormBackward f32 [rows=5,cols=7,eps=0.00001]',
    plant: (base, planted) => ({
      rmsNormBackward(
        x: TensorRef,
        weight: TensorRef,
        rstd: TensorRef,
        dy: TensorRef,
        dx: TensorRef,
        dWeight: TensorRef,
        rows: number,
        cols: number,
      ): void {
        const [values, scale, inverse, gradient] = [
          load(base, x),
          load(base, weight),
          load(base, rstd),
          load(base, dy),
        ];
        const [inputGradient, weightGradient] = [new Float64Array(rows * cols), new Float64Array(cols)];
        for (let row = 0; row < rows; row++) {
          let projection = 0;
          for (let col = 0; col < cols; col++) {
            const index = row * cols + col;
            projection += gradient[index] * scale[col] * values[index] * inverse[row];
            weightGradient[col] += gradient[index] * values[index] * (planted ? 1 : inverse[row]);
          }
          for (let col = 0; col < cols; col++) {
            const index = row * cols + col;
            inputGradient[index] =
              inverse[row] * (gradient[index] * scale[col] - values[index] * inverse[row] * (projection / cols));
          }
        }
        store(base, dx, inputGradient);
        store(base, dWeight, weightGradient);
      },
    }),
  },
];
