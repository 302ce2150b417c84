/** Every public op (functional, autograd-aware). docs/ops.md lists each with its semantics, dtypes and gradient. */
export * from './creation.js';
export { unaryKernel, binaryKernel } from './kernel-calls.js';
export {
  neg,
  abs,
  sign,
  exp,
  log,
  sqrt,
  rsqrt,
  reciprocal,
  square,
  tanh,
  sigmoid,
  relu,
  silu,
  add,
  sub,
  mul,
  div,
  pow,
  maximum,
  minimum,
  greater,
  greaterEqual,
  less,
  lessEqual,
  equal,
  notEqual,
  where,
  type TensorLike,
} from './elementwise.js';
export { erf, gelu, type GeluOptions } from './erf-gelu.js';
export { clamp, type ClampBound } from './clamp.js';
export { cast } from './cast.js';
export { sum, mean, max, min, argmax, argmin, sumToShape, type Axes } from './reduce.js';
export { cumsum, type CumsumOptions } from './cumsum.js';
export { matmul, type MatmulOptions } from './matmul.js';
export {
  reshape,
  unsqueeze,
  squeeze,
  permute,
  transpose,
  slice,
  concat,
  split,
  chunk,
  expand,
  clone,
  type SliceRange,
} from './shape-ops.js';
export { gather, embedding, takeAlongAxis } from './indexing.js';
export { writeSlice } from './in-place.js';
export { softmax, logSoftmax } from './nn/softmax.js';
export { rmsNorm, layerNorm, type LayerNormOptions, type RmsNormOptions } from './nn/normalization.js';
export { rope, swiglu, type RopeOptions } from './nn/rope-swiglu.js';
export { attention, type AttentionOptions } from './nn/attention.js';
export { crossEntropy, type CrossEntropyOptions } from './nn/cross-entropy.js';
export { adamwUpdate } from './nn/optimizer.js';
export {
  adamwDeviceScalars,
  adamwUpdateMulti,
  sumOfSquaresMulti,
  type AdamWDeviceScalarInputs,
  type AdamWMultiOptions,
} from './nn/multi-tensor.js';
