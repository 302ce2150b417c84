/**
 * Argument checks shared by every public op. Each check throws a typed KilnError whose message
 * starts with the op's name and names the argument (`matmul: b must be a Tensor, got number 3`),
 * so a bad call never surfaces as a TypeError or RangeError from deep inside a kernel.
 */
import { isDType, type DType } from './dtype.js';
import { DisposedTensorError, DTypeError, InvalidArgumentError, ShapeError } from './errors.js';
import { formatShape, type Shape } from './tensor/shape.js';
import { Tensor } from './tensor/tensor.js';

/** Smallest i32 value, −2³¹. */
export const I32_MIN = -2147483648;
/** Largest i32 value, 2³¹ − 1. */
export const I32_MAX = 2147483647;

const I32_HINT =
  'i32 elements are integers in [−2147483648, 2147483647]; kiln never rounds or wraps host numbers silently: ' +
  'round them yourself (Math.round, Math.trunc) or use a float dtype.';

/** A short, safe description of any value for an error message: `string "x"`, `number NaN`, `Tensor f32[2, 3]`. */
export function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Tensor.isInstance(value)) return `Tensor ${(value as Tensor).describe()}`;
  switch (typeof value) {
    case 'undefined':
      return 'undefined';
    case 'number':
      return `number ${formatNumber(value)}`;
    case 'string':
      return `string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
    case 'bigint':
      return `bigint ${value}n`;
    case 'boolean':
      return `boolean ${value}`;
    case 'function':
      return 'a function';
    case 'symbol':
      return 'a symbol';
  }
  if (Array.isArray(value)) {
    const shown = value
      .slice(0, 4)
      .map((item) =>
        typeof item === 'number'
          ? formatNumber(item)
          : typeof item === 'string'
            ? JSON.stringify(item)
            : describeShort(item),
      );
    return `array [${shown.join(', ')}${value.length > 4 ? ', …' : ''}]`;
  }
  if (ArrayBuffer.isView(value))
    return `${value.constructor.name} of ${(value as unknown as ArrayLike<unknown>).length ?? value.byteLength} elements`;
  const keys = Object.keys(value as object);
  return `object {${keys.slice(0, 4).join(', ')}${keys.length > 4 ? ', …' : ''}}`;
}

function describeShort(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return '[…]';
  return typeof value === 'object' ? '{…}' : typeof value;
}

/** A number as JS prints it, but −0 as -0. */
export function formatNumber(value: number): string {
  return Object.is(value, -0) ? '-0' : String(value);
}

/** The tensor `value`, alive; throws InvalidArgumentError (not a tensor) or DisposedTensorError. */
export function checkTensor(op: string, name: string, value: unknown): Tensor {
  if (!Tensor.isInstance(value)) {
    throw new InvalidArgumentError(`${op}: ${name} must be a Tensor, got ${describeValue(value)}`, {
      hint: 'Create tensors with tensor(), zeros(), ones(), arange() or randomNormal(); pass plain numbers only where an op accepts them.',
    });
  }
  const tensor = value as Tensor;
  if (tensor.isDisposed) {
    throw new DisposedTensorError(`${op}: ${name} (tensor #${tensor.id} ${tensor.describe()}) was disposed`, {
      hint: 'Keep tensors you still need out of tidy (return them or keep()) and dispose them only after their last use.',
    });
  }
  return tensor;
}

/** Checks an array of tensors (at least `minimum`); returns it. */
export function checkTensorList(op: string, name: string, value: unknown, minimum = 1): Tensor[] {
  if (!Array.isArray(value))
    throw new InvalidArgumentError(`${op}: ${name} must be an array of tensors, got ${describeValue(value)}`);
  if (value.length < minimum) {
    throw new InvalidArgumentError(
      `${op}: ${name} must hold at least ${minimum} tensor${minimum === 1 ? '' : 's'}, got ${value.length}`,
    );
  }
  return value.map((item, index) => checkTensor(op, `${name}[${index}]`, item));
}

