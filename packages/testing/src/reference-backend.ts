/**
 * The float64 reference backend: a complete KernelBackend (storage, every primitive, every fused
 * kernel) whose math decodes inputs to float64, evaluates docs/kernel-semantics.md literally and
 * rounds once into the output dtype. It is the oracle of the conformance kit, and, with options,
 * a stand-in for awkward devices: primitives only, asynchronous reads only, a memory limit, or
 * dtypes declared unsupported. Buffers are opaque: their bytes are reachable only through download.
 */
import type { DType } from '@kiln/core';
import { FUSED_KERNELS, KERNEL_API_VERSION, PRIMITIVE_KERNELS } from '@kiln/core';
import type { FusedKernelName, KernelBackend, KernelName } from '@kiln/core';
import { InvalidArgumentError } from '@kiln/core';
import { referenceAdamw } from './reference/adamw.js';
import { referenceAttention, referenceAttentionBackward } from './reference/attention.js';
import { referenceCapabilities } from './reference/capabilities.js';
import { referenceCrossEntropy, referenceCrossEntropyBackward } from './reference/cross-entropy.js';
import {
  referenceBinary,
  referenceCast,
  referenceCopy,
  referenceFill,
  referenceUnary,
  referenceWhere,
} from './reference/elementwise.js';
import { referenceGather, referenceScatterAdd } from './reference/indexing.js';
import { referenceMatmul } from './reference/matmul.js';
import { referenceAdamwMulti, referenceSumOfSquaresMulti } from './reference/multi-tensor.js';
import { ReferenceMemory, type TransferCounters } from './reference/memory.js';
import {
  referenceLayerNorm,
  referenceLayerNormBackward,
  referenceRmsNorm,
  referenceRmsNormBackward,
} from './reference/normalization.js';
import { referenceRandom } from './reference/random.js';
import { referenceReduce } from './reference/reduce.js';
import { referenceRope } from './reference/rope.js';
import { referenceLogSoftmax, referenceSoftmax, referenceSoftmaxBackward } from './reference/softmax.js';
import { referenceSwiglu, referenceSwigluBackward } from './reference/swiglu.js';

export type { TransferCounters } from './reference/memory.js';

/** Options of createReferenceBackend. */
export interface ReferenceBackendOptions {
  /** Backend name (default 'reference'). */
  name?: string;
  /** Fused kernels present: true = all (default), false = primitives only, or a list. Absent ones are undefined on the object. */
  fused?: boolean | readonly FusedKernelName[];
  /** When true there is no downloadSync method (a device whose reads are asynchronous only). */
  asyncOnly?: boolean;
  /** An alloc that would take the live total past this many bytes throws OutOfMemoryError. */
  memoryLimitBytes?: number;
  /** (kernel, dtype) pairs that capabilities reports unsupported; the kernels still run. */
  unsupportedDTypes?: Partial<Record<KernelName, DType[]>>;
}

/** A reference KernelBackend that also counts host↔device traffic. */
export interface ReferenceBackend extends KernelBackend {
  /** Uploads and downloads since creation or the last resetTransfers (a snapshot). */
  readonly transfers: TransferCounters;
  /** Zero the transfer counters. */
  resetTransfers(): void;
}

function fusedKernelsOf(option: ReferenceBackendOptions['fused']): ReadonlySet<FusedKernelName> {
  if (option === undefined || option === true) return new Set(FUSED_KERNELS);
  if (option === false) return new Set();
  for (const kernel of option) {
    if (!FUSED_KERNELS.includes(kernel)) {
      throw new InvalidArgumentError(
        `unknown fused kernel '${String(kernel)}' in the reference backend's fused option`,
        {
          hint: `Choose among: ${FUSED_KERNELS.join(', ')}.`,
        },
      );
    }
  }
  return new Set(option);
}

