/**
 * ExampleBackend: the required part of kiln's KernelBackend — storage and the ten primitives —
 * and nothing else. Core composes every fused kernel (softmax, norms, rope, attention,
 * cross-entropy, AdamW) from these primitives, so this is enough to train. Add fused kernels
 * later, one at a time, each declared in `capabilities.supports(kernel, dtype)`.
 *
 * Core has validated every argument, inferred every output shape and dtype and allocated every
 * output before a kernel runs: kernels only fill `out`. The layouts are in kernel-backend.ts.
 */
import {
  InvalidArgumentError,
  KERNEL_API_VERSION,
  type BinaryOp,
  type BufferHandle,
  type Capabilities,
  type DeviceInfo,
  type DType,
  type KernelBackend,
  type KernelName,
  type MatmulParams,
  type MemoryInfo,
  type ReduceOp,
  type StridedView,
  type TensorRef,
  type UnaryOp,
} from '@kiln/core';
import { DeviceMemory } from './device-memory.js';
import { cast, copy, fill, gather, scatterAdd } from './kernels/data-movement.js';
import { binary, unary, where } from './kernels/elementwise.js';
import { matmul } from './kernels/matmul.js';
import { reduce } from './kernels/reduce.js';
import { BACKEND_NAME } from './name.js';

/** Options of createExampleBackend (also what the plugin's create() accepts). */
export interface ExampleBackendOptions {
  /** Device index (this example has one device, index 0). */
  deviceIndex?: number;
  /** Bytes the device holds; an alloc beyond them throws OutOfMemoryError (default 1 GiB). */
  memoryBytes?: number;
}

/** The one device this example drives. */
export function exampleDeviceInfo(memoryBytes: number): DeviceInfo {
  // A real backend reports the device's name, total and free memory, compute capability, limits.
  return {
    id: `${BACKEND_NAME}:0`,
    name: 'kiln example device (plain TypeScript)',
    memoryTotalBytes: memoryBytes,
    unifiedMemory: true,
  };
}

/**
 * What supports(kernel, dtype) answers: true for the ten primitives on every dtype the kernel is
 * defined for (matmul: floats only; unary/binary i32 only for the ops the semantics allow, which
 * core enforces before dispatch); false for every fused kernel, because this backend implements
 * none (core composes them). Answering false for a dtype makes core cast to f32 instead.
 */
function supports(kernel: KernelName, dtype: DType): boolean {
  switch (kernel) {
    case 'unary':
    case 'binary':
    case 'where':
    case 'reduce':
    case 'copy':
    case 'gather':
    case 'scatterAdd':
    case 'cast':
    case 'fill':
      return true;
    case 'matmul':
      return dtype !== 'i32';
    default:
      return false;
  }
}

/** The example backend: host memory, asynchronous reads only, plain TypeScript kernels. */
export class ExampleBackend implements KernelBackend {
  /** The name the plugin registers (BACKEND_NAME); KILN_DEVICE=<name> selects it. */
  readonly name = BACKEND_NAME;
  /** The KernelBackend version this package was built against. */
  readonly apiVersion = KERNEL_API_VERSION;
  /** The device and what runs natively on it. */
  readonly capabilities: Capabilities;
  private readonly memoryOfDevice: DeviceMemory;

  constructor(options: ExampleBackendOptions = {}) {
    const memoryBytes = options.memoryBytes ?? 2 ** 30;
    if (!Number.isSafeInteger(memoryBytes) || memoryBytes <= 0) {
      throw new InvalidArgumentError(
        `${BACKEND_NAME} backend: memoryBytes must be a positive whole number, got ${String(memoryBytes)}`,
        { hint: 'Pass e.g. { memoryBytes: 2 ** 30 }.' },
      );
    }
    if ((options.deviceIndex ?? 0) !== 0) {
      throw new InvalidArgumentError(
        `${BACKEND_NAME} backend: device index ${String(options.deviceIndex)} does not exist (1 device: ${BACKEND_NAME}:0)`,
        { hint: `Use --device ${BACKEND_NAME} or ${BACKEND_NAME}:0.` },
      );
    }
    this.memoryOfDevice = new DeviceMemory(memoryBytes);
    this.capabilities = { device: exampleDeviceInfo(memoryBytes), supports, flashAttention: false };
  }

  // ---- storage ----
  alloc(byteLength: number): BufferHandle {
    return this.memoryOfDevice.alloc(byteLength);
  }

  free(buffer: BufferHandle): void {
    this.memoryOfDevice.free(buffer);
  }

  upload(buffer: BufferHandle, data: Uint8Array, byteOffset = 0): void {
    const target = this.memoryOfDevice.bytes(buffer, 'upload');
    if (!Number.isSafeInteger(byteOffset) || byteOffset < 0 || byteOffset + data.byteLength > target.byteLength) {
      throw new InvalidArgumentError(
        `${BACKEND_NAME} backend: upload of ${data.byteLength} bytes at offset ${byteOffset} does not fit a ${target.byteLength}-byte buffer`,
        {
          hint: 'Upload at most byteLength − byteOffset bytes.',
        },
      );
    }
    target.set(data, byteOffset);
  }

  /** Asynchronous only, as on a GPU: there is deliberately no downloadSync. */
  async download(buffer: BufferHandle): Promise<Uint8Array> {
    // NATIVE CODE GOES HERE: enqueue the copy on the stream and resolve when it completes.
    return this.memoryOfDevice.bytes(buffer, 'download').slice();
  }

  async synchronize(): Promise<void> {
    // NATIVE CODE GOES HERE: wait for the stream (a settled promise per queued batch of work).
  }

  memory(): MemoryInfo {
    return this.memoryOfDevice.info();
  }

  // ---- primitives ----
  unary(op: UnaryOp, x: TensorRef, out: TensorRef): void {
    unary(this.memoryOfDevice, op, x, out);
  }

  binary(op: BinaryOp, a: StridedView, b: StridedView, out: TensorRef): void {
    binary(this.memoryOfDevice, op, a, b, out);
  }

  where(condition: StridedView, a: StridedView, b: StridedView, out: TensorRef): void {
    where(this.memoryOfDevice, condition, a, b, out);
  }

  reduce(op: ReduceOp, x: TensorRef, out: TensorRef, outer: number, size: number, inner: number): void {
    reduce(this.memoryOfDevice, op, x, out, outer, size, inner);
  }

  matmul(a: TensorRef, b: TensorRef, out: TensorRef, params: MatmulParams): void {
    matmul(this.memoryOfDevice, a, b, out, params);
  }

  copy(src: StridedView, dst: StridedView): void {
    copy(this.memoryOfDevice, src, dst);
  }

  gather(x: TensorRef, indices: TensorRef, out: TensorRef, outer: number, rows: number, inner: number): void {
    gather(this.memoryOfDevice, x, indices, out, outer, rows, inner);
  }

  scatterAdd(source: TensorRef, indices: TensorRef, out: TensorRef, outer: number, rows: number, inner: number): void {
    scatterAdd(this.memoryOfDevice, source, indices, out, outer, rows, inner);
  }

  cast(x: TensorRef, out: TensorRef): void {
    cast(this.memoryOfDevice, x, out);
  }

  fill(out: TensorRef, value: number): void {
    fill(this.memoryOfDevice, out, value);
  }
}

/** A new example backend. */
export function createExampleBackend(options: ExampleBackendOptions = {}): ExampleBackend {
  return new ExampleBackend(options);
}
