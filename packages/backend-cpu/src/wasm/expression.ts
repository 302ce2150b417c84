/**
 * Expressions of the emitter: a value-producing piece of WebAssembly code that knows its type.
 * Kernels are written as trees of expressions (`f32x4.add(acc, f32x4.mul(a, b))`); emitting a
 * tree writes its operands, then its opcode, which is exactly WebAssembly's stack order.
 * A plain number where an i32/f32/f64 operand is expected becomes a constant.
 */
import { ByteWriter } from './encoding.js';

/** WebAssembly value types used by kiln's kernels. */
export type ValueType = 'i32' | 'i64' | 'f32' | 'f64' | 'v128';

/** Binary codes of the value types. */
export const VALUE_TYPE_CODE: Readonly<Record<ValueType, number>> = {
  i32: 0x7f,
  i64: 0x7e,
  f32: 0x7d,
  f64: 0x7c,
  v128: 0x7b,
};

/** A piece of code that leaves one value of `type` on the stack, or nothing ('void': a statement). */
export interface Expr {
  /** What the code leaves on the stack. */
  readonly type: ValueType | 'void';
  /** Writes the code. */
  emit(code: ByteWriter): void;
}

/** An operand: an expression, or a number taken as a constant of the expected type. */
export type Operand = Expr | number;

/** Thrown when an expression tree is ill-typed (a bug in a kernel's emitter code). */
export class WasmEmitError extends Error {
  override name = 'WasmEmitError';
}

/** A constant of a numeric type. */
export function constant(type: ValueType, value: number): Expr {
  switch (type) {
    case 'i32':
      if (!Number.isInteger(value) || value < -(2 ** 31) || value >= 2 ** 32)
        throw new WasmEmitError(`i32 constant must be an integer that fits 32 bits, got ${value}`);
      return { type, emit: (code) => code.byte(0x41).i32(value) };
    case 'f32':
      return { type, emit: (code) => code.byte(0x43).f32(value) };
    case 'f64':
      return { type, emit: (code) => code.byte(0x44).f64(value) };
    default:
      throw new WasmEmitError(`a plain number cannot stand for a ${type} operand`);
  }
}

/** The operand as an expression of `type` (numbers become constants; expressions are type-checked). */
export function operand(value: Operand, type: ValueType, where: string): Expr {
  if (typeof value === 'number') return constant(type, value);
  if (value.type !== type) throw new WasmEmitError(`${where}: expected a ${type} operand, got ${value.type}`);
  return value;
}

/**
 * An instruction: operands of the given types, then the opcode bytes (and any immediates).
 * `name` appears in type errors.
 */
export function instruction(
  name: string,
  result: ValueType | 'void',
  operandTypes: readonly ValueType[],
  operands: readonly Operand[],
  opcode: readonly number[],
  immediates?: (code: ByteWriter) => void,
): Expr {
  if (operands.length !== operandTypes.length)
    throw new WasmEmitError(`${name} takes ${operandTypes.length} operands, got ${operands.length}`);
  const typed = operands.map((value, index) => operand(value, operandTypes[index], name));
  return {
    type: result,
    emit(code) {
      for (const value of typed) value.emit(code);
      code.raw(opcode);
      immediates?.(code);
    },
  };
}

/** The bytes of an opcode behind the 0xfd (SIMD) prefix. */
export function simdOpcode(code: number): number[] {
  const writer = new ByteWriter().byte(0xfd).u32(code);
  return Array.from(writer.toBytes());
}