/** The fused kernel methods, bound to one memory. */
function fusedMethods(memory: ReferenceMemory): Required<Pick<KernelBackend, FusedKernelName>> {
  return {
    random: (out, distribution, seed, offset) => referenceRandom(memory, out, distribution, seed, offset),
    softmax: (x, out, rows, cols) => referenceSoftmax(memory, x, out, rows, cols),
    softmaxBackward: (y, dy, dx, rows, cols) => referenceSoftmaxBackward(memory, y, dy, dx, rows, cols),
    logSoftmax: (x, out, rows, cols) => referenceLogSoftmax(memory, x, out, rows, cols),
    rmsNorm: (x, weight, out, rstd, rows, cols, eps) => referenceRmsNorm(memory, x, weight, out, rstd, rows, cols, eps),
    rmsNormBackward: (x, weight, rstd, dy, dx, dWeight, rows, cols) =>
      referenceRmsNormBackward(memory, x, weight, rstd, dy, dx, dWeight, rows, cols),
    layerNorm: (x, weight, bias, out, rows, cols, eps) =>
      referenceLayerNorm(memory, x, weight, bias, out, rows, cols, eps),
    layerNormBackward: (x, weight, dy, dx, dWeight, dBias, rows, cols, eps) =>
      referenceLayerNormBackward(memory, x, weight, dy, dx, dWeight, dBias, rows, cols, eps),
    rope: (x, out, offset, theta, inverse, layout) => referenceRope(memory, x, out, offset, theta, inverse, layout),
    swiglu: (gate, up, out) => referenceSwiglu(memory, gate, up, out),
    swigluBackward: (gate, up, dy, dGate, dUp) => referenceSwigluBackward(memory, gate, up, dy, dGate, dUp),
    attention: (q, k, v, mask, out, lse, params) => referenceAttention(memory, q, k, v, mask, out, lse, params),
    attentionBackward: (q, k, v, mask, out, lse, dOut, dq, dk, dv, params) =>
      referenceAttentionBackward(memory, q, k, v, mask, out, lse, dOut, dq, dk, dv, params),
    crossEntropy: (logits, targets, loss, rows, classes, ignoreIndex) =>
      referenceCrossEntropy(memory, logits, targets, loss, rows, classes, ignoreIndex),
    crossEntropyBackward: (logits, targets, dLogits, rows, classes, ignoreIndex, scale) =>
      referenceCrossEntropyBackward(memory, logits, targets, dLogits, rows, classes, ignoreIndex, scale),
    adamw: (param, grad, m, v, params) => referenceAdamw(memory, param, grad, m, v, params),
    sumOfSquaresMulti: (tensors, out) => referenceSumOfSquaresMulti(memory, tensors, out),
    adamwMulti: (params, grads, ms, vs, options) => referenceAdamwMulti(memory, params, grads, ms, vs, options),
  };
}

/** Create a float64 reference backend (every fused kernel present unless options say otherwise). */
export function createReferenceBackend(options: ReferenceBackendOptions = {}): ReferenceBackend {
  const memory = new ReferenceMemory(options.memoryLimitBytes);
  const fused = fusedKernelsOf(options.fused);
  const kernels = new Set<KernelName>([...PRIMITIVE_KERNELS, ...fused]);
  const backend: ReferenceBackend = {
    name: options.name ?? 'reference',
    apiVersion: KERNEL_API_VERSION,
    capabilities: referenceCapabilities(kernels, options.unsupportedDTypes ?? {}, options.memoryLimitBytes),
    get transfers() {
      return memory.transfers();
    },
    resetTransfers: () => memory.resetTransfers(),

    alloc: (byteLength) => memory.alloc(byteLength),
    free: (buffer) => memory.free(buffer),
    upload: (buffer, data, byteOffset) => memory.upload(buffer, data, byteOffset),
    download: async (buffer) => memory.download(buffer),
    synchronize: async () => {},
    memory: () => memory.memory(),
    dispose: () => memory.clear(),

    unary: (op, x, out) => referenceUnary(memory, op, x, out),
    binary: (op, a, b, out) => referenceBinary(memory, op, a, b, out),
    where: (condition, a, b, out) => referenceWhere(memory, condition, a, b, out),
    reduce: (op, x, out, outer, size, inner) => referenceReduce(memory, op, x, out, outer, size, inner),
    matmul: (a, b, out, params) => referenceMatmul(memory, a, b, out, params),
    copy: (src, dst) => referenceCopy(memory, src, dst),
    gather: (x, indices, out, outer, rows, inner) => referenceGather(memory, x, indices, out, outer, rows, inner),
    scatterAdd: (source, indices, out, outer, rows, inner) =>
      referenceScatterAdd(memory, source, indices, out, outer, rows, inner),
    cast: (x, out) => referenceCast(memory, x, out),
    fill: (out, value) => referenceFill(memory, out, value),
  };
  if (!options.asyncOnly) backend.downloadSync = (buffer) => memory.download(buffer);
  const methods = fusedMethods(memory);
  // Only the selected kernels become properties, so `'softmax' in backend` tells the truth.
  for (const kernel of fused) Object.assign(backend, { [kernel]: methods[kernel] });
  return backend;
}
