/**
 * @kiln/core — tensors, dtypes, the KernelBackend contract and registry, autograd, nn ops,
 * safetensors io and typed errors. Backends are separate packages (`@kiln/backend-cpu`, …).
 */
export * from './dtype.js';
export * from './errors.js';
export * from './half.js';
export { formatCount } from './format-count.js';
export { philox4x32, philoxUniform, philoxNormal } from './random/philox.js';
export * from './backend/index.js';
export { composedKernels, type ComposedKernels } from './backend/compositions/index.js';
export { Tensor } from './tensor/tensor.js';
export { tidy, keep } from './tensor/scope.js';
export { shapeSize, contiguousStrides, broadcastShapes, formatShape, type Shape } from './tensor/shape.js';
export { encodeHostValues, decodeHostValues } from './tensor/host-data.js';
export { setBackend, getBackend, peekBackend } from './engine/context.js';
export { useBackend, type UseBackendOptions } from './engine/use-backend.js';
export { toBackend, memory, synchronize } from './engine/memory.js';
export { planKernel, type KernelPlan } from './engine/dispatch.js';
export { noGrad, isGradEnabled } from './autograd/grad-node.js';
export { backward, grad, valueAndGrad, type ValueAndGrads } from './autograd/backward.js';
export { checkpoint } from './autograd/checkpoint.js';
export * from './ops/index.js';
// Layout queries of attention and rope (not ops: they only read a backend's capabilities).
export { backendReadsAttentionLayout } from './ops/nn/attention.js';
export { backendReadsRopeLayout } from './ops/nn/rope-swiglu.js';
export * from './io/index.js';