/** Throws unless `value` is an i32 value (an integer in [−2³¹, 2³¹−1]); `index` names an element of an array argument. */
export function checkInt32(op: string, name: string, value: number, index?: number): number {
  if (!Number.isInteger(value) || value < I32_MIN || value > I32_MAX) {
    const where = index === undefined ? '' : ` at index ${index}`;
    throw new InvalidArgumentError(
      `${op}: ${name} ${formatNumber(value)}${where} is not an i32 value (an integer in [−2147483648, 2147483647])`,
      {
        hint: I32_HINT,
      },
    );
  }
  return value;
}

/** A plain number operand that will take `dtype`: any number for floats, an i32 value for i32. */
export function checkOperandNumber(op: string, name: string, value: number, dtype: DType): number {
  return dtype === 'i32' ? checkInt32(op, name, value) : value;
}

/** A tensor, or a plain number (any number, including NaN and ±Infinity, for float operands). */
export function checkTensorOrNumber(op: string, name: string, value: unknown): Tensor | number {
  if (typeof value === 'number') return value;
  if (Tensor.isInstance(value)) return checkTensor(op, name, value);
  throw new InvalidArgumentError(`${op}: ${name} must be a Tensor or a number, got ${describeValue(value)}`, {
    hint: "Pass a tensor, or a plain number (it takes the other operand's dtype and backend).",
  });
}

/** Limits of checkNumber. */
export interface NumberRule {
  /** Must be an integer (implies finite). */
  integer?: boolean;
  /** Must be finite (no NaN, no ±Infinity). */
  finite?: boolean;
  /** Smallest allowed value. */
  min?: number;
  /** Largest allowed value. */
  max?: number;
  /** Must be strictly greater than min. */
  exclusiveMin?: boolean;
}

/** The rule of a checkNumber call that gives none (any number but NaN). */
const NO_RULE: NumberRule = Object.freeze({});

/** A number meeting `rule`; throws InvalidArgumentError naming the op, the argument and the rule. */
export function checkNumber(op: string, name: string, value: unknown, rule: NumberRule = NO_RULE): number {
  if (!passesRule(value, rule))
    throw new InvalidArgumentError(`${op}: ${name} must be ${describeRule(rule)}, got ${describeValue(value)}`);
  return value as number;
}

/** True when `value` is a number that `rule` accepts (the message is built only when this fails). */
function passesRule(value: unknown, rule: NumberRule): value is number {
  if (typeof value !== 'number' || Number.isNaN(value)) return false;
  if ((rule.integer && !Number.isInteger(value)) || (rule.finite && !Number.isFinite(value))) return false;
  if (rule.min !== undefined && (value < rule.min || (rule.exclusiveMin && value === rule.min))) return false;
  return rule.max === undefined || value <= rule.max;
}

function describeRule(rule: NumberRule): string {
  const kind = rule.integer ? 'an integer' : rule.finite ? 'a finite number' : 'a number';
  if (rule.min !== undefined && rule.max !== undefined)
    return `${kind} in ${rule.exclusiveMin ? '(' : '['}${rule.min}, ${rule.max}]`;
  if (rule.min !== undefined) return `${kind} ${rule.exclusiveMin ? '>' : '≥'} ${rule.min}`;
  if (rule.max !== undefined) return `${kind} ≤ ${rule.max}`;
  return kind;
}

/** A boolean, or `fallback` when undefined. */
export function checkBoolean(op: string, name: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean')
    throw new InvalidArgumentError(`${op}: ${name} must be true or false, got ${describeValue(value)}`);
  return value;
}

/** One of `choices` (or `fallback` when undefined). */
export function checkChoice<T extends string>(
  op: string,
  name: string,
  value: unknown,
  choices: readonly T[],
  fallback: T,
): T {
  if (value === undefined) return fallback;
  if (typeof value !== 'string' || !(choices as readonly string[]).includes(value)) {
    throw new InvalidArgumentError(
      `${op}: ${name} must be one of ${choices.map((choice) => `'${choice}'`).join(', ')}, got ${describeValue(value)}`,
    );
  }
  return value as T;
}

