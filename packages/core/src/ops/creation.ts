/** Creating tensors: from host values, constants, ranges and the seeded random stream. */
import type { KernelBackend } from '../backend/kernel-backend.js';
import { DTYPE_BYTES, isDType, type DType } from '../dtype.js';
import { DTypeError, InvalidArgumentError, ShapeError } from '../errors.js';
import { getBackend } from '../engine/context.js';
import { allocateTensor, fusedKernel, planKernel } from '../engine/dispatch.js';
import { encodeHostValues } from '../tensor/host-data.js';
import { filledTensor } from './kernel-calls.js';
import { formatShape, shapeSize, type Shape } from '../tensor/shape.js';
import type { Tensor } from '../tensor/tensor.js';
import { composedKernels } from '../backend/compositions/index.js';
import {
  checkInt32,
  checkNumber,
  checkOptions,
  checkShape,
  checkTensor,
  describeValue,
  option,
  type OptionCheck,
} from '../validate.js';

/** Where and how to create a tensor. */
export interface CreationOptions {
  /** Element type (default f32, or i32 for an Int32Array). */
  dtype?: DType;
  /** Backend (default: the one set with setBackend/useBackend). */
  backend?: KernelBackend;
}

/** The numeric typed arrays tensor() reads (BigInt arrays are not numbers and are refused). */
export type NumericArray =
  | Float32Array
  | Float64Array
  | Int8Array
  | Int16Array
  | Int32Array
  | Uint8Array
  | Uint8ClampedArray
  | Uint16Array
  | Uint32Array;

/** A number, or arrays of them nested to any regular (non-ragged) depth; typed arrays may stand for the innermost rows. */
export type NestedNumbers = number | NumericArray | readonly NestedNumbers[];

/** Deepest nesting tensor() accepts for nested arrays. */
export const MAX_NESTED_DEPTH = 32;

/** Longest range arange() builds: 2³¹ − 1 elements (the i32 index range). */
export const ARANGE_MAX_LENGTH = 2147483647;

const CREATION_OPTIONS: { readonly [K in keyof CreationOptions]-?: OptionCheck } = {
  dtype: option.dtype,
  backend: option.backend,
};

function isNumericArray(value: unknown): value is NumericArray {
  return (
    ArrayBuffer.isView(value) &&
    !(value instanceof DataView) &&
    !(value instanceof BigInt64Array) &&
    !(value instanceof BigUint64Array)
  );
}

function isSequence(value: unknown): value is ArrayLike<unknown> {
  return Array.isArray(value) || isNumericArray(value);
}

/** Typed arrays whose every element is an i32 value by construction. */
function holdsOnlyI32(values: ArrayLike<number>): boolean {
  return (
    values instanceof Int32Array ||
    values instanceof Int16Array ||
    values instanceof Int8Array ||
    values instanceof Uint16Array ||
    values instanceof Uint8Array ||
    values instanceof Uint8ClampedArray
  );
}

function notANumber(path: string, value: unknown): InvalidArgumentError {
  return new InvalidArgumentError(`tensor: values${path} is ${describeValue(value)}, not a number`, {
    hint: 'Pass numbers, nested arrays of numbers, or a numeric typed array (Float32Array, Int32Array, Uint8Array, …).',
  });
}

