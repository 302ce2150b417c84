/** Strided views of dense tensors: what the copy, binary and where kernels read (no data moves, nothing recorded). */
import type { StridedView } from '../backend/kernel-backend.js';
import { broadcastStrides, shapesEqual, type Shape } from '../tensor/shape.js';
import type { Tensor } from '../tensor/tensor.js';

/**
 * A strided view of a whole dense tensor (the tensor's cached view: nothing allocated) or of a
 * window of it (`shape` with `strides`, default contiguous, from `offset`).
 */
export function viewOf(tensor: Tensor, shape?: Shape, strides?: readonly number[], offset = 0): StridedView {
  const whole = tensor.denseView();
  if (shape === undefined && strides === undefined && offset === 0) return whole;
  return {
    buffer: whole.buffer,
    shape: shape ?? tensor.shape,
    dtype: whole.dtype,
    strides: strides ?? whole.strides,
    offset,
  };
}

/** `tensor` viewed broadcast to `shape` (its own cached dense view when the shapes are equal). */
export function broadcastView(tensor: Tensor, shape: Shape): StridedView {
  return shapesEqual(tensor.shape, shape)
    ? tensor.denseView()
    : viewOf(tensor, shape, broadcastStrides(tensor.shape, shape));
}
