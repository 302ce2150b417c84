/**
 * Row kernels in WebAssembly SIMD over [rows, cols] f32 (row-major, contiguous): softmax and its
 * backward, the max / Σe^(x−max) pass that log-softmax and cross-entropy finish on the host
 * (wasm has no log instruction; it is one Math.log per row), log-softmax as (x − max) − log Σ
 * (never x − (max + log Σ), which rounds away the precision of large logits), the
 * cross-entropy gradient, rmsNorm forward and backward, and layerNorm's backward.
 * Layout: pointers are byte addresses on the heap; each row is handled in 4-lane vectors, then
 * a scalar tail. Numerics: f32 throughout, row sums in 4 lanes added in a fixed order; exp by
 * expF32x4 (≤ 2 ulp). A row of all −∞ gives NaN in softmax, as IEEE arithmetic does.
 */
import type { Expr } from '../wasm/expression.js';
import { f32, f64, i32, v128 } from '../wasm/instructions.js';
import type { FunctionBuilder, Local, ModuleBuilder } from '../wasm/module-builder.js';
import { expF32x4, horizontalMax, horizontalSum } from './emit-math.js';
import type { SimdOps } from './simd-ops.js';

/** Byte offsets of a row: vector part [0, vectorBytes) and scalar tail [vectorBytes, rowBytes). */
interface RowBounds {
  vectorBytes: Local;
  rowBytes: Local;
}

function rowBounds(f: FunctionBuilder, cols: Local): RowBounds {
  const vectorBytes = f.local('i32');
  const rowBytes = f.local('i32');
  f.set(rowBytes, i32.shl(cols, 2));
  f.set(vectorBytes, i32.and(rowBytes, ~15));
  return { vectorBytes, rowBytes };
}

/** Emits, for the current row: max over x[0, cols) into `max` (f32). */
function emitRowMax(
  f: FunctionBuilder,
  simd: SimdOps,
  x: Local,
  bounds: RowBounds,
  o: Local,
  vector: Local,
  max: Local,
): void {
  // pmax drops a NaN here, but a NaN element still turns its e^(x − max), the row sum and so the
  // whole row into NaN in the pass after (pmax is one instruction, IEEE max eight).
  f.set(vector, simd.constSplat(-Infinity));
  f.for(o, 0, bounds.vectorBytes, 16, () => f.set(vector, simd.pmax(vector, v128.load(i32.add(x, o)))));
  f.set(max, horizontalMax(simd, vector));
  f.for(o, bounds.vectorBytes, bounds.rowBytes, 4, () => f.set(max, f32.max(max, f32.load(i32.add(x, o)))));
}

/** Emits Σ e^(x − max) over the row into `sum`; stores the exponentials to `out` unless it is null. */
function emitRowExpSum(
  f: FunctionBuilder,
  simd: SimdOps,
  x: Local,
  out: Local | null,
  bounds: RowBounds,
  o: Local,
  shift: Local,
  accumulator: Local,
  sum: Local,
  max: Local,
): void {
  f.set(shift, simd.splat(max));
  f.set(accumulator, simd.constSplat(0));
  f.for(o, 0, bounds.vectorBytes, 16, () => {
    const e = expF32x4(f, simd, simd.sub(v128.load(i32.add(x, o)), shift), { nonPositive: true });
    if (out !== null) f.exec(v128.store(i32.add(out, o), e));
    f.set(accumulator, simd.add(accumulator, e));
  });
  f.set(sum, horizontalSum(simd, accumulator));
  f.for(o, bounds.vectorBytes, bounds.rowBytes, 4, () => {
    const e = expF32x4(f, simd, simd.splat(f32.sub(f32.load(i32.add(x, o)), max)));
    if (out !== null) f.exec(f32.store(i32.add(out, o), simd.extractLane(e, 0)));
    f.set(sum, f32.add(sum, simd.extractLane(e, 0)));
  });
}

