/** Strided views of dense tensors: what the copy, binary and where kernels read (no data moves, nothing recorded). */
import type { StridedView } from '../backend/kernel-backend.js';
import { broadcastStrides, contiguousStrides, shapesEqual, type Shape } from '../tensor/shape.js';
import type { Tensor } from '../tensor/tensor.js';

/** Contiguous strides per shape array (shapes are never mutated): a kernel call's views allocate none. */
const CONTIGUOUS_STRIDES = new WeakMap<Shape, readonly number[]>();

/** A strided view of a whole dense tensor (or a window of it). */
export function viewOf(
  tensor: Tensor,
  shape: Shape = tensor.shape,
  strides?: readonly number[],
  offset = 0,
): StridedView {
  const { buffer, dtype } = tensor.ref();
  let layout = strides ?? CONTIGUOUS_STRIDES.get(tensor.shape);
  if (layout === undefined) {
    layout = contiguousStrides(tensor.shape);
    CONTIGUOUS_STRIDES.set(tensor.shape, layout);
  }
  return { buffer, shape, dtype, strides: layout, offset };
}

/** `tensor` viewed broadcast to `shape` (its own cached dense view when the shapes are equal: nothing allocated but the view). */
export function broadcastView(tensor: Tensor, shape: Shape): StridedView {
  return shapesEqual(tensor.shape, shape)
    ? viewOf(tensor)
    : viewOf(tensor, shape, broadcastStrides(tensor.shape, shape));
}
