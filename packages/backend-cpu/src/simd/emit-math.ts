/**
 * Vector math macros shared by the kernel emitters: e^x, the logistic function and horizontal
 * reductions of an f32x4. A macro writes statements into the current function (through its own
 * locals) and returns the local holding the result.
 * exp: x clamped to [−87.34, 88.72], n = round(x·log2 e) by the 1.5·2²³ trick (no float→int
 * conversion), r = x − n·ln 2 in two parts (exact), e^r by Cephes' degree-6 minimax polynomial,
 * times 2^(n−1) built in the exponent bits (the 2 folded into the polynomial). Relative error ≤ 2 ulp on the normal range;
 * results below 2^−126 flush to 0 (so e^−∞ = 0), x > 88.7228 gives +∞, NaN stays NaN.
 */
import type { Expr } from '../wasm/expression.js';
import type { FunctionBuilder, Local } from '../wasm/module-builder.js';
import { f32, i32x4, v128 } from '../wasm/instructions.js';
import { vectorConstant, type SimdOps } from './simd-ops.js';

const MAGIC = 12582912; // 1.5·2²³: adding it rounds to an integer held in the low mantissa bits
const LN2_HIGH = 0.693359375;
const LN2_LOW = -2.1219444e-4;
const EXP_POLYNOMIAL = [
  1.98756915e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1,
];
const MAX_EXP_INPUT = 88.72283905206835;

/** Locals reused by the macros of one function (a macro call never nests inside another). */
interface MathLocals {
  x: Local;
  t: Local;
  n: Local;
  r: Local;
  p: Local;
  result: Local;
}

const localsByFunction = new WeakMap<FunctionBuilder, MathLocals>();

function mathLocals(f: FunctionBuilder): MathLocals {
  let locals = localsByFunction.get(f);
  if (locals === undefined) {
    locals = {
      x: f.local('v128'),
      t: f.local('v128'),
      n: f.local('v128'),
      r: f.local('v128'),
      p: f.local('v128'),
      result: f.local('v128'),
    };
    localsByFunction.set(f, locals);
  }
  return locals;
}

/**
 * e^x lane-wise; the returned local holds the result until the next macro call.
 * `nonPositive`: the caller guarantees x ≤ 0 or NaN (x − rowmax in softmax-like kernels), so the
 * overflow handling is left out (3 instructions fewer per vector).
 */
export function expF32x4(f: FunctionBuilder, simd: SimdOps, x: Expr, options: { nonPositive?: boolean } = {}): Local {
  const { x: clamped, t, n, r, p, result } = mathLocals(f);
  const c = (value: number): Local => vectorConstant(f, simd, value);
  f.set(r, x);
  // pmax(r, lo) = r < lo ? lo : r and pmin(y, hi) = hi < y ? hi : y keep a NaN (one instruction each).
  f.set(clamped, simd.pmax(r, c(-87.33654475)));
  if (options.nonPositive !== true) f.set(clamped, simd.pmin(clamped, c(MAX_EXP_INPUT)));
  f.set(t, simd.fma(clamped, c(Math.LOG2E), c(MAGIC)));
  f.set(n, simd.sub(t, c(MAGIC)));
  f.set(clamped, simd.fma(n, c(-LN2_HIGH), clamped));
  f.set(clamped, simd.fma(n, c(-LN2_LOW), clamped));
  // 2·e^r = 2·(1 + r + r²·P(r)) with the coefficients of P doubled: the 2 of 2^(n−1)·2 comes for free.
  f.set(p, c(2 * EXP_POLYNOMIAL[0]));
  for (const coefficient of EXP_POLYNOMIAL.slice(1)) f.set(p, simd.fma(p, clamped, c(2 * coefficient)));
  f.set(p, simd.fma(p, simd.mul(clamped, clamped), simd.fma(clamped, c(2), c(2))));
  // 2^(n−1): the integer n + MAGIC's bits, plus the exponent bias − 1, shifted into the exponent field.
  f.set(n, i32x4.shl(i32x4.add(t, f.hoist('i32x4:126', i32x4.splat(126))), 23));
  f.set(result, simd.mul(p, n));
  // Past the largest finite result: +∞ (the clamp above would give a finite value).
  if (options.nonPositive !== true) f.set(result, v128.bitselect(c(Infinity), result, simd.gt(r, c(MAX_EXP_INPUT))));
  return result;
}

/** 1/(1 + e^−x) lane-wise (0 for x → −∞, 1 for x → +∞). */
export function sigmoidF32x4(f: FunctionBuilder, simd: SimdOps, x: Expr): Local {
  const e = expF32x4(f, simd, simd.neg(x));
  const one = vectorConstant(f, simd, 1);
  f.set(e, simd.div(one, simd.add(one, e)));
  return e;
}

/** Sum of the four lanes (((l0 + l1) + l2) + l3, a fixed order). */
export function horizontalSum(simd: SimdOps, vector: Expr): Expr {
  return f32.add(
    f32.add(f32.add(simd.extractLane(vector, 0), simd.extractLane(vector, 1)), simd.extractLane(vector, 2)),
    simd.extractLane(vector, 3),
  );
}

/** Maximum of the four lanes (NaN if any lane is NaN). */
export function horizontalMax(simd: SimdOps, vector: Expr): Expr {
  return f32.max(
    f32.max(f32.max(simd.extractLane(vector, 0), simd.extractLane(vector, 1)), simd.extractLane(vector, 2)),
    simd.extractLane(vector, 3),
  );
}
