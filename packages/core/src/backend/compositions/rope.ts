/**
 * Rotary embedding composed from primitives, half-split layout, on x [..., T, D] (normally
 * [B, H, T, D]). Algorithm: the backend has no sin/cos primitive, so the [T, D/2] cos and sin
 * tables (angle p·theta^(−2i/D), p = offset + t, computed in f64, rounded to f32) are host
 * constants uploaded once per call; the two halves of x are read through strided views, rotated
 * with mul/add/sub, and copied back into the two halves of the result. `inverse` negates sin.
 * Tokens-major x [B, T, H, D] is read through views of the same kind ([B, T, H, D/2] halves, tables
 * broadcast over batch and heads).
 */
import { InvalidArgumentError } from '../../errors.js';
import type { AttentionLayout, KernelBackend, StridedView, TensorRef } from '../kernel-backend.js';
import { asView, elementCount, stridedView, withScratch } from './helpers.js';

/** Host cos and sin tables [T, half] of the rotation angles (sin negated when inverse). */
export function rotaryTables(
  positions: number,
  dimension: number,
  offset: number,
  theta: number,
  inverse: boolean,
): { cos: Float32Array; sin: Float32Array } {
  const half = dimension / 2;
  const cos = new Float32Array(positions * half);
  const sin = new Float32Array(positions * half);
  for (let t = 0; t < positions; t++) {
    for (let i = 0; i < half; i++) {
      const angle = (offset + t) * Math.pow(theta, (-2 * i) / dimension);
      cos[t * half + i] = Math.cos(angle);
      sin[t * half + i] = inverse ? -Math.sin(angle) : Math.sin(angle);
    }
  }
  return { cos, sin };
}

/** How one half of x and the tables are viewed: heads-major [rows, T, half], tokens-major [B, T, H, half]. */
interface HalfLayout {
  shape: number[];
  strides: number[];
  tableStrides: number[];
}

function halfLayout(shape: readonly number[], tokensMajor: boolean): HalfLayout {
  const rank = shape.length;
  const dimension = shape[rank - 1];
  const half = dimension / 2;
  if (tokensMajor) {
    const [batch, positions, heads] = shape;
    return {
      shape: [batch, positions, heads, half],
      strides: [positions * heads * dimension, heads * dimension, dimension, 1],
      tableStrides: [0, half, 0, 1],
    };
  }
  const positions = shape[rank - 2];
  const rows = elementCount(shape) / (positions * dimension);
  return { shape: [rows, positions, half], strides: [positions * dimension, dimension, 1], tableStrides: [0, half, 1] };
}

/** The window of one half (first when start = 0, second when start = half). */
function halfView(ref: TensorRef, layout: HalfLayout, start: number): StridedView {
  return stridedView(ref, layout.shape, layout.strides, start);
}

/** rope over x [..., T, D] at positions offset..offset+T−1; inverse rotates by −angle. */
export function composedRope(
  backend: KernelBackend,
  x: TensorRef,
  out: TensorRef,
  offset: number,
  theta: number,
  inverse: boolean,
  layout: AttentionLayout = 'heads-major',
): void {
  const rank = x.shape.length;
  if (rank < 2) {
    throw new InvalidArgumentError(`rope needs x of shape [B, H, T, D], got [${x.shape.join(', ')}]`, {
      hint: 'Pass the attention heads as a [batch, heads, positions, headDim] tensor.',
    });
  }
  const tokensMajor = layout === 'tokens-major';
  if (tokensMajor && rank !== 4)
    throw new InvalidArgumentError(`rope: tokens-major x must be [B, T, H, D], got [${x.shape.join(', ')}]`);
  const positions = tokensMajor ? x.shape[1] : x.shape[rank - 2];
  const dimension = x.shape[rank - 1];
  if (dimension % 2 !== 0) {
    throw new InvalidArgumentError(`rope needs an even head dimension, got ${dimension}`, {
      hint: 'Use an even head dimension (the half-split layout pairs element i with i + D/2).',
    });
  }
  if (elementCount(x.shape) === 0) return;
  const half = dimension / 2;
  const view = halfLayout(x.shape, tokensMajor);
  withScratch(backend, (scratch) => {
    const tables = rotaryTables(positions, dimension, offset, theta, inverse);
    const cos = stridedView(scratch.uploaded(tables.cos, [positions, half]), view.shape, view.tableStrides);
    const sin = stridedView(scratch.uploaded(tables.sin, [positions, half]), view.shape, view.tableStrides);
    const input = scratch.toF32(x);
    const first = halfView(input, view, 0);
    const second = halfView(input, view, half);
    const rotatedFirst = scratch.binary('sub', scratch.binary('mul', first, cos), scratch.binary('mul', second, sin));
    const rotatedSecond = scratch.binary('add', scratch.binary('mul', second, cos), scratch.binary('mul', first, sin));
    const result = scratch.resultFor(out);
    backend.copy(asView(rotatedFirst), halfView(result, view, 0));
    backend.copy(asView(rotatedSecond), halfView(result, view, half));
    scratch.commit(result, out);
  });
}
