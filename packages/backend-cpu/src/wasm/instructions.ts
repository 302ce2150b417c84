/**
 * The WebAssembly instructions kiln's kernels use, as expression constructors grouped by type:
 * `i32.add(a, b)`, `f32.load(address, offset)`, `f32x4.mul(a, b)`, `v128.store(address, value)`.
 * Loads and stores take a byte address and a constant byte offset (the memarg); alignment hints
 * are the natural ones. `f32x4.fma(a, b, c)` = a·b + c is relaxed-SIMD's fused multiply-add
 * when the module is built with `relaxed: true`, and a multiply then an add otherwise.
 * Opcodes: WebAssembly core spec 5.4, SIMD (0xfd prefix) and relaxed-SIMD proposals.
 */
import {
  constant,
  instruction,
  simdOpcode,
  WasmEmitError,
  type Expr,
  type Operand,
  type ValueType,
} from './expression.js';
import type { ByteWriter } from './encoding.js';

function memarg(alignLog2: number, offset: number): (code: ByteWriter) => void {
  if (!Number.isInteger(offset) || offset < 0)
    throw new WasmEmitError(`memory offsets are non-negative integers, got ${offset}`);
  return (code) => code.u32(alignLog2).u32(offset);
}

const binary =
  (name: string, type: ValueType, opcode: number[], result: ValueType = type) =>
  (a: Operand, b: Operand): Expr =>
    instruction(name, result, [type, type], [a, b], opcode);
const unary =
  (name: string, type: ValueType, opcode: number[], result: ValueType = type) =>
  (a: Operand): Expr =>
    instruction(name, result, [type], [a], opcode);

/** 32-bit integer instructions (addresses, counters, sizes). */
export const i32 = {
  const: (value: number): Expr => constant('i32', value),
  add: binary('i32.add', 'i32', [0x6a]),
  sub: binary('i32.sub', 'i32', [0x6b]),
  mul: binary('i32.mul', 'i32', [0x6c]),
  divS: binary('i32.div_s', 'i32', [0x6d]),
  remS: binary('i32.rem_s', 'i32', [0x6f]),
  and: binary('i32.and', 'i32', [0x71]),
  or: binary('i32.or', 'i32', [0x72]),
  shl: binary('i32.shl', 'i32', [0x74]),
  shrS: binary('i32.shr_s', 'i32', [0x75]),
  eqz: unary('i32.eqz', 'i32', [0x45]),
  eq: binary('i32.eq', 'i32', [0x46]),
  ne: binary('i32.ne', 'i32', [0x47]),
  ltS: binary('i32.lt_s', 'i32', [0x48]),
  ltU: binary('i32.lt_u', 'i32', [0x49]),
  geU: binary('i32.ge_u', 'i32', [0x4f]),
  gtS: binary('i32.gt_s', 'i32', [0x4a]),
  leS: binary('i32.le_s', 'i32', [0x4c]),
  geS: binary('i32.ge_s', 'i32', [0x4e]),
  minS: (a: Operand, b: Operand): Expr => select(a, b, i32.ltS(a, b)),
  load: (address: Operand, offset = 0): Expr =>
    instruction('i32.load', 'i32', ['i32'], [address], [0x28], memarg(2, offset)),
  store: (address: Operand, value: Operand, offset = 0): Expr =>
    instruction('i32.store', 'void', ['i32', 'i32'], [address, value], [0x36], memarg(2, offset)),
  truncSatF32: unary('i32.trunc_sat_f32_s', 'f32', [0xfc, 0x00], 'i32'),
  reinterpretF32: unary('i32.reinterpret_f32', 'f32', [0xbc], 'i32'),
};

/** 32-bit float scalar instructions. */
export const f32 = {
  const: (value: number): Expr => constant('f32', value),
  add: binary('f32.add', 'f32', [0x92]),
  sub: binary('f32.sub', 'f32', [0x93]),
  mul: binary('f32.mul', 'f32', [0x94]),
  div: binary('f32.div', 'f32', [0x95]),
  min: binary('f32.min', 'f32', [0x96]),
  max: binary('f32.max', 'f32', [0x97]),
  sqrt: unary('f32.sqrt', 'f32', [0x91]),
  neg: unary('f32.neg', 'f32', [0x8c]),
  abs: unary('f32.abs', 'f32', [0x8b]),
  eq: binary('f32.eq', 'f32', [0x5b], 'i32'),
  ne: binary('f32.ne', 'f32', [0x5c], 'i32'),
  lt: binary('f32.lt', 'f32', [0x5d], 'i32'),
  gt: binary('f32.gt', 'f32', [0x5e], 'i32'),
  le: binary('f32.le', 'f32', [0x5f], 'i32'),
  ge: binary('f32.ge', 'f32', [0x60], 'i32'),
  fromI32: unary('f32.convert_i32_s', 'i32', [0xb2], 'f32'),
  fromF64: unary('f32.demote_f64', 'f64', [0xb6], 'f32'),
  reinterpretI32: unary('f32.reinterpret_i32', 'i32', [0xbe], 'f32'),
  load: (address: Operand, offset = 0): Expr =>
    instruction('f32.load', 'f32', ['i32'], [address], [0x2a], memarg(2, offset)),
  store: (address: Operand, value: Operand, offset = 0): Expr =>
    instruction('f32.store', 'void', ['i32', 'f32'], [address, value], [0x38], memarg(2, offset)),
};

