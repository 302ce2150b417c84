/**
 * The composed (fallback) fused kernels: for every fused kernel of KernelBackend, an
 * implementation built only from the required primitives plus alloc/free of temporaries.
 * Core calls these when a backend leaves a fused kernel out. Each takes the backend first,
 * then exactly the arguments of the backend method it replaces; none reads device memory back.
 */
import type { FusedKernelName, KernelBackend } from '../kernel-backend.js';
import { composedAdamw } from './adamw.js';
import { composedAttention, composedAttentionBackward } from './attention.js';
import { composedCrossEntropy, composedCrossEntropyBackward } from './cross-entropy.js';
import { composedAdamwMulti, composedSumOfSquaresMulti } from './multi-tensor.js';
import {
  composedLayerNorm,
  composedLayerNormBackward,
  composedRmsNorm,
  composedRmsNormBackward,
} from './normalization.js';
import { composedRandom } from './random.js';
import { composedRope } from './rope.js';
import { composedLogSoftmax, composedSoftmax, composedSoftmaxBackward } from './softmax.js';
import { composedSwiglu, composedSwigluBackward } from './swiglu.js';

/** For each fused kernel K: the signature of KernelBackend[K] with a leading `backend` argument. */
export type ComposedKernels = {
  readonly [K in FusedKernelName]: (backend: KernelBackend, ...args: Parameters<NonNullable<KernelBackend[K]>>) => void;
};

/** Every fused kernel composed from primitives (e.g. `composedKernels.softmax(backend, x, out, rows, cols)`). */
export const composedKernels: ComposedKernels = Object.freeze({
  random: composedRandom,
  softmax: composedSoftmax,
  softmaxBackward: composedSoftmaxBackward,
  logSoftmax: composedLogSoftmax,
  rmsNorm: composedRmsNorm,
  rmsNormBackward: composedRmsNormBackward,
  layerNorm: composedLayerNorm,
  layerNormBackward: composedLayerNormBackward,
  rope: composedRope,
  swiglu: composedSwiglu,
  swigluBackward: composedSwigluBackward,
  attention: composedAttention,
  attentionBackward: composedAttentionBackward,
  crossEntropy: composedCrossEntropy,
  crossEntropyBackward: composedCrossEntropyBackward,
  adamw: composedAdamw,
  sumOfSquaresMulti: composedSumOfSquaresMulti,
  adamwMulti: composedAdamwMulti,
});
