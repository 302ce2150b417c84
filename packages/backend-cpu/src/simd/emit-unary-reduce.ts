/**
 * Unary f32 kernels (the ones a training step uses: square for the gradient norm, and the
 * simple arithmetic and activations) and the sum of each row of a contiguous [rows, cols] f32
 * array, in WebAssembly SIMD.
 * Numerics: neg, abs, square, sqrt, reciprocal and relu are correctly rounded like the
 * TypeScript kernels' float64-then-round; exp, sigmoid and silu use expF32x4 (≤ 2 ulp). Row
 * sums accumulate in float64 (two f64x2 accumulators per 4 lanes, added in a fixed order).
 */
import type { Expr } from '../wasm/expression.js';
import { f32, f64, f64x2, i32, v128 } from '../wasm/instructions.js';
import type { ModuleBuilder } from '../wasm/module-builder.js';
import { expF32x4, sigmoidF32x4 } from './emit-math.js';
import { vectorConstant, type SimdOps } from './simd-ops.js';
import type { FunctionBuilder } from '../wasm/module-builder.js';

/** The unary ops with a SIMD kernel. */
export const SIMD_UNARY_OPS = ['neg', 'abs', 'square', 'sqrt', 'reciprocal', 'relu', 'exp', 'sigmoid', 'silu'] as const;
/** One of SIMD_UNARY_OPS. */
export type SimdUnaryOp = (typeof SIMD_UNARY_OPS)[number];

function apply(f: FunctionBuilder, simd: SimdOps, op: SimdUnaryOp, x: Expr): Expr {
  switch (op) {
    case 'neg':
      return simd.neg(x);
    case 'abs':
      return simd.abs(x);
    case 'square':
      return simd.mul(x, x);
    case 'sqrt':
      return simd.sqrt(x);
    case 'reciprocal':
      return simd.div(vectorConstant(f, simd, 1), x);
    // IEEE max: NaN stays NaN, and max(−0, +0) = +0 as Math.max.
    case 'relu':
      return simd.max(x, vectorConstant(f, simd, 0));
    case 'exp':
      return expF32x4(f, simd, x);
    case 'sigmoid':
      return sigmoidF32x4(f, simd, x);
    case 'silu':
      return simd.mul(x, sigmoidF32x4(f, simd, x));
  }
}

/** Emits unary_<op>(x, out, count) for every SIMD_UNARY_OPS and row_sums(x, out, rows, cols). */
export function emitUnaryAndReduce(module: ModuleBuilder, simd: SimdOps): void {
  for (const op of SIMD_UNARY_OPS) {
    module.func(`unary_${op}`, { params: { x: 'i32', out: 'i32', count: 'i32' } }, (f, { x, out, count }) => {
      const o = f.local('i32');
      const value = f.local('v128');
      const bytes = f.local('i32');
      f.set(bytes, i32.shl(count, 2));
      // Vector body, then the tail one lane at a time through the same vector code.
      f.for(o, 0, i32.and(bytes, ~15), 16, () => {
        f.set(value, v128.load(i32.add(x, o)));
        f.exec(v128.store(i32.add(out, o), apply(f, simd, op, value)));
      });
      f.for(o, i32.and(bytes, ~15), bytes, 4, () => {
        f.set(value, v128.load32Zero(i32.add(x, o)));
        f.exec(v128.store32Lane(i32.add(out, o), apply(f, simd, op, value), 0));
      });
    });
  }

  module.func(
    'row_sums',
    { params: { x: 'i32', out: 'i32', rows: 'i32', cols: 'i32' } },
    (f, { x, out, rows, cols }) => {
      const row = f.local('i32');
      const o = f.local('i32');
      const rowBytes = f.local('i32');
      const low = f.local('v128');
      const high = f.local('v128');
      const value = f.local('v128');
      const sum = f.local('f64');
      f.set(rowBytes, i32.shl(cols, 2));
      f.for(row, 0, rows, 1, () => {
        f.set(low, f64x2.promoteLowF32x4(simd.constSplat(0)));
        f.set(high, low);
        f.for(o, 0, i32.and(rowBytes, ~15), 16, () => {
          f.set(value, v128.load(i32.add(x, o)));
          f.set(low, f64x2.add(low, f64x2.promoteLowF32x4(value)));
          f.set(high, f64x2.add(high, f64x2.promoteLowF32x4(simd.shuffle(value, value, [2, 3, 2, 3]))));
        });
        f.set(
          sum,
          f64.add(
            f64.add(f64x2.extractLane(low, 0), f64x2.extractLane(low, 1)),
            f64.add(f64x2.extractLane(high, 0), f64x2.extractLane(high, 1)),
          ),
        );
        f.for(o, i32.and(rowBytes, ~15), rowBytes, 4, () =>
          f.set(sum, f64.add(sum, f64.fromF32(f32.load(i32.add(x, o))))),
        );
        f.exec(f32.store(out, f32.fromF64(sum)));
        f.set(x, i32.add(x, rowBytes));
        f.set(out, i32.add(out, 4));
      });
    },
  );
}
