/**
 * Planted bugs in the primitives: i32 arithmetic that saturates or loses bits instead of wrapping,
 * conversions that round twice or saturate at the old bound, pow through exp·log, where on
 * condition bits or with subnormals flushed, copies that merge axes from a partial check, f16 sums
 * accumulated in f16, a scatterAdd without atomics and an argmax with the wrong tie-break.
 */
import type { BinaryOp, ReduceOp, StridedView, TensorRef, UnaryOp } from '@kiln/core';
import type { DType } from '@kiln/core';
import { roundToF16 } from '@kiln/core';
import { binaryFunction, unaryFunction } from '../../src/reference/scalar-math.js';
import type { ReferenceBackend } from '../../src/index.js';
import { count, f32, load, loadView, store, viewIndices, type PlantedBug } from './host.js';

const [I32_MIN, I32_MAX] = [-2147483648, 2147483647];

/** A binary kernel computing `compute(op, a, b, integer)` per element (the reference's scalar functions unless overridden). */
function binaryKernel(
  base: ReferenceBackend,
  compute: (op: BinaryOp, a: number, b: number, integer: boolean) => number,
) {
  return {
    binary(op: BinaryOp, a: StridedView, b: StridedView, out: TensorRef): void {
      const [left, right] = [loadView(base, a), loadView(base, b)];
      const integer = a.dtype === 'i32' && b.dtype === 'i32';
      store(
        base,
        out,
        left.map((value, index) => compute(op, value, right[index], integer)),
      );
    },
  };
}

const defaultBinary = (op: BinaryOp, a: number, b: number, integer: boolean) => binaryFunction(op, integer)(a, b);

/** A sum over [outer, size, inner] with `accumulate(total, term, s, size)`; every other reduction (and other dtypes) is the reference's. */
function sumKernel(
  base: ReferenceBackend,
  dtype: DType,
  accumulate: (total: number, term: number, s: number, size: number) => number,
) {
  return {
    reduce(op: ReduceOp, x: TensorRef, out: TensorRef, outer: number, size: number, inner: number): void {
      if (op !== 'sum' || x.dtype !== dtype) {
        base.reduce(op, x, out, outer, size, inner);
        return;
      }
      const values = load(base, x);
      const result = new Float64Array(outer * inner);
      for (let o = 0; o < outer; o++) {
        for (let i = 0; i < inner; i++) {
          let total = 0;
          for (let s = 0; s < size; s++) total = accumulate(total, values[(o * size + s) * inner + i], s, size);
          result[o * inner + i] = total;
        }
      }
      store(base, out, result);
    },
  };
}

/** A cast kernel converting `from` → `to` element by element with `convert` (the stored value is then rounded once to `to`). */
function castKernel(base: ReferenceBackend, from: DType, to: DType, convert: (value: number) => number) {
  return {
    cast(x: TensorRef, out: TensorRef): void {
      if (x.dtype !== from || out.dtype !== to) {
        base.cast(x, out);
        return;
      }
      store(base, out, load(base, x).slice(0, count(x.shape)).map(convert));
    },
  };
}

/** A fill kernel for one dtype storing `convert(value)` (rounded once to the dtype by the store). */
function fillKernel(base: ReferenceBackend, dtype: DType, convert: (value: number) => number) {
  return {
    fill(out: TensorRef, value: number): void {
      if (out.dtype !== dtype) {
        base.fill(out, value);
        return;
      }
      store(base, out, new Float64Array(count(out.shape)).fill(convert(value)));
    },
  };
}

/** The same f32 value with its magnitude rounded toward zero instead of to nearest (cvt.rz). */
function towardZeroF32(value: number): number {
  const nearest = f32(value);
  if (Math.abs(nearest) <= Math.abs(value)) return nearest;
  const bits = new Uint32Array(new Float32Array([nearest]).buffer);
  bits[0] -= 1;
  return new Float32Array(bits.buffer)[0];
}

