/**
 * Elementwise kernels on the SIMD path: binary arithmetic on f32 views whose rows (after
 * merging contiguous axes) step by 0 or 1, SwiGLU, AdamW, rope (cos/sin tables cached per
 * shape on the heap), and copies of 4-byte elements into a dense target.
 * Large calls split their elements (or rows) over threads; elementwise results do not depend
 * on the split.
 */
import {
  contiguousStrides,
  type AdamWParams,
  type BinaryOp,
  type ReduceOp,
  type StridedView,
  type TensorRef,
  type UnaryOp,
} from '@kiln/core';
import { elementCount } from '../tensor-access.js';
import { coalesce, rowStarts } from '../kernels/strided.js';
import { SIMD_BINARY_OPS, type SimdBinaryOp } from './emit-elementwise.js';
import { SIMD_UNARY_OPS, type SimdUnaryOp } from './emit-unary-reduce.js';
import { splitRange, type SimdContext } from './simd-context.js';

/** Runs `fn` over [0, count) elements split into 4-aligned shares; `args(start, end)` builds the call. */
function overElements(
  context: SimdContext,
  count: number,
  weight: number,
  fn: string,
  args: (start: number, end: number) => number[],
): void {
  const ranges = splitRange(count, context.threadsFor(count * weight), 4);
  context.parallel(ranges.length, (thread) => [{ fn, args: args(ranges[thread][0], ranges[thread][1]) }]);
}

/** Shortest row the per-row binary path takes (shorter rows stay in TypeScript, where a call costs nothing). */
const MIN_BINARY_ROW = 16;

/** binary on f32 views; false when the SIMD path does not take the call. */
export function simdBinary(
  context: SimdContext,
  op: BinaryOp,
  a: StridedView,
  b: StridedView,
  out: TensorRef,
): boolean {
  if (!context.allF32(a, b, out) || !(SIMD_BINARY_OPS as readonly string[]).includes(op)) return false;
  const count = elementCount(out.shape);
  if (count === 0) return true;
  const layout = coalesce(out.shape, [a.strides, b.strides, contiguousStrides(out.shape)]);
  const rank = layout.shape.length;
  const length = layout.shape[rank - 1];
  const aStep = layout.strides[0][rank - 1];
  const bStep = layout.strides[1][rank - 1];
  if ((aStep !== 0 && aStep !== 1) || (bStep !== 0 && bStep !== 1)) return false;
  if (rank > 1 && length < MIN_BINARY_ROW) return false;
  const fn = `binary_${op as SimdBinaryOp}`;
  const aBase = context.address(a, 'binary');
  const bBase = context.address(b, 'binary');
  const outBase = context.address(out, 'binary');
  if (rank === 1) {
    overElements(context, count, 3, fn, (start, end) => [
      aBase + 4 * (a.offset + start * aStep),
      aStep,
      bBase + 4 * (b.offset + start * bStep),
      bStep,
      outBase + 4 * start,
      end - start,
    ]);
    return true;
  }
  // Several rows (a broadcast along an outer axis): one call per row, on the calling thread.
  const [aStarts, bStarts] = rowStarts(layout, [a.offset, b.offset]);
  const kernel = context.kernels[fn];
  for (let row = 0; row < aStarts.length; row++)
    kernel(aBase + 4 * aStarts[row], aStep, bBase + 4 * bStarts[row], bStep, outBase + 4 * row * length, length);
  return true;
}

/** swiglu of f32 tensors. */
export function simdSwiglu(context: SimdContext, gate: TensorRef, up: TensorRef, out: TensorRef): boolean {
  if (!context.allF32(gate, up, out)) return false;
  const [g, u, o] = [gate, up, out].map((tensor) => context.address(tensor, 'swiglu'));
  overElements(context, elementCount(out.shape), 16, 'swiglu', (start, end) => [
    g + 4 * start,
    u + 4 * start,
    o + 4 * start,
    end - start,
  ]);
  return true;
}