/** 64-bit float scalar instructions (row statistics that want the extra precision). */
export const f64 = {
  const: (value: number): Expr => constant('f64', value),
  add: binary('f64.add', 'f64', [0xa0]),
  sub: binary('f64.sub', 'f64', [0xa1]),
  mul: binary('f64.mul', 'f64', [0xa2]),
  div: binary('f64.div', 'f64', [0xa3]),
  sqrt: unary('f64.sqrt', 'f64', [0x9f]),
  fromF32: unary('f64.promote_f32', 'f32', [0xbb], 'f64'),
  fromI32: unary('f64.convert_i32_s', 'i32', [0xb7], 'f64'),
};

/** 128-bit vector instructions that do not care about lanes (memory, bitwise). */
export const v128 = {
  load: (address: Operand, offset = 0): Expr =>
    instruction('v128.load', 'v128', ['i32'], [address], simdOpcode(0x00), memarg(4, offset)),
  store: (address: Operand, value: Operand, offset = 0): Expr =>
    instruction('v128.store', 'void', ['i32', 'v128'], [address, value], simdOpcode(0x0b), memarg(4, offset)),
  /** Loads 32 bits into lane 0 and zeroes the others. */
  load32Zero: (address: Operand, offset = 0): Expr =>
    instruction('v128.load32_zero', 'v128', ['i32'], [address], simdOpcode(0x5c), memarg(2, offset)),
  /** Stores lane `lane` (32 bits). */
  store32Lane: (address: Operand, value: Operand, lane: number, offset = 0): Expr =>
    instruction('v128.store32_lane', 'void', ['i32', 'v128'], [address, value], simdOpcode(0x5a), (code) => {
      memarg(2, offset)(code);
      code.byte(lane);
    }),
  and: binary('v128.and', 'v128', simdOpcode(0x4e)),
  andNot: binary('v128.andnot', 'v128', simdOpcode(0x4f)),
  or: binary('v128.or', 'v128', simdOpcode(0x50)),
  xor: binary('v128.xor', 'v128', simdOpcode(0x51)),
  /** Lanes of a where mask is set, b elsewhere. */
  bitselect: (a: Operand, b: Operand, mask: Operand): Expr =>
    instruction('v128.bitselect', 'v128', ['v128', 'v128', 'v128'], [a, b, mask], simdOpcode(0x52)),
  anyTrue: unary('v128.any_true', 'v128', simdOpcode(0x53), 'i32'),
};