/** A where kernel that counts a condition as true when `isTrue(value)`. */
function whereKernel(base: ReferenceBackend, isTrue: (condition: number) => boolean) {
  return {
    where(condition: StridedView, a: StridedView, b: StridedView, out: TensorRef): void {
      const [test, left, right] = [loadView(base, condition), loadView(base, a), loadView(base, b)];
      store(
        base,
        out,
        test.map((value, index) => (isTrue(value) ? left[index] : right[index])),
      );
    },
  };
}

/** True when a view's last two axes are contiguous, which is all a hasty backend checks before copying it as one block. */
function lastTwoAxesContiguous(view: StridedView): boolean {
  const rank = view.shape.length;
  return rank >= 2 && view.strides[rank - 1] === 1 && view.strides[rank - 2] === view.shape[rank - 1];
}

/** A copy kernel; `asBlock(view)` says when a view is (wrongly or rightly) treated as one contiguous block from its offset. */
function copyKernel(base: ReferenceBackend, asBlock: (view: StridedView, role: 'src' | 'dst') => boolean) {
  return {
    copy(src: StridedView, dst: StridedView): void {
      const indices = (view: StridedView, role: 'src' | 'dst') =>
        asBlock(view, role) ? Array.from({ length: count(view.shape) }, (_, i) => view.offset + i) : viewIndices(view);
      const [from, to] = [indices(src, 'src'), indices(dst, 'dst')];
      const source = load(base, src);
      const target = load(base, dst);
      from.forEach((index, i) => (target[to[i]] = source[index]));
      store(base, dst, target);
    },
  };
}

/** A dense view's block test: contiguous row-major strides (always a correct reason to copy a block). */
function denseStrides(view: StridedView): boolean {
  let expected = 1;
  for (let axis = view.shape.length - 1; axis >= 0; axis--) {
    if (view.shape[axis] !== 1 && view.strides[axis] !== expected) return false;
    expected *= view.shape[axis];
  }
  return true;
}

