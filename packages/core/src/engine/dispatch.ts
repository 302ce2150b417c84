/**
 * How an op reaches a kernel: output allocation, the (kernel, dtype) plan — native, cast to f32
 * under the fallback policy, or composed from primitives — and input checks shared by every op.
 */
import {
  FUSED_KERNELS,
  type BufferHandle,
  type FusedKernelName,
  type KernelBackend,
  type KernelName,
} from '../backend/kernel-backend.js';
import { composedKernels } from '../backend/compositions/index.js';
import { reportDTypeFallback } from '../backend/fallback-policy.js';
import { DTYPE_BYTES, type DType } from '../dtype.js';
import {
  DisposedTensorError,
  DTypeError,
  InvalidArgumentError,
  OutOfMemoryError,
  UnsupportedKernelError,
} from '../errors.js';
import { formatShape, shapeSize, type Shape } from '../tensor/shape.js';
import { Storage } from '../tensor/storage.js';
import { Tensor } from '../tensor/tensor.js';

/**
 * A fresh tensor on `backend` with undefined contents (the kernel fills it). A size beyond the
 * device's largest buffer, or a host allocation failure (RangeError) inside alloc, becomes an
 * OutOfMemoryError naming the tensor.
 */
export function allocateTensor(backend: KernelBackend, shape: Shape, dtype: DType): Tensor {
  const byteLength = Math.max(shapeSize(shape) * DTYPE_BYTES[dtype], 0);
  const limit = backend.capabilities?.device?.maxBufferBytes;
  if (!Number.isSafeInteger(byteLength) || (limit !== undefined && byteLength > limit)) {
    throw new OutOfMemoryError(
      `cannot allocate ${describeAllocation(backend, shape, dtype, byteLength)}: larger than the largest buffer the device allows${limit === undefined ? '' : ` (${limit} bytes)`}`,
      byteLength,
      {
        hint: 'Check the shape; split the work into smaller tensors if it is right.',
      },
    );
  }
  let buffer: BufferHandle;
  try {
    buffer = backend.alloc(byteLength);
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    throw new OutOfMemoryError(
      `cannot allocate ${describeAllocation(backend, shape, dtype, byteLength)}: ${error.message}`,
      byteLength,
      { cause: error },
    );
  }
  return new Tensor(new Storage(backend, buffer), shape, dtype);
}

/** `f32[2, 3] (24 bytes) on backend 'cpu'` (allocation failures only: the hot path builds no message). */
function describeAllocation(backend: KernelBackend, shape: Shape, dtype: DType, byteLength: number): string {
  return `${dtype}${formatShape(shape)} (${byteLength} bytes) on backend '${backend.name}'`;
}

/** Throws DisposedTensorError, naming the op, when an input was disposed. */
export function assertAlive(op: string, tensors: readonly Tensor[]): void {
  for (const tensor of tensors) {
    if (tensor.isDisposed) {
      throw new DisposedTensorError(`${op}: input tensor #${tensor.id} ${tensor.describe()} was disposed`, {
        hint: 'Keep tensors you still need out of tidy (return them or keep()) and dispose them only after their last use.',
      });
    }
  }
}

/** The backend shared by all inputs (all alive); throws when they live on different backends. */
export function commonBackend(op: string, tensors: readonly Tensor[]): KernelBackend {
  assertAlive(op, tensors);
  const backend = tensors[0].backend;
  for (const tensor of tensors) {
    if (tensor.backend !== backend) {
      throw new InvalidArgumentError(
        `${op}: inputs live on different backends ('${backend.name}' and '${tensor.backend.name}')`,
        {
          hint: 'Move tensors to one backend first with toBackend(tensor, backend).',
        },
      );
    }
  }
  return backend;
}

/** commonBackend of two tensors without building an array (the common case of binary ops); same errors. */
export function pairBackend(op: string, a: Tensor, b: Tensor): KernelBackend {
  if (a.backend === b.backend && !a.isDisposed && !b.isDisposed) return a.backend;
  return commonBackend(op, [a, b]);
}

/** assertSameDType of two tensors without building an array; same errors. */
export function pairDType(op: string, a: Tensor, b: Tensor): DType {
  return a.dtype === b.dtype ? a.dtype : assertSameDType(op, [a, b]);
}

