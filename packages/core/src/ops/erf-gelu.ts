/**
 * erf and GELU (exact or tanh-approximated), composed from primitive kernels so every backend
 * has them without a new kernel.
 *
 * erf numerics (computed in f32; f16/bf16 inputs are widened to f32 once and rounded back once):
 *  - |x| < 0.5: erf(x) = x·P(x²), the Maclaurin series 2/√π Σ (−1)ⁿ x²ⁿ / (n!(2n+1)) to n = 6
 *    (truncation < 1e-9 relative), so tiny inputs keep full relative precision.
 *  - |x| ≥ 0.5: erf(x) = sign(x)·(1 − erfc(|x|)) with the Chebyshev-fitted
 *    erfc(z) ≈ t·exp(−z² + Q(t)), t = 1/(1 + z/2), a classic fit with relative error < 1.2e-7.
 *  Both branches are computed and `where` picks one; NaN stays NaN, ±Infinity gives ±1.
 */
import { recordOp } from '../autograd/record.js';
import { noGrad } from '../autograd/grad-node.js';
import { tidy } from '../tensor/scope.js';
import type { Tensor } from '../tensor/tensor.js';
import { assertFloat } from '../engine/dispatch.js';
import { castTo } from './kernel-calls.js';
import { abs, add, exp, geluTanh, less, mul, neg, reciprocal, sign, square, sub, where } from './elementwise.js';
import { checkChoice, checkOptions, checkTensor, option } from '../validate.js';

const TWO_OVER_SQRT_PI = 2 / Math.sqrt(Math.PI);
const INV_SQRT_2 = 1 / Math.SQRT2;
const INV_SQRT_2PI = 1 / Math.sqrt(2 * Math.PI);
const SERIES_LIMIT = 0.5;

/** 2/√π · (−1)ⁿ / (n!(2n+1)), n = 0…6: erf(x) = x · Σ SERIES[n]·x²ⁿ. */
const SERIES = Array.from({ length: 7 }, (_, n) => {
  let factorial = 1;
  for (let i = 2; i <= n; i++) factorial *= i;
  return (TWO_OVER_SQRT_PI * (n % 2 === 0 ? 1 : -1)) / (factorial * (2 * n + 1));
});

/** Q(t) of erfc(z) ≈ t·exp(−z² + Q(t)): coefficients of t⁰ … t⁹. */
const ERFC_FIT = [
  -1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807, -1.13520398, 1.48851587, -0.82215223,
  0.17087277,
];

/** Σ coefficients[i]·tⁱ by Horner's rule. */
function polynomial(t: Tensor, coefficients: readonly number[]): Tensor {
  let result = add(mul(t, coefficients[coefficients.length - 1]), coefficients[coefficients.length - 2]);
  for (let i = coefficients.length - 3; i >= 0; i--) result = add(mul(result, t), coefficients[i]);
  return result;
}

/** erf of an f32 tensor, no gradient recorded (runs inside noGrad + tidy). */
function erfF32(x: Tensor): Tensor {
  const small = mul(x, polynomial(square(x), SERIES));
  const z = abs(x);
  const t = reciprocal(add(mul(z, 0.5), 1));
  const erfc = mul(t, exp(sub(polynomial(t, ERFC_FIT), square(z))));
  const large = mul(sign(x), sub(1, erfc));
  return where(less(z, SERIES_LIMIT), small, large);
}

/** Runs `compute` on x widened to f32 (f16/bf16 are rounded once at the end), without recording. */
function inF32(x: Tensor, compute: (wide: Tensor) => Tensor): Tensor {
  return noGrad(() =>
    tidy(() => {
      const wide = x.dtype === 'f32' ? x : castTo(x, 'f32');
      const result = compute(wide);
      return result.dtype === x.dtype ? result : castTo(result, x.dtype);
    }),
  );
}

/** The Gauss error function erf(x) = 2/√π ∫₀ˣ e^(−t²) dt (float dtypes); gradient 2/√π · e^(−x²). */
export function erf(x: Tensor): Tensor {
  checkTensor('erf', 'x', x);
  assertFloat('erf', x);
  const result = inF32(x, erfF32);
  recordOp('erf', [x], result, [x], (g, [savedX]) => [mul(g, mul(exp(neg(square(savedX))), TWO_OVER_SQRT_PI))]);
  return result;
}

/** Options of gelu. */
export interface GeluOptions {
  /** 'tanh' (default, kiln's behaviour so far): 0.5x(1 + tanh(√(2/π)(x + 0.044715x³))); 'none': the exact 0.5x(1 + erf(x/√2)). */
  approximate?: 'none' | 'tanh';
}

/**
 * GELU. Default `approximate: 'tanh'` (the fast approximation, as before); `'none'` is the exact
 * erf form PyTorch uses by default (`nn.GELU()`), with gradient Φ(x) + x·φ(x).
 */
export function gelu(x: Tensor, options: GeluOptions = {}): Tensor {
  checkTensor('gelu', 'x', x);
  const checked = checkOptions<GeluOptions>('gelu', 'options', options, {
    approximate: option.choice(['tanh', 'none']),
  });
  const approximate = checkChoice('gelu', 'options.approximate', checked.approximate, ['tanh', 'none'], 'tanh');
  if (approximate === 'tanh') return geluTanh(x);
  assertFloat('gelu', x);
  const result = inF32(x, (wide) => mul(mul(wide, 0.5), add(erfF32(mul(wide, INV_SQRT_2)), 1)));
  recordOp('gelu', [x], result, [x], (g, [savedX]) => {
    const slope = inF32(savedX, (wide) => {
      const cdf = mul(add(erfF32(mul(wide, INV_SQRT_2)), 1), 0.5);
      const pdf = mul(exp(mul(square(wide), -0.5)), INV_SQRT_2PI);
      return add(cdf, mul(wide, pdf));
    });
    const grad = mul(g, slope);
    slope.dispose();
    return [grad];
  });
  return result;
}