export const ELEMENTWISE_BUGS: PlantedBug[] = [
  {
    name: 'an i32 add computed in float and saturated instead of wrapping',
    kernel: 'binary',
    dtypes: ['i32'],
    caughtBy: 'binary i32 [add overflow same 7×13]',
    plant: (base, planted) =>
      binaryKernel(base, (op, a, b, integer) =>
        planted && integer && op === 'add'
          ? Math.min(I32_MAX, Math.max(I32_MIN, a + b))
          : defaultBinary(op, a, b, integer),
      ),
  },
  {
    name: 'an i32 sub computed in float and saturated instead of wrapping',
    kernel: 'binary',
    dtypes: ['i32'],
    caughtBy: 'binary i32 [sub overflow same 7×13]',
    plant: (base, planted) =>
      binaryKernel(base, (op, a, b, integer) =>
        planted && integer && op === 'sub'
          ? Math.min(I32_MAX, Math.max(I32_MIN, a - b))
          : defaultBinary(op, a, b, integer),
      ),
  },
  {
    name: 'an i32 mul computed as a float64 product then `| 0` (the low bits of products past 2⁵³ are lost)',
    kernel: 'binary',
    dtypes: ['i32'],
    caughtBy: 'binary i32 [mul overflow same 7×13]',
    plant: (base, planted) =>
      binaryKernel(base, (op, a, b, integer) =>
        planted && integer && op === 'mul' ? (a * b) | 0 : defaultBinary(op, a, b, integer),
      ),
  },
  {
    name: 'an i32 square computed as a float64 product then `| 0`',
    kernel: 'unary',
    dtypes: ['i32'],
    caughtBy: 'unary i32 [square overflow 37]',
    plant: (base, planted) => ({
      unary(op: UnaryOp, x: TensorRef, out: TensorRef): void {
        const integer = x.dtype === 'i32';
        const operation =
          planted && integer && op === 'square' ? (value: number) => (value * value) | 0 : unaryFunction(op, integer);
        store(base, out, load(base, x).slice(0, count(x.shape)).map(operation));
      },
    }),
  },
  {
    name: 'an i32 sum accumulated in float64 and saturated at the end instead of wrapping',
    kernel: 'reduce',
    dtypes: ['i32'],
    caughtBy: 'reduce i32 [sum overflow outer=2,size=33,inner=3]',
    plant: (base, planted) => sumKernel(base, 'i32', (total, term) => (planted ? total + term : (total + term) | 0)),
  },
  {
    name: 'an i32 sum accumulated in an f32 register',
    kernel: 'reduce',
    dtypes: ['i32'],
    caughtBy: 'reduce i32 [sum overflow outer=2,size=33,inner=3]',
    plant: (base, planted) =>
      sumKernel(base, 'i32', (total, term) => (planted ? f32(total + term) : (total + term) | 0)),
  },
  {
    name: 'an f16 sum accumulated in f16',
    kernel: 'reduce',
    dtypes: ['f16'],
    caughtBy: 'reduce f16 [sum positive outer=1,size=2000,inner=2]',
    plant: (base, planted) =>
      sumKernel(base, 'f16', (total, term) => (planted ? roundToF16(total + term) : f32(total + term))),
  },
  {
    name: 'a float sum that drops the last element',
    kernel: 'reduce',
    caughtBy: 'reduce f32 [sum outer=2,size=7,inner=3]',
    plant: (base, planted) =>
      sumKernel(base, 'f32', (total, term, s, size) => (planted && s === size - 1 ? total : total + term)),
  },
  {
    name: 'a parallel argmax whose combine step keeps the later index on ties',
    kernel: 'reduce',
    caughtBy: 'reduce f32 [argmax outer=2,size=7,inner=3]',
    plant: (base, planted) => ({
      reduce(op: ReduceOp, x: TensorRef, out: TensorRef, outer: number, size: number, inner: number): void {
        if (op !== 'argmax' || x.dtype !== 'f32') {
          base.reduce(op, x, out, outer, size, inner);
          return;
        }
        const values = load(base, x);
        const result = new Float64Array(outer * inner);
        for (let o = 0; o < outer; o++) {
          for (let i = 0; i < inner; i++) {
            let best = 0;
            for (let s = 0; s < size; s++) {
              const [value, current] = [values[(o * size + s) * inner + i], values[(o * size + best) * inner + i]];
              if (Number.isNaN(current)) break;
              if (Number.isNaN(value) || value > current || (planted && value === current)) best = s;
            }
            result[o * inner + i] = best;
          }
        }
        store(base, out, result);
      },
    }),
  },
  {
    name: 'an i32 → f32 cast that rounds toward zero (cvt.rz instead of cvt.rn)',
    kernel: 'cast',
    dtypes: ['i32'],
    caughtBy: 'cast i32 [to f32]',
    plant: (base, planted) => castKernel(base, 'i32', 'f32', (value) => (planted ? towardZeroF32(value) : value)),
  },
  {
    name: 'an i32 → bf16 cast that goes through f32 (rounds twice)',
    kernel: 'cast',
    dtypes: ['i32'],
    caughtBy: 'cast i32 [to bf16]',
    plant: (base, planted) => castKernel(base, 'i32', 'bf16', (value) => (planted ? f32(value) : value)),
  },
  {
    name: 'a float → i32 cast that saturates negative overflow at −(2³¹ − 1)',
    kernel: 'cast',
    caughtBy: 'cast f32 [to i32]',
    plant: (base, planted) =>
      castKernel(base, 'f32', 'i32', (value) =>
        Number.isNaN(value) ? 0 : Math.max(planted ? -I32_MAX : I32_MIN, Math.min(I32_MAX, Math.trunc(value))),
      ),
  },
  {
    name: 'an f16 fill that rounds the float64 value to f32 first (rounds twice)',
    kernel: 'fill',
    dtypes: ['f16'],
    caughtBy: 'fill f16 [double rounding and i32 saturation values length=5]',
    plant: (base, planted) => fillKernel(base, 'f16', (value) => (planted ? f32(value) : value)),
  },
  {
    name: 'a bf16 fill that rounds the float64 value to f32 first (rounds twice)',
    kernel: 'fill',
    dtypes: ['bf16'],
    caughtBy: 'fill bf16 [double rounding and i32 saturation values length=5]',
    plant: (base, planted) => fillKernel(base, 'bf16', (value) => (planted ? f32(value) : value)),
  },
  {
    name: 'an i32 fill that saturates negative overflow at −(2³¹ − 1)',
    kernel: 'fill',
    dtypes: ['i32'],
    caughtBy: 'fill i32 [double rounding and i32 saturation values length=5]',
    plant: (base, planted) => fillKernel(base, 'i32', (value) => (planted && value < -I32_MAX ? -I32_MAX : value)),
  },
  {
    name: 'pow computed as exp(b·log a) (fast-math powf: NaN for negative bases)',
    kernel: 'binary',
    caughtBy: 'binary f32 [pow negative bases same 7×13]',
    plant: (base, planted) =>
      binaryKernel(base, (op, a, b, integer) =>
        planted && op === 'pow' ? Math.exp(b * Math.log(a)) : defaultBinary(op, a, b, integer),
      ),
  },
  {
    name: "a where that tests the condition's bits, so −0 counts as true",
    kernel: 'where',
    caughtBy: 'where f32 [condition f32 same 7×13]',
    plant: (base, planted) => whereKernel(base, (value) => value !== 0 || (planted && Object.is(value, -0))),
  },
  {
    name: 'a where that tests `condition > 0 || condition < 0`, so NaN counts as false',
    kernel: 'where',
    caughtBy: 'where f32 [condition f32 same 7×13]',
    plant: (base, planted) => whereKernel(base, (value) => (planted ? value > 0 || value < 0 : value !== 0)),
  },
  {
    name: 'a where that flushes subnormal conditions to zero (FTZ)',
    kernel: 'where',
    caughtBy: 'where f32 [condition f32 same 7×13]',
    plant: (base, planted) => whereKernel(base, (value) => value !== 0 && !(planted && Math.abs(value) < 2 ** -126)),
  },
  {
    name: 'a copy that judges the source contiguous from its last two axes and copies it as one block',
    kernel: 'copy',
    caughtBy: 'copy f32 [partly contiguous src 6×6×5[:,1:5,:]]',
    plant: (base, planted) =>
      copyKernel(
        base,
        (view, role) => denseStrides(view) || (planted && role === 'src' && lastTwoAxesContiguous(view)),
      ),
  },
  {
    name: 'a copy that judges the destination contiguous from its last two axes and writes it as one block',
    kernel: 'copy',
    caughtBy: 'copy f32 [partly contiguous dst 4×3×5 into 4×4×5]',
    plant: (base, planted) =>
      copyKernel(
        base,
        (view, role) => denseStrides(view) || (planted && role === 'dst' && lastTwoAxesContiguous(view)),
      ),
  },
  {
    name: 'a scatterAdd without atomics: for duplicate indices the last writer wins',
    kernel: 'scatterAdd',
    caughtBy: 'scatterAdd f32 [outer=3,rows=4,inner=5,count=9]',
    plant: (base, planted) => ({
      scatterAdd(
        source: TensorRef,
        indices: TensorRef,
        out: TensorRef,
        outer: number,
        rows: number,
        inner: number,
      ): void {
        const [values, targets, original] = [load(base, source), load(base, indices), load(base, out)];
        const result = original.slice();
        const found = count(indices.shape);
        for (let o = 0; o < outer; o++) {
          for (let i = 0; i < found; i++) {
            for (let j = 0; j < inner; j++) {
              const target = (o * rows + targets[i]) * inner + j;
              // Every thread read out before any wrote it: a racing read-modify-write.
              result[target] = (planted ? original[target] : result[target]) + values[(o * found + i) * inner + j];
            }
          }
        }
        store(base, out, result);
      },
    }),
  },
  {
    name: 'a kernel that allocates scratch memory and never frees it',
    kernel: 'unary',
    caughtBy: 'unary f32 [exp 7×13]',
    plant: (base, planted) => ({
      unary(op: UnaryOp, x: TensorRef, out: TensorRef): void {
        if (planted) base.alloc(64);
        base.unary(op, x, out);
      },
    }),
  },
];