/** swigluBackward of f32 tensors. */
export function simdSwigluBackward(
  context: SimdContext,
  gate: TensorRef,
  up: TensorRef,
  dy: TensorRef,
  dGate: TensorRef,
  dUp: TensorRef,
): boolean {
  if (!context.allF32(gate, up, dy, dGate, dUp)) return false;
  const addresses = [gate, up, dy, dGate, dUp].map((tensor) => context.address(tensor, 'swigluBackward'));
  overElements(context, elementCount(dy.shape), 16, 'swiglu_backward', (start, end) => [
    ...addresses.map((address) => address + 4 * start),
    end - start,
  ]);
  return true;
}

/** adamw on f32 tensors (in place on param, m, v). */
export function simdAdamw(
  context: SimdContext,
  param: TensorRef,
  grad: TensorRef,
  m: TensorRef,
  v: TensorRef,
  params: AdamWParams,
): boolean {
  if (!context.allF32(param, grad, m, v)) return false;
  const { lr, beta1, beta2, eps, weightDecay, step } = params;
  const addresses = [param, grad, m, v].map((tensor) => context.address(tensor, 'adamw'));
  const scalars = [
    lr,
    beta1,
    beta2,
    eps,
    1 - lr * weightDecay,
    1 - Math.pow(beta1, step),
    1 - Math.pow(beta2, step),
    1,
  ];
  overElements(context, elementCount(param.shape), 8, 'adamw', (start, end) => [
    ...addresses.map((address) => address + 4 * start),
    end - start,
    ...scalars,
  ]);
  return true;
}

/** Rope cos/sin tables on the heap, by (T, D, offset, theta, inverse); a handful are kept. */
export class RopeTables {
  private readonly tables = new Map<string, { cosines: number; sines: number; size: number }>();

  constructor(private readonly context: SimdContext) {}

  /** Addresses of cos and (sign-adjusted) sin tables [T, D/2]. */
  lookup(
    sequence: number,
    depth: number,
    offset: number,
    theta: number,
    inverse: boolean,
  ): { cosines: number; sines: number } {
    const key = `${sequence},${depth},${offset},${theta},${inverse}`;
    const cached = this.tables.get(key);
    if (cached !== undefined) return cached;
    const half = depth >> 1;
    const heap = this.context.runtime.heap;
    const block = heap.allocate(Math.max(16, 8 * sequence * half));
    const cosines = this.context.floats(block.offset, sequence * half);
    const sines = this.context.floats(block.offset + 4 * sequence * half, sequence * half);
    const sign = inverse ? -1 : 1;
    for (let t = 0; t < sequence; t++) {
      for (let i = 0; i < half; i++) {
        const angle = (offset + t) * Math.pow(theta, (-2 * i) / depth);
        cosines[t * half + i] = Math.cos(angle);
        sines[t * half + i] = sign * Math.sin(angle);
      }
    }
    if (this.tables.size >= 16) {
      const [oldestKey, oldest] = this.tables.entries().next().value as [string, { cosines: number; size: number }];
      heap.release(oldest.cosines, oldest.size);
      this.tables.delete(oldestKey);
    }
    const entry = { cosines: block.offset, sines: block.offset + 4 * sequence * half, size: block.size };
    this.tables.set(key, entry);
    return entry;
  }

  /** Returns every table to the heap. */
  dispose(): void {
    for (const { cosines, size } of this.tables.values()) this.context.runtime.heap.release(cosines, size);
    this.tables.clear();
  }
}

/** rope of f32 tensors. */
export function simdRope(
  context: SimdContext,
  tables: RopeTables,
  x: TensorRef,
  out: TensorRef,
  offset: number,
  theta: number,
  inverse: boolean,
): boolean {
  if (!context.allF32(x, out) || x.shape.length < 2) return false;
  const sequence = x.shape[x.shape.length - 2];
  const depth = x.shape[x.shape.length - 1];
  if (depth % 2 !== 0 || sequence === 0 || depth === 0) return false;
  const rows = elementCount(x.shape) / depth;
  const { cosines, sines } = tables.lookup(sequence, depth, offset, theta, inverse);
  const source = context.address(x, 'rope');
  const target = context.address(out, 'rope');
  // Shares of whole sequences, so every share starts at position 0.
  const ranges = splitRange(rows / sequence, context.threadsFor(rows * depth * 4));
  context.parallel(ranges.length, (thread) => {
    const [start, end] = ranges[thread];
    const offsetBytes = 4 * start * sequence * depth;
    return [
      {
        fn: 'rope_rows',
        args: [
          source + offsetBytes,
          target + offsetBytes,
          (end - start) * sequence,
          sequence,
          depth >> 1,
          cosines,
          sines,
        ],
      },
    ];
  });
  return true;
}

