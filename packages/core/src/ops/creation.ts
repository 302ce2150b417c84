/** Creating tensors: from host values, constants, ranges and the seeded random stream. */
import type { KernelBackend } from '../backend/kernel-backend.js';
import { isDType, type DType } from '../dtype.js';
import { DTypeError, InvalidArgumentError, ShapeError } from '../errors.js';
import { getBackend } from '../engine/context.js';
import { allocateTensor, fusedKernel, planKernel } from '../engine/dispatch.js';
import { encodeHostValues } from '../tensor/host-data.js';
import { assertValidShape, formatShape, shapeSize, type Shape } from '../tensor/shape.js';
import type { Tensor } from '../tensor/tensor.js';
import { composedKernels } from '../backend/compositions/index.js';

/** Where and how to create a tensor. */
export interface CreationOptions {
  /** Element type (default f32, or i32 for an Int32Array). */
  dtype?: DType;
  /** Backend (default: the one set with setBackend/useBackend). */
  backend?: KernelBackend;
}

function checkDType(dtype: unknown, op: string): DType {
  if (!isDType(dtype)) {
    throw new DTypeError(`${op}: unknown dtype ${JSON.stringify(dtype)}`, { hint: "Use one of 'f32', 'f16', 'bf16', 'i32'." });
  }
  return dtype;
}

type NestedNumbers = number | readonly NestedNumbers[];

function flatten(values: NestedNumbers, shape: number[], out: number[], depth = 0): void {
  if (typeof values === 'number') {
    if (depth !== shape.length) throw new ShapeError('tensor: nested arrays are ragged');
    out.push(values);
    return;
  }
  if (depth === shape.length) shape.push(values.length);
  else if (shape[depth] !== values.length) throw new ShapeError(`tensor: nested arrays are ragged at depth ${depth} (${values.length} vs ${shape[depth]})`);
  for (const value of values) flatten(value, shape, out, depth + 1);
}

/** A tensor from host values (flat with a shape, nested arrays, or a typed array). */
export function tensor(values: NestedNumbers | Float32Array | Int32Array | Float64Array, shape?: Shape, options: CreationOptions = {}): Tensor {
  const dtype = checkDType(options.dtype ?? (values instanceof Int32Array ? 'i32' : 'f32'), 'tensor');
  let flat: ArrayLike<number>;
  let inferred: number[];
  if (ArrayBuffer.isView(values)) {
    flat = values;
    inferred = [values.length];
  } else {
    const out: number[] = [];
    inferred = [];
    flatten(values, inferred, out);
    flat = out;
  }
  const finalShape = shape ? [...shape] : inferred;
  assertValidShape(finalShape, 'tensor');
  if (shapeSize(finalShape) !== flat.length) {
    throw new ShapeError(`tensor: ${flat.length} values do not fill shape ${formatShape(finalShape)} (${shapeSize(finalShape)} elements)`, {
      hint: 'Pass as many values as the shape has elements, or omit the shape.',
    });
  }
  for (let i = 0; i < flat.length; i++) {
    if (typeof flat[i] !== 'number') throw new InvalidArgumentError(`tensor: value at index ${i} is not a number (${String(flat[i])})`);
  }
  const backend = options.backend ?? getBackend();
  const result = allocateTensor(backend, finalShape, dtype);
  if (result.size > 0) backend.upload(result.storage.buffer, encodeHostValues(flat, dtype));
  return result;
}

/** A tensor of `shape` filled with `value`. */
export function full(shape: Shape, value: number, options: CreationOptions = {}): Tensor {
  const dtype = checkDType(options.dtype ?? 'f32', 'full');
  assertValidShape(shape, 'full');
  const backend = options.backend ?? getBackend();
  const result = allocateTensor(backend, shape, dtype);
  if (result.size > 0) backend.fill(result.ref(), value);
  return result;
}

/** A tensor of zeros. */
export function zeros(shape: Shape, options: CreationOptions = {}): Tensor {
  return full(shape, 0, options);
}

/** A tensor of ones. */
export function ones(shape: Shape, options: CreationOptions = {}): Tensor {
  return full(shape, 1, options);
}

/** Zeros with the shape, dtype and backend of `like`. */
export function zerosLike(like: Tensor): Tensor {
  return full(like.shape, 0, { dtype: like.dtype, backend: like.backend });
}

/** Ones with the shape, dtype and backend of `like`. */
export function onesLike(like: Tensor): Tensor {
  return full(like.shape, 1, { dtype: like.dtype, backend: like.backend });
}

/** A 0-d tensor. */
export function scalar(value: number, options: CreationOptions = {}): Tensor {
  return full([], value, options);
}

/** [start, start + 1, …, end - 1] (i32 by default). */
export function arange(start: number, end: number, options: CreationOptions = {}): Tensor {
  const count = Math.max(0, Math.ceil(end - start));
  const values = new Array<number>(count);
  for (let i = 0; i < count; i++) values[i] = start + i;
  return tensor(values, [count], { dtype: options.dtype ?? 'i32', backend: options.backend });
}

/** Options of the seeded random functions. */
export interface RandomOptions extends CreationOptions {
  /** Stream seed (non-negative safe integer). */
  seed: number;
  /** Index of the first element in the stream (default 0): the same (seed, offset) gives the same values everywhere. */
  offset?: number;
}

function randomTensor(shape: Shape, options: RandomOptions, distribution: Parameters<typeof composedKernels.random>[2], op: string): Tensor {
  if (!Number.isSafeInteger(options.seed) || options.seed < 0) {
    throw new InvalidArgumentError(`${op}: seed must be a non-negative safe integer, got ${options.seed}`);
  }
  const offset = options.offset ?? 0;
  if (!Number.isSafeInteger(offset) || offset < 0) throw new InvalidArgumentError(`${op}: offset must be a non-negative safe integer, got ${offset}`);
  const dtype = checkDType(options.dtype ?? 'f32', op);
  if (dtype === 'i32') throw new DTypeError(`${op}: random values need a float dtype, got i32`);
  assertValidShape(shape, op);
  const backend = options.backend ?? getBackend();
  const result = allocateTensor(backend, shape, dtype);
  if (result.size === 0) return result;
  const plan = planKernel(backend, 'random', dtype);
  if (plan === 'native') fusedKernel(backend, 'random')(result.ref(), distribution, options.seed, offset);
  else composedKernels.random(backend, result.ref(), distribution, options.seed, offset);
  return result;
}

/** Uniform values in [low, high) from kiln's Philox stream: identical on every backend. */
export function randomUniform(shape: Shape, options: RandomOptions & { low?: number; high?: number }): Tensor {
  return randomTensor(shape, options, { kind: 'uniform', low: options.low ?? 0, high: options.high ?? 1 }, 'randomUniform');
}

/** Normal values from kiln's Philox stream: identical on every backend. */
export function randomNormal(shape: Shape, options: RandomOptions & { mean?: number; std?: number }): Tensor {
  return randomTensor(shape, options, { kind: 'normal', mean: options.mean ?? 0, std: options.std ?? 1 }, 'randomNormal');
}