/** Flattens nested arrays (row-major) after reading the shape along the first elements; rejects ragged nesting and non-numbers. */
function flattenNested(values: readonly unknown[]): { flat: number[]; shape: number[] } {
  const shape: number[] = [];
  let probe: unknown = values;
  while (isSequence(probe)) {
    if (shape.length === MAX_NESTED_DEPTH) {
      throw new InvalidArgumentError(`tensor: values are nested deeper than ${MAX_NESTED_DEPTH} levels`, {
        hint: 'Pass a flat array of numbers and a shape.',
      });
    }
    shape.push(probe.length);
    if (probe.length === 0) break;
    probe = probe[0];
  }
  const flat: number[] = [];
  const walk = (value: unknown, depth: number, path: string): void => {
    if (depth === shape.length) {
      if (typeof value === 'number') flat.push(value);
      else if (isSequence(value))
        throw new ShapeError(
          `tensor: nested arrays are ragged: values${path} is an array where a number was expected (shape so far ${formatShape(shape)})`,
        );
      else throw notANumber(path, value);
      return;
    }
    if (!isSequence(value)) {
      if (typeof value === 'number')
        throw new ShapeError(
          `tensor: nested arrays are ragged: values${path} is a number where an array of ${shape[depth]} was expected`,
        );
      throw notANumber(path, value);
    }
    if (value.length !== shape[depth]) {
      throw new ShapeError(
        `tensor: nested arrays are ragged at depth ${depth}: values${path} has ${value.length} entries, expected ${shape[depth]}`,
      );
    }
    for (let i = 0; i < value.length; i++) walk(value[i], depth + 1, `${path}[${i}]`);
  };
  walk(values, 0, '');
  return { flat, shape };
}

function readValues(values: unknown): { flat: ArrayLike<number>; shape: number[] } {
  if (isNumericArray(values)) return { flat: values, shape: [values.length] };
  if (typeof values === 'number') return { flat: [values], shape: [] };
  if (Array.isArray(values)) return flattenNested(values);
  throw new InvalidArgumentError(
    `tensor: values must be a number, a (nested) array of numbers or a numeric typed array, got ${describeValue(values)}`,
    {
      hint: 'For example tensor([[1, 2], [3, 4]]), tensor(new Float32Array(6), [2, 3]) or tensor(3).',
    },
  );
}

/**
 * A tensor from host values: a number (a scalar), nested arrays, or a flat array / numeric typed
 * array with an optional shape. dtype defaults to i32 for an Int32Array and f32 otherwise. For i32,
 * every value must be an integer in [−2³¹, 2³¹−1] (InvalidArgumentError naming the value and its
 * index otherwise); float values round to nearest even in the target dtype.
 */
export function tensor(values: NestedNumbers, shape?: Shape, options?: CreationOptions): Tensor;
/** A tensor from host values with options and the shape of the values. */
export function tensor(values: NestedNumbers, options: CreationOptions): Tensor;
export function tensor(
  values: NestedNumbers,
  shapeOrOptions?: Shape | CreationOptions,
  maybeOptions?: CreationOptions,
): Tensor {
  const optionsGiven =
    typeof shapeOrOptions === 'object' &&
    shapeOrOptions !== null &&
    !Array.isArray(shapeOrOptions) &&
    maybeOptions === undefined;
  const shapeArgument: unknown = optionsGiven ? undefined : shapeOrOptions;
  const options = checkOptions<CreationOptions>(
    'tensor',
    'options',
    optionsGiven ? shapeOrOptions : maybeOptions,
    CREATION_OPTIONS,
  );
  if (typeof shapeArgument === 'string' && isDType(shapeArgument)) {
    throw new InvalidArgumentError(
      `tensor: shape must be an array of dimensions, got string ${JSON.stringify(shapeArgument)}`,
      {
        hint: `To choose the dtype pass options: tensor(values, { dtype: '${shapeArgument}' }) or tensor(values, shape, { dtype: '${shapeArgument}' }).`,
      },
    );
  }
  const { flat, shape: inferred } = readValues(values);
  const dtype = options.dtype ?? (values instanceof Int32Array ? 'i32' : 'f32');
  const finalShape = shapeArgument === undefined ? inferred : checkShape('tensor', 'shape', shapeArgument);
  if (shapeSize(finalShape) !== flat.length) {
    throw new ShapeError(
      `tensor: ${flat.length} values do not fill shape ${formatShape(finalShape)} (${shapeSize(finalShape)} elements)`,
      {
        hint: 'Pass as many values as the shape has elements, or omit the shape.',
      },
    );
  }
  if (dtype === 'i32' && !holdsOnlyI32(flat)) {
    for (let i = 0; i < flat.length; i++) checkInt32('tensor', 'value', flat[i], i);
  }
  const backend = options.backend ?? getBackend();
  const result = allocateTensor(backend, finalShape, dtype);
  if (result.size > 0) backend.upload(result.storage.buffer, encodeHostValues(flat, dtype));
  return result;
}