/** Lane-wise f32 ×4 instructions. */
export function f32x4Instructions(relaxed: boolean) {
  const mul = binary('f32x4.mul', 'v128', simdOpcode(0xe6));
  const add = binary('f32x4.add', 'v128', simdOpcode(0xe4));
  return {
    splat: unary('f32x4.splat', 'f32', simdOpcode(0x13), 'v128'),
    /** A vector of four equal f32 constants. */
    constSplat: (value: number): Expr =>
      instruction('v128.const', 'v128', [], [], simdOpcode(0x0c), (code) => {
        for (let lane = 0; lane < 4; lane++) code.f32(value);
      }),
    extractLane: (vector: Operand, lane: number): Expr =>
      instruction('f32x4.extract_lane', 'f32', ['v128'], [vector], simdOpcode(0x1f), (code) => code.byte(lane)),
    replaceLane: (vector: Operand, lane: number, value: Operand): Expr =>
      instruction('f32x4.replace_lane', 'v128', ['v128', 'f32'], [vector, value], simdOpcode(0x20), (code) =>
        code.byte(lane),
      ),
    /** Loads one f32 and repeats it in all four lanes. */
    loadSplat: (address: Operand, offset = 0): Expr =>
      instruction('v128.load32_splat', 'v128', ['i32'], [address], simdOpcode(0x09), memarg(2, offset)),
    add,
    sub: binary('f32x4.sub', 'v128', simdOpcode(0xe5)),
    mul,
    div: binary('f32x4.div', 'v128', simdOpcode(0xe7)),
    /** IEEE-style minimum/maximum: NaN in either lane gives NaN. */
    min: binary('f32x4.min', 'v128', simdOpcode(0xe8)),
    max: binary('f32x4.max', 'v128', simdOpcode(0xe9)),
    /** Pseudo-minimum/maximum (b < a ? b : a): one instruction, NaN not propagated from b. */
    pmin: binary('f32x4.pmin', 'v128', simdOpcode(0xea)),
    pmax: binary('f32x4.pmax', 'v128', simdOpcode(0xeb)),
    abs: unary('f32x4.abs', 'v128', simdOpcode(0xe0)),
    neg: unary('f32x4.neg', 'v128', simdOpcode(0xe1)),
    sqrt: unary('f32x4.sqrt', 'v128', simdOpcode(0xe3)),
    nearest: unary('f32x4.nearest', 'v128', simdOpcode(0x6a)),
    eq: binary('f32x4.eq', 'v128', simdOpcode(0x41)),
    ne: binary('f32x4.ne', 'v128', simdOpcode(0x42)),
    lt: binary('f32x4.lt', 'v128', simdOpcode(0x43)),
    gt: binary('f32x4.gt', 'v128', simdOpcode(0x44)),
    le: binary('f32x4.le', 'v128', simdOpcode(0x45)),
    ge: binary('f32x4.ge', 'v128', simdOpcode(0x46)),
    /** Lanes picked from a (0–3) and b (4–7): result lane i = [a, b][lanes[i]] (i8x16.shuffle). */
    shuffle: (a: Operand, b: Operand, lanes: readonly [number, number, number, number]): Expr =>
      instruction('i8x16.shuffle', 'v128', ['v128', 'v128'], [a, b], simdOpcode(0x0d), (code) => {
        for (const lane of lanes) for (let byte = 0; byte < 4; byte++) code.byte(lane * 4 + byte);
      }),
    /** Lane-wise i32 → f32. */
    fromI32x4: unary('f32x4.convert_i32x4_s', 'v128', simdOpcode(0xfa)),
    /** a·b + c: fused (relaxed-SIMD) when the module is relaxed, else a rounded multiply then an add. */
    fma: relaxed
      ? (a: Operand, b: Operand, c: Operand): Expr =>
          instruction('f32x4.relaxed_madd', 'v128', ['v128', 'v128', 'v128'], [a, b, c], simdOpcode(0x105))
      : (a: Operand, b: Operand, c: Operand): Expr => add(mul(a, b), c),
  };
}

/** Lane-wise i32 ×4 instructions (exponent tricks in exp). */
export const i32x4 = {
  splat: unary('i32x4.splat', 'i32', simdOpcode(0x11), 'v128'),
  add: binary('i32x4.add', 'v128', simdOpcode(0xae)),
  sub: binary('i32x4.sub', 'v128', simdOpcode(0xb1)),
  shl: (vector: Operand, bits: Operand): Expr =>
    instruction('i32x4.shl', 'v128', ['v128', 'i32'], [vector, bits], simdOpcode(0xab)),
  /** Lane-wise f32 → i32, truncating toward zero and saturating. */
  truncSatF32x4: unary('i32x4.trunc_sat_f32x4_s', 'v128', simdOpcode(0xf8)),
  extractLane: (vector: Operand, lane: number): Expr =>
    instruction('i32x4.extract_lane', 'i32', ['v128'], [vector], simdOpcode(0x1b), (code) => code.byte(lane)),
};

/** `condition ? a : b` for two values of one type (both are evaluated; two numbers are i32). */
export function select(a: Operand, b: Operand, condition: Operand): Expr {
  const typed = typeof a !== 'number' ? a : typeof b !== 'number' ? b : undefined;
  const type = typed === undefined ? 'i32' : typed.type;
  if (type === 'void') throw new WasmEmitError('select needs values, got a statement');
  return instruction('select', type, [type, type, 'i32'], [a, b, condition], [0x1b]);
}

/** Copies `bytes` bytes from `source` to `target` (regions may overlap), bulk-memory memory.copy. */
export function memoryCopy(target: Operand, source: Operand, bytes: Operand): Expr {
  return instruction('memory.copy', 'void', ['i32', 'i32', 'i32'], [target, source, bytes], [0xfc, 0x0a, 0x00, 0x00]);
}

/** Sets `bytes` bytes at `target` to the low byte of `value`, bulk-memory memory.fill. */
export function memoryFill(target: Operand, value: Operand, bytes: Operand): Expr {
  return instruction('memory.fill', 'void', ['i32', 'i32', 'i32'], [target, value, bytes], [0xfc, 0x0b, 0x00]);
}

/** Lane-wise f64 ×2 instructions (sums that want float64 accumulation). */
export const f64x2 = {
  /** The two low f32 lanes as f64. */
  promoteLowF32x4: unary('f64x2.promote_low_f32x4', 'v128', simdOpcode(0x5f)),
  add: binary('f64x2.add', 'v128', simdOpcode(0xf0)),
  extractLane: (vector: Operand, lane: number): Expr =>
    instruction('f64x2.extract_lane', 'f64', ['v128'], [vector], simdOpcode(0x21), (code) => code.byte(lane)),
};
