/** Every public op (functional, autograd-aware). */
export * from './creation.js';
export * from './elementwise.js';
export { cast } from './cast.js';
export { sum, mean, max, min, argmax, argmin, sumToShape, type Axes } from './reduce.js';
export { matmul, type MatmulOptions } from './matmul.js';
export { reshape, unsqueeze, squeeze, permute, transpose, slice, concat, split, expand, clone } from './shape-ops.js';
export { gather, embedding } from './indexing.js';
export { writeSlice } from './in-place.js';
export { softmax, logSoftmax } from './nn/softmax.js';
export { rmsNorm, layerNorm } from './nn/normalization.js';
export { rope, swiglu, type RopeOptions } from './nn/rope-swiglu.js';
export { attention, type AttentionOptions } from './nn/attention.js';
export { crossEntropy, type CrossEntropyOptions } from './nn/cross-entropy.js';
export { adamwUpdate } from './nn/optimizer.js';