/** A known dtype; throws DTypeError listing the four. */
export function checkDType(op: string, name: string, value: unknown): DType {
  if (!isDType(value)) {
    throw new DTypeError(
      `${op}: ${name} must be a dtype, got ${describeValue(value)} (unknown dtype ${JSON.stringify(typeof value === 'string' ? value : String(value))})`,
      {
        hint: "Use one of 'f32', 'f16', 'bf16', 'i32'.",
      },
    );
  }
  return value;
}

/** An axis of a tensor of rank `rank` (negative counts from the end), resolved to [0, rank). */
export function checkAxis(op: string, name: string, value: unknown, rank: number, shape?: Shape): number {
  if (typeof value !== 'number' || !Number.isInteger(value)) {
    throw new InvalidArgumentError(`${op}: ${name} must be an integer axis, got ${describeValue(value)}`, {
      hint: rank > 0 ? `Use an axis in [${-rank}, ${rank - 1}].` : 'A rank-0 tensor has no axes.',
    });
  }
  const resolved = value < 0 ? value + rank : value;
  if (resolved < 0 || resolved >= rank) {
    const where = shape ? ` (shape ${formatShape(shape)})` : '';
    throw new InvalidArgumentError(`${op}: ${name} ${value} is out of range for rank ${rank}${where}`, {
      hint:
        rank > 0
          ? `Use an axis in [${-rank}, ${rank - 1}] (negative axes count from the end).`
          : 'A rank-0 tensor has no axes; reshape it first.',
    });
  }
  return resolved;
}

/** Distinct axes (one number, an array, or undefined = all), resolved and sorted ascending. */
export function checkAxes(op: string, name: string, value: unknown, rank: number, shape?: Shape): number[] {
  if (value === undefined) return Array.from({ length: rank }, (_, axis) => axis);
  if (typeof value === 'number') return [checkAxis(op, name, value, rank, shape)];
  if (!Array.isArray(value)) {
    throw new InvalidArgumentError(
      `${op}: ${name} must be an axis, an array of axes or undefined (all axes), got ${describeValue(value)}`,
    );
  }
  const resolved = value.map((axis, index) => checkAxis(op, `${name}[${index}]`, axis, rank, shape));
  if (new Set(resolved).size !== resolved.length) {
    throw new InvalidArgumentError(
      `${op}: ${name} [${value.join(', ')}] repeat an axis of a tensor of shape ${formatShape(shape ?? [])}`,
      {
        hint: 'List each axis once.',
      },
    );
  }
  return resolved.sort((a, b) => a - b);
}

/** A shape: an array of non-negative safe integers whose product is a safe integer. */
export function checkShape(op: string, name: string, value: unknown): number[] {
  if (!Array.isArray(value)) {
    throw new InvalidArgumentError(`${op}: ${name} must be an array of dimensions, got ${describeValue(value)}`, {
      hint: 'A shape is an array of non-negative integers, e.g. [2, 3]; [] is a scalar.',
    });
  }
  let size = 1;
  value.forEach((dimension, index) => {
    if (typeof dimension !== 'number' || !Number.isSafeInteger(dimension) || dimension < 0) {
      throw new ShapeError(
        `${op}: ${name} ${describeValue(value)} has an invalid dimension ${describeValue(dimension)} at index ${index}`,
        {
          hint: 'Dimensions must be non-negative integers.',
        },
      );
    }
    size *= dimension;
  });
  if (!Number.isSafeInteger(size)) {
    throw new ShapeError(`${op}: ${name} ${formatShape(value)} has ${size} elements, more than any device can hold`, {
      hint: 'Check the dimensions; a tensor holds at most 2⁵³ − 1 elements (and far fewer fit in memory).',
    });
  }
  return [...value];
}