/** A constant tensor (shared by full, zeros, ones, scalar and the …Like functions). */
function constant(op: string, shape: unknown, value: unknown, options: unknown): Tensor {
  const checkedShape = checkShape(op, 'shape', shape);
  const checkedOptions = checkOptions<CreationOptions>(op, 'options', options, CREATION_OPTIONS);
  const dtype = checkedOptions.dtype ?? 'f32';
  if (typeof value !== 'number')
    throw new InvalidArgumentError(`${op}: value must be a number, got ${describeValue(value)}`);
  if (dtype === 'i32') checkInt32(op, 'value', value);
  return filledTensor(checkedOptions.backend ?? getBackend(), checkedShape, dtype, value);
}

/** A tensor of `shape` filled with `value` (for i32, an integer in [−2³¹, 2³¹−1]; NaN and ±Infinity are fine for floats). */
export function full(shape: Shape, value: number, options: CreationOptions = {}): Tensor {
  return constant('full', shape, value, options);
}

/** A tensor of zeros. */
export function zeros(shape: Shape, options: CreationOptions = {}): Tensor {
  return constant('zeros', shape, 0, options);
}

/** A tensor of ones. */
export function ones(shape: Shape, options: CreationOptions = {}): Tensor {
  return constant('ones', shape, 1, options);
}

/** Zeros with the shape, dtype and backend of `like`. */
export function zerosLike(like: Tensor): Tensor {
  const source = checkTensor('zerosLike', 'like', like);
  return constant('zerosLike', source.shape, 0, { dtype: source.dtype, backend: source.backend });
}

/** Ones with the shape, dtype and backend of `like`. */
export function onesLike(like: Tensor): Tensor {
  const source = checkTensor('onesLike', 'like', like);
  return constant('onesLike', source.shape, 1, { dtype: source.dtype, backend: source.backend });
}

/** A 0-d tensor holding `value`. */
export function scalar(value: number, options: CreationOptions = {}): Tensor {
  return constant('scalar', [], value, options);
}

const ARANGE_CHUNK = 1 << 16;

/**
 * [start, start + 1, …] up to but excluding `end` (i32 by default): ceil(end − start) elements,
 * none when end ≤ start. Bounds must be finite (and i32 values for an i32 result); at most
 * ARANGE_MAX_LENGTH (2³¹ − 1) elements.
 */
export function arange(start: number, end: number, options: CreationOptions = {}): Tensor {
  const checkedOptions = checkOptions<CreationOptions>('arange', 'options', options, CREATION_OPTIONS);
  const dtype = checkedOptions.dtype ?? 'i32';
  checkNumber('arange', 'start', start, { finite: true });
  checkNumber('arange', 'end', end, { finite: true });
  if (dtype === 'i32') {
    checkInt32('arange', 'start', start);
    checkInt32('arange', 'end', end);
  }
  const count = Math.max(0, Math.ceil(end - start));
  if (count > ARANGE_MAX_LENGTH) {
    throw new InvalidArgumentError(
      `arange: start ${start} and end ${end} give ${count} elements, more than the limit of ${ARANGE_MAX_LENGTH} (2³¹ − 1)`,
      {
        hint: 'Check start and end; longer ranges do not fit i32 indices — build them from pieces with concat, or compute them with cumsum.',
      },
    );
  }
  const backend = checkedOptions.backend ?? getBackend();
  const result = allocateTensor(backend, [count], dtype);
  // Uploaded in chunks so the host never holds more than ARANGE_CHUNK numbers at once.
  const chunk = new Float64Array(Math.min(count, ARANGE_CHUNK));
  for (let first = 0; first < count; first += ARANGE_CHUNK) {
    const length = Math.min(ARANGE_CHUNK, count - first);
    for (let i = 0; i < length; i++) chunk[i] = start + first + i;
    backend.upload(
      result.storage.buffer,
      encodeHostValues(chunk.subarray(0, length), dtype),
      first * DTYPE_BYTES[dtype],
    );
  }
  return result;
}