/** copy of 4-byte elements into a dense target of rank ≤ 4 (after merging axes); false otherwise. */
export function simdCopy(context: SimdContext, src: StridedView, dst: StridedView): boolean {
  if ((src.dtype !== 'f32' && src.dtype !== 'i32') || src.dtype !== dst.dtype) return false;
  const count = elementCount(src.shape);
  if (count === 0) return true;
  const sourceBuffer = context.access.buffer(src, 'copy');
  const targetBuffer = context.access.buffer(dst, 'copy');
  if (sourceBuffer === targetBuffer) return false;
  const layout = coalesce(src.shape, [src.strides, dst.strides]);
  const rank = layout.shape.length;
  if (rank > 4) return false;
  // The target must be dense in the merged order.
  const dense = contiguousStrides(layout.shape);
  for (let axis = 0; axis < rank; axis++)
    if (layout.shape[axis] > 1 && layout.strides[1][axis] !== dense[axis]) return false;
  const shape = [...Array<number>(4 - rank).fill(1), ...layout.shape];
  const strides = [...Array<number>(4 - rank).fill(0), ...layout.strides[0]];
  const source = sourceBuffer.heapAddress + 4 * src.offset;
  const target = targetBuffer.heapAddress + 4 * dst.offset;
  // Large copies split the outermost axis with more than one index; the target is dense.
  const axis = Math.max(
    0,
    shape.findIndex((size) => size > 1),
  );
  const ranges = splitRange(shape[axis], context.threadsFor(count * 2));
  const targetStride = shape.slice(axis + 1).reduce((product, size) => product * size, 1);
  context.parallel(ranges.length, (thread) => {
    const [start, end] = ranges[thread];
    const part = shape.slice();
    part[axis] = end - start;
    return [
      {
        fn: 'copy_strided_4d',
        args: [source + 4 * start * strides[axis], target + 4 * start * targetStride, ...part, ...strides],
      },
    ];
  });
  return true;
}

/** unary on f32 tensors for the ops of SIMD_UNARY_OPS; false otherwise. */
export function simdUnary(context: SimdContext, op: UnaryOp, x: TensorRef, out: TensorRef): boolean {
  if (!context.allF32(x, out) || !(SIMD_UNARY_OPS as readonly string[]).includes(op)) return false;
  const source = context.address(x, 'unary');
  const target = context.address(out, 'unary');
  const weight = op === 'exp' || op === 'sigmoid' || op === 'silu' ? 16 : 3;
  overElements(context, elementCount(out.shape), weight, `unary_${op as SimdUnaryOp}`, (start, end) => [
    source + 4 * start,
    target + 4 * start,
    end - start,
  ]);
  return true;
}

/** reduce 'sum' of f32 over the last axis (inner = 1), float64 accumulation; false otherwise. */
export function simdReduce(
  context: SimdContext,
  op: ReduceOp,
  x: TensorRef,
  out: TensorRef,
  outer: number,
  size: number,
  inner: number,
): boolean {
  if (op !== 'sum' || inner !== 1 || !context.allF32(x, out)) return false;
  const source = context.address(x, 'reduce');
  const target = context.address(out, 'reduce');
  const ranges = splitRange(outer, context.threadsFor(outer * size * 3));
  context.parallel(ranges.length, (thread) => {
    const [start, end] = ranges[thread];
    return [{ fn: 'row_sums', args: [source + 4 * start * size, target + 4 * start, end - start, size] }];
  });
  return true;
}