/** Emits out[c] = x[c]·factor (vector + tail). */
function emitRowScale(
  f: FunctionBuilder,
  simd: SimdOps,
  x: Local,
  out: Local,
  bounds: RowBounds,
  o: Local,
  factorVector: Local,
  factor: Local,
): void {
  f.set(factorVector, simd.splat(factor));
  f.for(o, 0, bounds.vectorBytes, 16, () =>
    f.exec(v128.store(i32.add(out, o), simd.mul(v128.load(i32.add(x, o)), factorVector))),
  );
  f.for(o, bounds.vectorBytes, bounds.rowBytes, 4, () =>
    f.exec(f32.store(i32.add(out, o), f32.mul(f32.load(i32.add(x, o)), factor))),
  );
}

function advance(f: FunctionBuilder, pointers: Local[], bytes: Expr | number): void {
  for (const pointer of pointers) f.set(pointer, i32.add(pointer, bytes));
}

/** Emits every row kernel into `module`. */
export function emitRowKernels(module: ModuleBuilder, simd: SimdOps): void {
  module.func(
    'softmax_rows',
    { params: { x: 'i32', out: 'i32', rows: 'i32', cols: 'i32' } },
    (f, { x, out, rows, cols }) => {
      const bounds = rowBounds(f, cols);
      const row = f.local('i32');
      const o = f.local('i32');
      const vector = f.local('v128');
      const accumulator = f.local('v128');
      const max = f.local('f32');
      const sum = f.local('f32');
      f.for(row, 0, rows, 1, () => {
        emitRowMax(f, simd, x, bounds, o, vector, max);
        emitRowExpSum(f, simd, x, out, bounds, o, vector, accumulator, sum, max);
        f.set(sum, f32.div(1, sum));
        emitRowScale(f, simd, out, out, bounds, o, vector, sum);
        advance(f, [x, out], bounds.rowBytes);
      });
    },
  );

  // Per row: maxOut[r] = max, sumOut[r] = Σ e^(x − max) (log-softmax and cross-entropy finish with one log per row).
  module.func(
    'row_max_sumexp',
    { params: { x: 'i32', rows: 'i32', cols: 'i32', maxOut: 'i32', sumOut: 'i32' } },
    (f, { x, rows, cols, maxOut, sumOut }) => {
      const bounds = rowBounds(f, cols);
      const row = f.local('i32');
      const o = f.local('i32');
      const vector = f.local('v128');
      const accumulator = f.local('v128');
      const max = f.local('f32');
      const sum = f.local('f32');
      f.for(row, 0, rows, 1, () => {
        emitRowMax(f, simd, x, bounds, o, vector, max);
        emitRowExpSum(f, simd, x, null, bounds, o, vector, accumulator, sum, max);
        f.exec(f32.store(maxOut, max));
        f.exec(f32.store(sumOut, sum));
        advance(f, [x], bounds.rowBytes);
        advance(f, [maxOut, sumOut], 4);
      });
    },
  );

  // Log-softmax: out[r, c] = (x[r, c] − max[r]) − logSum[r], in that order: x − max is exact near the max, so rows
  // offset by 10⁴ keep f32 precision (max + logSum rounded first would lose |max|·2⁻²⁴).
  module.func(
    'row_log_softmax',
    { params: { x: 'i32', out: 'i32', rows: 'i32', cols: 'i32', max: 'i32', logSum: 'i32' } },
    (f, { x, out, rows, cols, max, logSum }) => {
      const bounds = rowBounds(f, cols);
      const row = f.local('i32');
      const o = f.local('i32');
      const maxVector = f.local('v128');
      const logSumVector = f.local('v128');
      const maxValue = f.local('f32');
      const logSumValue = f.local('f32');
      f.for(row, 0, rows, 1, () => {
        f.set(maxValue, f32.load(max));
        f.set(logSumValue, f32.load(logSum));
        f.set(maxVector, simd.splat(maxValue));
        f.set(logSumVector, simd.splat(logSumValue));
        f.for(o, 0, bounds.vectorBytes, 16, () =>
          f.exec(v128.store(i32.add(out, o), simd.sub(simd.sub(v128.load(i32.add(x, o)), maxVector), logSumVector))),
        );
        f.for(o, bounds.vectorBytes, bounds.rowBytes, 4, () =>
          f.exec(f32.store(i32.add(out, o), f32.sub(f32.sub(f32.load(i32.add(x, o)), maxValue), logSumValue))),
        );
        advance(f, [x, out], bounds.rowBytes);
        advance(f, [max, logSum], 4);
      });
    },
  );

  // dx = y ⊙ (dy − Σ dy·y) per row.
  module.func(
    'softmax_backward_rows',
    { params: { y: 'i32', dy: 'i32', dx: 'i32', rows: 'i32', cols: 'i32' } },
    (f, { y, dy, dx, rows, cols }) => {
      const bounds = rowBounds(f, cols);
      const row = f.local('i32');
      const o = f.local('i32');
      const accumulator = f.local('v128');
      const dot = f.local('f32');
      f.for(row, 0, rows, 1, () => {
        f.set(accumulator, simd.constSplat(0));
        f.for(o, 0, bounds.vectorBytes, 16, () =>
          f.set(accumulator, simd.fma(v128.load(i32.add(dy, o)), v128.load(i32.add(y, o)), accumulator)),
        );
        f.set(dot, horizontalSum(simd, accumulator));
        f.for(o, bounds.vectorBytes, bounds.rowBytes, 4, () =>
          f.set(dot, f32.add(dot, f32.mul(f32.load(i32.add(dy, o)), f32.load(i32.add(y, o))))),
        );
        f.set(accumulator, simd.splat(dot));
        f.for(o, 0, bounds.vectorBytes, 16, () =>
          f.exec(
            v128.store(
              i32.add(dx, o),
              simd.mul(v128.load(i32.add(y, o)), simd.sub(v128.load(i32.add(dy, o)), accumulator)),
            ),
          ),
        );
        f.for(o, bounds.vectorBytes, bounds.rowBytes, 4, () =>
          f.exec(f32.store(i32.add(dx, o), f32.mul(f32.load(i32.add(y, o)), f32.sub(f32.load(i32.add(dy, o)), dot)))),
        );
        advance(f, [y, dy, dx], bounds.rowBytes);
      });
    },
  );

  // Cross-entropy gradient: dx[r, c] = (e^((x − max[r]) − logSum[r]) − [c = target[r]])·scale; rows whose target is
  // ignoreIndex get 0, rows whose target is outside [0, cols) get NaN (docs/kernel-semantics.md). The exponent is
  // formed as log-softmax is (x − max first), so large logits keep their precision.
  module.func(
    'cross_entropy_backward_rows',
    {
      params: {
        x: 'i32',
        targets: 'i32',
        dx: 'i32',
        rows: 'i32',
        cols: 'i32',
        max: 'i32',
        logSum: 'i32',
        scale: 'f32',
        ignoreIndex: 'i32',
      },
    },
    (f, { x, targets, dx, rows, cols, max, logSum, scale, ignoreIndex }) => {
      const bounds = rowBounds(f, cols);
      const row = f.local('i32');
      const o = f.local('i32');
      const maxVector = f.local('v128');
      const logSumVector = f.local('v128');
      const factor = f.local('v128');
      const target = f.local('i32');
      const address = f.local('i32');
      const exponent = (value: Expr) => f32.sub(f32.sub(value, f32.load(max)), f32.load(logSum));
      f.set(factor, simd.splat(scale));
      f.for(row, 0, rows, 1, () => {
        f.set(target, i32.load(targets));
        f.if(
          i32.eq(target, ignoreIndex),
          () => {
            f.for(o, 0, bounds.rowBytes, 4, () => f.exec(f32.store(i32.add(dx, o), 0)));
          },
          () =>
            f.if(
              i32.geU(target, cols),
              () => {
                f.for(o, 0, bounds.rowBytes, 4, () => f.exec(f32.store(i32.add(dx, o), Number.NaN)));
              },
              () => {
                f.set(maxVector, simd.splat(f32.load(max)));
                f.set(logSumVector, simd.splat(f32.load(logSum)));
                f.for(o, 0, bounds.vectorBytes, 16, () => {
                  const e = expF32x4(f, simd, simd.sub(simd.sub(v128.load(i32.add(x, o)), maxVector), logSumVector), {
                    nonPositive: true,
                  });
                  f.exec(v128.store(i32.add(dx, o), simd.mul(e, factor)));
                });
                f.for(o, bounds.vectorBytes, bounds.rowBytes, 4, () => {
                  const e = expF32x4(f, simd, simd.splat(exponent(f32.load(i32.add(x, o)))));
                  f.exec(f32.store(i32.add(dx, o), f32.mul(simd.extractLane(e, 0), scale)));
                });
                // The target's term: (p − 1)·scale, recomputed so it is rounded once.
                f.set(address, i32.add(x, i32.shl(target, 2)));
                const p = expF32x4(f, simd, simd.splat(exponent(f32.load(address))));
                f.exec(f32.store(i32.add(dx, i32.shl(target, 2)), f32.mul(f32.sub(simd.extractLane(p, 0), 1), scale)));
              },
            ),
        );
        advance(f, [x, dx], bounds.rowBytes);
        advance(f, [targets, max, logSum], 4);
      });
    },
  );

  // rstd[r] = 1/√(mean(x²) + eps); out = x·rstd·weight.
  module.func(
    'rms_norm_rows',
    { params: { x: 'i32', weight: 'i32', out: 'i32', rstd: 'i32', rows: 'i32', cols: 'i32', eps: 'f32' } },
    (f, { x, weight, out, rstd, rows, cols, eps }) => {
      const bounds = rowBounds(f, cols);
      const row = f.local('i32');
      const o = f.local('i32');
      const accumulator = f.local('v128');
      const value = f.local('v128');
      const squares = f.local('f32');
      const scale = f.local('f32');
      f.for(row, 0, rows, 1, () => {
        f.set(accumulator, simd.constSplat(0));
        f.for(o, 0, bounds.vectorBytes, 16, () => {
          f.set(value, v128.load(i32.add(x, o)));
          f.set(accumulator, simd.fma(value, value, accumulator));
        });
        f.set(squares, horizontalSum(simd, accumulator));
        f.for(o, bounds.vectorBytes, bounds.rowBytes, 4, () =>
          f.set(squares, f32.add(squares, f32.mul(f32.load(i32.add(x, o)), f32.load(i32.add(x, o))))),
        );
        f.set(
          scale,
          f32.fromF64(
            f64.div(1, f64.sqrt(f64.add(f64.div(f64.fromF32(squares), f64.fromI32(cols)), f64.fromF32(eps)))),
          ),
        );
        f.exec(f32.store(rstd, scale));
        f.set(accumulator, simd.splat(scale));
        f.for(o, 0, bounds.vectorBytes, 16, () =>
          f.exec(
            v128.store(
              i32.add(out, o),
              simd.mul(simd.mul(v128.load(i32.add(x, o)), accumulator), v128.load(i32.add(weight, o))),
            ),
          ),
        );
        f.for(o, bounds.vectorBytes, bounds.rowBytes, 4, () =>
          f.exec(
            f32.store(i32.add(out, o), f32.mul(f32.mul(f32.load(i32.add(x, o)), scale), f32.load(i32.add(weight, o)))),
          ),
        );
        advance(f, [x, out], bounds.rowBytes);
        advance(f, [rstd], 4);
      });
    },
  );

  // x̂ = x·rstd, g = dy·weight: dx = rstd·(g − x̂·mean(g·x̂)); dWeight[c] += Σ_rows dy·x̂ (dWeight accumulates: zero it first).
  module.func(
    'rms_norm_backward_rows',
    {
      params: { x: 'i32', weight: 'i32', rstd: 'i32', dy: 'i32', dx: 'i32', dWeight: 'i32', rows: 'i32', cols: 'i32' },
    },
    (f, { x, weight, rstd, dy, dx, dWeight, rows, cols }) => {
      const bounds = rowBounds(f, cols);
      const row = f.local('i32');
      const o = f.local('i32');
      const accumulator = f.local('v128');
      const normalized = f.local('v128');
      const gradient = f.local('v128');
      const scaleVector = f.local('v128');
      const meanVector = f.local('v128');
      const scale = f.local('f32');
      const dot = f.local('f32');
      const normalizedScalar = f.local('f32');
      const gradientScalar = f.local('f32');
      f.for(row, 0, rows, 1, () => {
        f.set(scale, f32.load(rstd));
        f.set(scaleVector, simd.splat(scale));
        f.set(accumulator, simd.constSplat(0));
        f.for(o, 0, bounds.vectorBytes, 16, () => {
          f.set(normalized, simd.mul(v128.load(i32.add(x, o)), scaleVector));
          f.set(gradient, v128.load(i32.add(dy, o)));
          f.set(accumulator, simd.fma(simd.mul(gradient, v128.load(i32.add(weight, o))), normalized, accumulator));
          f.exec(v128.store(i32.add(dWeight, o), simd.fma(gradient, normalized, v128.load(i32.add(dWeight, o)))));
        });
        f.set(dot, horizontalSum(simd, accumulator));
        f.for(o, bounds.vectorBytes, bounds.rowBytes, 4, () => {
          f.set(normalizedScalar, f32.mul(f32.load(i32.add(x, o)), scale));
          f.set(gradientScalar, f32.load(i32.add(dy, o)));
          f.set(dot, f32.add(dot, f32.mul(f32.mul(gradientScalar, f32.load(i32.add(weight, o))), normalizedScalar)));
          f.exec(
            f32.store(
              i32.add(dWeight, o),
              f32.add(f32.load(i32.add(dWeight, o)), f32.mul(gradientScalar, normalizedScalar)),
            ),
          );
        });
        f.set(dot, f32.div(dot, f32.fromI32(cols)));
        f.set(meanVector, simd.splat(dot));
        f.for(o, 0, bounds.vectorBytes, 16, () => {
          f.set(normalized, simd.mul(v128.load(i32.add(x, o)), scaleVector));
          f.set(gradient, simd.mul(v128.load(i32.add(dy, o)), v128.load(i32.add(weight, o))));
          f.exec(
            v128.store(i32.add(dx, o), simd.mul(scaleVector, simd.sub(gradient, simd.mul(normalized, meanVector)))),
          );
        });
        f.for(o, bounds.vectorBytes, bounds.rowBytes, 4, () => {
          f.set(normalizedScalar, f32.mul(f32.load(i32.add(x, o)), scale));
          f.set(gradientScalar, f32.mul(f32.load(i32.add(dy, o)), f32.load(i32.add(weight, o))));
          f.exec(f32.store(i32.add(dx, o), f32.mul(scale, f32.sub(gradientScalar, f32.mul(normalizedScalar, dot)))));
        });
        advance(f, [x, dy, dx], bounds.rowBytes);
        advance(f, [rstd], 4);
      });
    },
  );

  // LayerNorm's gradients, the row statistics recomputed as the forward takes them: x̂ = (x − mean)·rstd,
  // g = dy·weight, dx = rstd·(g − mean(g) − x̂·mean(g·x̂)); dWeight[c] += Σ_rows dy·x̂ and dBias[c] += Σ_rows dy
  // (both accumulate: zero them first).
  module.func(
    'layer_norm_backward_rows',
    {
      params: {
        x: 'i32',
        weight: 'i32',
        dy: 'i32',
        dx: 'i32',
        dWeight: 'i32',
        dBias: 'i32',
        rows: 'i32',
        cols: 'i32',
        eps: 'f32',
      },
    },
    (f, { x, weight, dy, dx, dWeight, dBias, rows, cols, eps }) => {
      const bounds = rowBounds(f, cols);
      const row = f.local('i32');
      const o = f.local('i32');
      const [first, second, meanVector, scaleVector, normalized, gradient, scaled] = [1, 2, 3, 4, 5, 6, 7].map(() =>
        f.local('v128'),
      );
      const [mean, scale, gradientMean, projectionMean, centered, normalizedScalar, gradientScalar, scaledScalar] = [
        1, 2, 3, 4, 5, 6, 7, 8,
      ].map(() => f.local('f32'));
      const normalizedAt = (address: Expr): Expr => simd.mul(simd.sub(v128.load(address), meanVector), scaleVector);
      f.for(row, 0, rows, 1, () => {
        // The mean, then the variance around it (the forward's two passes).
        f.set(first, simd.constSplat(0));
        f.for(o, 0, bounds.vectorBytes, 16, () => f.set(first, simd.add(first, v128.load(i32.add(x, o)))));
        f.set(mean, horizontalSum(simd, first));
        f.for(o, bounds.vectorBytes, bounds.rowBytes, 4, () => f.set(mean, f32.add(mean, f32.load(i32.add(x, o)))));
        f.set(mean, f32.div(mean, f32.fromI32(cols)));
        f.set(meanVector, simd.splat(mean));
        f.set(first, simd.constSplat(0));
        f.for(o, 0, bounds.vectorBytes, 16, () => {
          f.set(second, simd.sub(v128.load(i32.add(x, o)), meanVector));
          f.set(first, simd.fma(second, second, first));
        });
        f.set(scale, horizontalSum(simd, first));
        f.for(o, bounds.vectorBytes, bounds.rowBytes, 4, () => {
          f.set(centered, f32.sub(f32.load(i32.add(x, o)), mean));
          f.set(scale, f32.add(scale, f32.mul(centered, centered)));
        });
        f.set(
          scale,
          f32.fromF64(f64.div(1, f64.sqrt(f64.add(f64.div(f64.fromF32(scale), f64.fromI32(cols)), f64.fromF32(eps))))),
        );
        f.set(scaleVector, simd.splat(scale));
        // Σ g and Σ g·x̂ over the row; the parameter sums.
        f.set(first, simd.constSplat(0));
        f.set(second, simd.constSplat(0));
        f.for(o, 0, bounds.vectorBytes, 16, () => {
          f.set(normalized, normalizedAt(i32.add(x, o)));
          f.set(gradient, v128.load(i32.add(dy, o)));
          f.set(scaled, simd.mul(gradient, v128.load(i32.add(weight, o))));
          f.set(first, simd.add(first, scaled));
          f.set(second, simd.fma(scaled, normalized, second));
          f.exec(v128.store(i32.add(dWeight, o), simd.fma(gradient, normalized, v128.load(i32.add(dWeight, o)))));
          f.exec(v128.store(i32.add(dBias, o), simd.add(v128.load(i32.add(dBias, o)), gradient)));
        });
        f.set(gradientMean, horizontalSum(simd, first));
        f.set(projectionMean, horizontalSum(simd, second));
        f.for(o, bounds.vectorBytes, bounds.rowBytes, 4, () => {
          f.set(normalizedScalar, f32.mul(f32.sub(f32.load(i32.add(x, o)), mean), scale));
          f.set(gradientScalar, f32.load(i32.add(dy, o)));
          f.set(scaledScalar, f32.mul(gradientScalar, f32.load(i32.add(weight, o))));
          f.set(gradientMean, f32.add(gradientMean, scaledScalar));
          f.set(projectionMean, f32.add(projectionMean, f32.mul(scaledScalar, normalizedScalar)));
          f.exec(
            f32.store(
              i32.add(dWeight, o),
              f32.add(f32.load(i32.add(dWeight, o)), f32.mul(gradientScalar, normalizedScalar)),
            ),
          );
          f.exec(f32.store(i32.add(dBias, o), f32.add(f32.load(i32.add(dBias, o)), gradientScalar)));
        });
        f.set(gradientMean, f32.div(gradientMean, f32.fromI32(cols)));
        f.set(projectionMean, f32.div(projectionMean, f32.fromI32(cols)));
        // dx = rstd·(g − mean(g) − x̂·mean(g·x̂)).
        f.set(first, simd.splat(gradientMean));
        f.set(second, simd.splat(projectionMean));
        f.for(o, 0, bounds.vectorBytes, 16, () => {
          f.set(normalized, normalizedAt(i32.add(x, o)));
          f.set(scaled, simd.mul(v128.load(i32.add(dy, o)), v128.load(i32.add(weight, o))));
          f.exec(
            v128.store(
              i32.add(dx, o),
              simd.mul(scaleVector, simd.sub(simd.sub(scaled, first), simd.mul(normalized, second))),
            ),
          );
        });
        f.for(o, bounds.vectorBytes, bounds.rowBytes, 4, () => {
          f.set(normalizedScalar, f32.mul(f32.sub(f32.load(i32.add(x, o)), mean), scale));
          f.set(scaledScalar, f32.mul(f32.load(i32.add(dy, o)), f32.load(i32.add(weight, o))));
          f.exec(
            f32.store(
              i32.add(dx, o),
              f32.mul(scale, f32.sub(f32.sub(scaledScalar, gradientMean), f32.mul(normalizedScalar, projectionMean))),
            ),
          );
        });
        advance(f, [x, dy, dx], bounds.rowBytes);
      });
    },
  );
}