/** Options of the seeded random functions. */
export interface RandomOptions extends CreationOptions {
  /** Stream seed (non-negative safe integer). */
  seed: number;
  /** Index of the first element in the stream (default 0): the same (seed, offset) gives the same values everywhere. */
  offset?: number;
}

/** Options of randomUniform. */
export interface UniformOptions extends RandomOptions {
  /** Lower bound (inclusive), default 0. */
  low?: number;
  /** Upper bound (exclusive), default 1. */
  high?: number;
}

/** Options of randomNormal. */
export interface NormalOptions extends RandomOptions {
  /** Mean, default 0. */
  mean?: number;
  /** Standard deviation, default 1. */
  std?: number;
}

const RANDOM_OPTIONS = {
  ...CREATION_OPTIONS,
  seed: option.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
  offset: option.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
};

function randomTensor(
  op: string,
  shape: unknown,
  options: RandomOptions,
  distribution: Parameters<typeof composedKernels.random>[2],
): Tensor {
  checkNumber(op, 'options.seed', options.seed, { integer: true, min: 0, max: Number.MAX_SAFE_INTEGER });
  const offset = options.offset ?? 0;
  const dtype = options.dtype ?? 'f32';
  if (dtype === 'i32')
    throw new DTypeError(`${op}: random values need a float dtype, got options.dtype 'i32'`, {
      hint: "Use 'f32', 'f16' or 'bf16' (cast afterwards if you need integers).",
    });
  const checkedShape = checkShape(op, 'shape', shape);
  const backend = options.backend ?? getBackend();
  const result = allocateTensor(backend, checkedShape, dtype);
  if (result.size === 0) return result;
  const plan = planKernel(backend, 'random', dtype);
  if (plan === 'native') fusedKernel(backend, 'random')(result.ref(), distribution, options.seed, offset);
  else composedKernels.random(backend, result.ref(), distribution, options.seed, offset);
  return result;
}

function requireOptions(op: string, options: unknown): void {
  if (options === undefined) {
    throw new InvalidArgumentError(`${op}: options with a seed are required, got undefined`, {
      hint: `Pass { seed: 1 } (any non-negative integer): ${op}(shape, { seed: 1 }).`,
    });
  }
}

/** Uniform values in [low, high) from kiln's Philox stream: identical on every backend. */
export function randomUniform(shape: Shape, options: UniformOptions): Tensor {
  requireOptions('randomUniform', options);
  const checked = checkOptions<UniformOptions>('randomUniform', 'options', options, {
    ...RANDOM_OPTIONS,
    low: option.finite,
    high: option.finite,
  });
  return randomTensor('randomUniform', shape, checked, {
    kind: 'uniform',
    low: checked.low ?? 0,
    high: checked.high ?? 1,
  });
}

/** Normal values from kiln's Philox stream: identical on every backend. */
export function randomNormal(shape: Shape, options: NormalOptions): Tensor {
  requireOptions('randomNormal', options);
  const checked = checkOptions<NormalOptions>('randomNormal', 'options', options, {
    ...RANDOM_OPTIONS,
    mean: option.finite,
    std: option.finite,
  });
  return randomTensor('randomNormal', shape, checked, {
    kind: 'normal',
    mean: checked.mean ?? 0,
    std: checked.std ?? 1,
  });
}