/** An array of integers (optionally of a fixed length, each ≥ `min`). */
export function checkIntegerList(
  op: string,
  name: string,
  value: unknown,
  options: { length?: number; min?: number } = {},
): number[] {
  if (!Array.isArray(value))
    throw new InvalidArgumentError(`${op}: ${name} must be an array of integers, got ${describeValue(value)}`);
  if (options.length !== undefined && value.length !== options.length) {
    throw new ShapeError(
      `${op}: ${name} [${value.join(', ')}] must have ${options.length} entries (one per axis), got ${value.length}`,
    );
  }
  const rule: NumberRule = { integer: true, min: options.min };
  for (let index = 0; index < value.length; index++) {
    if (!passesRule(value[index], rule)) checkNumber(op, `${name}[${index}]`, value[index], rule);
  }
  return value.slice();
}

/** How checkOptions checks one key: receives the full name (`options.key`) and the value (never undefined). */
export type OptionCheck = (op: string, name: string, value: unknown) => void;

/** What checkOptions returns for undefined options (frozen: shared by every call). */
const NO_OPTIONS = Object.freeze({});

/** Options objects: undefined (→ {}), or a plain object whose keys are all known and whose values pass their check. */
export function checkOptions<T extends object>(
  op: string,
  name: string,
  value: unknown,
  checks: { readonly [K in keyof T]-?: OptionCheck },
): T {
  if (value === undefined) return NO_OPTIONS as T;
  if (typeof value !== 'object' || value === null || Array.isArray(value) || Tensor.isInstance(value)) {
    throw new InvalidArgumentError(`${op}: ${name} must be an options object, got ${describeValue(value)}`, {
      hint: `Known options: ${Object.keys(checks).join(', ') || 'none'}.`,
    });
  }
  // for…in over own keys: Object.entries' order without allocating its arrays on every call.
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    const item = (value as Record<string, unknown>)[key];
    const check = (checks as Record<string, OptionCheck | undefined>)[key];
    if (!Object.hasOwn(checks, key) || check === undefined) {
      throw new InvalidArgumentError(`${op}: unknown option ${name}.${key}`, {
        hint: `Known options: ${Object.keys(checks).join(', ') || 'none'}.`,
      });
    }
    if (item !== undefined) check(op, `${name}.${key}`, item);
  }
  return value as T;
}

/** Option checks for checkOptions. */
export const option = {
  boolean: ((op, name, value) => void checkBoolean(op, name, value, false)) as OptionCheck,
  finite: ((op, name, value) => void checkNumber(op, name, value, { finite: true })) as OptionCheck,
  number: ((op, name, value) => void checkNumber(op, name, value)) as OptionCheck,
  tensor: ((op, name, value) => void checkTensor(op, name, value)) as OptionCheck,
  dtype: ((op, name, value) => void checkDType(op, name, value)) as OptionCheck,
  backend: ((op, name, value) => {
    const backend = value as { alloc?: unknown; capabilities?: unknown } | null;
    if (
      typeof backend !== 'object' ||
      backend === null ||
      typeof backend.alloc !== 'function' ||
      typeof backend.capabilities !== 'object'
    ) {
      throw new InvalidArgumentError(`${op}: ${name} must be a KernelBackend, got ${describeValue(value)}`, {
        hint: "Pass the backend from useBackend()/resolveBackend() or a backend package's create function.",
      });
    }
  }) as OptionCheck,
  int32: ((op, name, value) => {
    if (typeof value !== 'number')
      throw new InvalidArgumentError(`${op}: ${name} must be an i32 integer, got ${describeValue(value)}`);
    checkInt32(op, name, value);
  }) as OptionCheck,
  integer:
    (rule: NumberRule = {}): OptionCheck =>
    (op, name, value) =>
      void checkNumber(op, name, value, { ...rule, integer: true }),
  choice:
    (choices: readonly string[]): OptionCheck =>
    (op, name, value) =>
      void checkChoice(op, name, value, choices, choices[0]),
  any: (() => {}) as OptionCheck,
};