/** Throws DTypeError unless every tensor has the same dtype. */
export function assertSameDType(op: string, tensors: readonly Tensor[]): DType {
  const dtype = tensors[0].dtype;
  for (const tensor of tensors) {
    if (tensor.dtype !== dtype) {
      throw new DTypeError(`${op}: dtypes differ (${tensors.map((t) => t.describe()).join(', ')})`, {
        hint: 'Cast one operand with cast(x, dtype) so both have the same dtype.',
      });
    }
  }
  return dtype;
}

/** Throws DTypeError unless the tensor has a floating-point dtype. */
export function assertFloat(op: string, tensor: Tensor, role = 'input'): void {
  if (tensor.isDisposed) assertAlive(op, [tensor]);
  if (tensor.dtype === 'i32') {
    throw new DTypeError(`${op}: ${role} ${tensor.describe()} must be a float tensor (f32, f16 or bf16)`, {
      hint: 'Cast it first: cast(x, "f32").',
    });
  }
}

/** How a kernel runs for a dtype on a backend. */
export type KernelPlan = 'native' | 'cast' | 'composed';

const FUSED = new Set<KernelName>(FUSED_KERNELS);

/** Decides native / cast-to-f32 / composed for (kernel, dtype), applying the fallback policy. */
export function planKernel(backend: KernelBackend, kernel: KernelName, dtype: DType): KernelPlan {
  const isFused = FUSED.has(kernel);
  if (isFused && typeof (backend as unknown as Record<string, unknown>)[kernel] !== 'function') return 'composed';
  if (backend.capabilities.supports(kernel, dtype)) return 'native';
  if (dtype !== 'f32' && dtype !== 'i32' && backend.capabilities.supports(kernel, 'f32')) {
    reportDTypeFallback(backend.name, kernel, dtype);
    return 'cast';
  }
  if (isFused) return 'composed';
  throw new UnsupportedKernelError(`backend '${backend.name}' has no '${kernel}' kernel for ${dtype} (nor for f32)`, {
    hint: 'This backend does not implement a required primitive; report it to its authors or use another device.',
  });
}

type FusedMethod<K extends FusedKernelName> = NonNullable<KernelBackend[K]>;

type AnyKernel = (...args: unknown[]) => void;

/** A kernel bound to its backend once (so an op call binds nothing), and the function it calls. */
interface BoundKernel {
  /** The backend's method, or core's composition. */
  target: AnyKernel;
  /** `target` called on the backend. */
  call: AnyKernel;
}

const NATIVE_KERNELS = new WeakMap<KernelBackend, Map<string, BoundKernel>>();
const COMPOSED_KERNELS = new WeakMap<KernelBackend, Map<string, BoundKernel>>();

/** `target` bound to `backend`, from `cache` when it was bound before (a replaced method is bound anew). */
function bindOnce(
  cache: WeakMap<KernelBackend, Map<string, BoundKernel>>,
  backend: KernelBackend,
  name: string,
  target: AnyKernel,
  bind: () => AnyKernel,
): AnyKernel {
  let kernels = cache.get(backend);
  if (kernels === undefined) {
    kernels = new Map();
    cache.set(backend, kernels);
  }
  let bound = kernels.get(name);
  if (bound === undefined || bound.target !== target) {
    bound = { target, call: bind() };
    kernels.set(name, bound);
  }
  return bound.call;
}

/** The backend's fused kernel K, or core's composition of it from primitives. */
export function fusedKernel<K extends FusedKernelName>(backend: KernelBackend, name: K): FusedMethod<K> {
  const native = backend[name] as AnyKernel | undefined;
  if (typeof native !== 'function') return composedKernel(backend, name);
  return bindOnce(NATIVE_KERNELS, backend, name, native, () => native.bind(backend)) as FusedMethod<K>;
}

/** The composition of fused kernel K (used when the plan is 'composed'). */
export function composedKernel<K extends FusedKernelName>(backend: KernelBackend, name: K): FusedMethod<K> {
  const composed = composedKernels[name] as unknown as (backend: KernelBackend, ...args: unknown[]) => void;
  return bindOnce(
    COMPOSED_KERNELS,
    backend,
    name,
    composed as AnyKernel,
    () =>
      (...args: unknown[]) =>
        composed(backend, ...args),
  ) as FusedMethod<K>;
}
