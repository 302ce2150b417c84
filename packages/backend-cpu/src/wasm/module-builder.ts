/**
 * Builds a WebAssembly module from TypeScript: functions are written with a FunctionBuilder
 * (locals, statements, structured control flow over expression trees), and the module imports
 * one memory `env.memory` (shared when asked, for worker threads) and exports its functions.
 *
 *   const module = new ModuleBuilder({ memory: { shared: true, minimumPages: 1, maximumPages: 65536 } });
 *   module.func('scale', { params: { pointer: 'i32', count: 'i32', factor: 'f32' } }, (f, { pointer, count, factor }) => {
 *     const i = f.local('i32');
 *     f.for(i, 0, count, 1, () => f.exec(f32.store(i32.add(pointer, i32.shl(i, 2)), f32.mul(f32.load(i32.add(pointer, i32.shl(i, 2))), factor))));
 *   });
 *   const bytes = module.toBytes();
 *
 * Binary layout: WebAssembly core spec section 5.5 (type, import, function, export, code sections).
 */
import { ByteWriter } from './encoding.js';
import { operand, VALUE_TYPE_CODE, WasmEmitError, type Expr, type Operand, type ValueType } from './expression.js';
import { i32 } from './instructions.js';

/** A local variable (parameters are locals too); used as an expression it reads the variable. */
export class Local implements Expr {
  constructor(
    /** Index among the function's locals. */
    readonly index: number,
    /** Its type. */
    readonly type: ValueType,
  ) {}

  /** Emits local.get. */
  emit(code: ByteWriter): void {
    code.byte(0x20).u32(this.index);
  }
}

/** A branch target: the end of a block, or the start of a loop. */
export interface Label {
  /** 'block' branches go past the end; 'loop' branches go back to the start. */
  readonly kind: 'block' | 'loop' | 'if';
}

/** A function of the module, callable from other functions with `call`. */
export interface FunctionRef {
  /** Export name (also used in messages). */
  readonly name: string;
  /** Function index in the module. */
  readonly index: number;
  /** Parameter types. */
  readonly params: readonly ValueType[];
  /** Result type ('void' when none). */
  readonly result: ValueType | 'void';
}

/** Calls `target` with `args` (an expression of the callee's result type). */
export function call(target: FunctionRef, ...args: Operand[]): Expr {
  if (args.length !== target.params.length)
    throw new WasmEmitError(`call ${target.name}: expected ${target.params.length} arguments, got ${args.length}`);
  const typed = args.map((value, position) => operand(value, target.params[position], `call ${target.name}`));
  return {
    type: target.result,
    emit(code) {
      for (const value of typed) value.emit(code);
      code.byte(0x10).u32(target.index);
    },
  };
}

/** Writes one function body: locals, statements and structured control flow. */
export class FunctionBuilder {
  private readonly code = new ByteWriter();
  /** Code that runs first, whatever point of the body asked for it (see hoist). */
  private readonly prologue = new ByteWriter();
  private readonly hoisted = new Map<string, Local>();
  private readonly localTypes: ValueType[] = [];
  private readonly labels: Label[] = [];

  constructor(
    private readonly parameterCount: number,
    parameterTypes: readonly ValueType[],
  ) {
    this.localTypes.push(...parameterTypes);
  }

  /** A new local variable (zero-initialised). */
  local(type: ValueType): Local {
    this.localTypes.push(type);
    return new Local(this.localTypes.length - 1, type);
  }

  /**
   * A local holding `value`, computed once when the function starts (the first call with a
   * given `key` emits it; later calls return the same local). For loop-invariant constants:
   * V8 does not hoist a v128.const out of a loop, and materializes each one with ~4
   * instructions per use. `value` must not read locals the body changes.
   */
  hoist(key: string, value: Expr): Local {
    let local = this.hoisted.get(key);
    if (local === undefined) {
      if (value.type === 'void') throw new WasmEmitError('hoist needs a value, got a statement');
      local = this.local(value.type);
      value.emit(this.prologue);
      this.prologue.byte(0x21).u32(local.index);
      this.hoisted.set(key, local);
    }
    return local;
  }

  /** `local = value`. */
  set(local: Local, value: Operand): void {
    operand(value, local.type, 'local.set').emit(this.code);
    this.code.byte(0x21).u32(local.index);
  }

  /** Runs a statement (a store, a call without result) or drops an expression's value. */
  exec(statement: Expr): void {
    statement.emit(this.code);
    if (statement.type !== 'void') this.code.byte(0x1a);
  }

  /** A block: `branch(exit)` inside jumps past its end. */
  block(body: (exit: Label) => void): void {
    this.structured(0x02, { kind: 'block' }, body);
  }

  /** A loop: `branch(repeat)` inside jumps back to its start; falling off the end leaves it. */
  loop(body: (repeat: Label) => void): void {
    this.structured(0x03, { kind: 'loop' }, body);
  }

  /** `if (condition) then() else otherwise()`. */
  if(condition: Operand, then: () => void, otherwise?: () => void): void {
    operand(condition, 'i32', 'if').emit(this.code);
    this.code.byte(0x04).byte(0x40);
    this.labels.push({ kind: 'if' });
    then();
    if (otherwise) {
      this.code.byte(0x05);
      otherwise();
    }
    this.labels.pop();
    this.code.byte(0x0b);
  }

  /** Jumps to `label` (which must enclose this point). */
  branch(label: Label): void {
    this.code.byte(0x0c).u32(this.depthOf(label));
  }

  /** Jumps to `label` when `condition` is non-zero. */
  branchIf(label: Label, condition: Operand): void {
    operand(condition, 'i32', 'br_if').emit(this.code);
    this.code.byte(0x0d).u32(this.depthOf(label));
  }

  /** Returns from the function (with a value when it has a result). */
  return(value?: Expr): void {
    value?.emit(this.code);
    this.code.byte(0x0f);
  }

  /**
   * `for (counter = from; counter < to; counter += step) body()`, comparing as unsigned (counters
   * and byte addresses are never negative; addresses reach past 2³¹); no iteration when
   * from ≥ to. `to` is evaluated before the loop and after every iteration: pass a local or a
   * constant.
   */
  for(counter: Local, from: Operand, to: Operand, step: Operand, body: () => void): void {
    this.set(counter, from);
    this.if(i32.ltU(counter, to), () => {
      this.loop((repeat) => {
        body();
        this.set(counter, i32.add(counter, step));
        this.branchIf(repeat, i32.ltU(counter, to));
      });
    });
  }

  /** `while (condition) body()` (condition checked before every iteration). */
  while(condition: () => Expr, body: () => void): void {
    this.block((exit) => {
      this.loop((repeat) => {
        this.branchIf(exit, i32.eqz(condition()));
        body();
        this.branch(repeat);
      });
    });
  }

  /** The finished body: local declarations, code, end. */
  finish(): ByteWriter {
    const body = new ByteWriter();
    // Local declarations: runs of equal types after the parameters.
    const declared = this.localTypes.slice(this.parameterCount);
    const runs: Array<[number, ValueType]> = [];
    for (const type of declared) {
      const last = runs[runs.length - 1];
      if (last && last[1] === type) last[0]++;
      else runs.push([1, type]);
    }
    body.u32(runs.length);
    for (const [count, type] of runs) body.u32(count).byte(VALUE_TYPE_CODE[type]);
    body.raw(this.prologue.toBytes()).raw(this.code.toBytes()).byte(0x0b);
    return body;
  }

  private structured(opcode: number, label: Label, body: (label: Label) => void): void {
    this.code.byte(opcode).byte(0x40);
    this.labels.push(label);
    body(label);
    this.labels.pop();
    this.code.byte(0x0b);
  }

  private depthOf(label: Label): number {
    const position = this.labels.lastIndexOf(label);
    if (position < 0) throw new WasmEmitError('branch to a label that does not enclose this point');
    return this.labels.length - 1 - position;
  }
}

/** The imported memory. */
export interface MemoryImport {
  /** Shared memories can be used by several threads at once (then maximumPages is required). */
  shared: boolean;
  /** Initial size in 64 KiB pages. */
  minimumPages: number;
  /** Largest size in pages (65536 = 4 GiB, the wasm32 limit). */
  maximumPages: number;
}

/** Signature of a function written with ModuleBuilder.func. */
export interface FunctionSignature<P extends Record<string, ValueType>> {
  /** Named parameters, in order. */
  params: P;
  /** Result type (default: none). */
  result?: ValueType;
  /** Whether the function is exported under its name (default true). */
  exported?: boolean;
}

interface DefinedFunction {
  ref: FunctionRef;
  exported: boolean;
  body: ByteWriter;
}

/** Collects functions and writes the module's bytes. */
export class ModuleBuilder {
  private readonly functions: DefinedFunction[] = [];

  constructor(private readonly options: { memory: MemoryImport }) {}

  /** Adds a function; `body` receives the builder and the parameters as locals. */
  func<P extends Record<string, ValueType>>(
    name: string,
    signature: FunctionSignature<P>,
    body: (f: FunctionBuilder, params: { [K in keyof P]: Local }) => void,
  ): FunctionRef {
    if (this.functions.some((existing) => existing.ref.name === name))
      throw new WasmEmitError(`function ${name} is defined twice`);
    const names = Object.keys(signature.params);
    const types = names.map((key) => signature.params[key]);
    const builder = new FunctionBuilder(types.length, types);
    const params = Object.fromEntries(names.map((key, index) => [key, new Local(index, types[index])])) as {
      [K in keyof P]: Local;
    };
    const ref: FunctionRef = { name, index: this.functions.length, params: types, result: signature.result ?? 'void' };
    body(builder, params);
    this.functions.push({ ref, exported: signature.exported ?? true, body: builder.finish() });
    return ref;
  }

  /** The module in the binary format. */
  toBytes(): Uint8Array {
    const out = new ByteWriter().raw([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00]);
    // Types: one per distinct signature.
    const signatures: string[] = [];
    const typeIndex = this.functions.map(({ ref }) => {
      const key = `${ref.params.join(',')}->${ref.result}`;
      let index = signatures.indexOf(key);
      if (index < 0) index = signatures.push(key) - 1;
      return index;
    });
    const types = new ByteWriter().u32(signatures.length);
    for (const key of signatures) {
      const [params, result] = key.split('->');
      const parameterTypes = params === '' ? [] : (params.split(',') as ValueType[]);
      types.byte(0x60).u32(parameterTypes.length);
      for (const type of parameterTypes) types.byte(VALUE_TYPE_CODE[type]);
      if (result === 'void') types.u32(0);
      else types.u32(1).byte(VALUE_TYPE_CODE[result as ValueType]);
    }
    out.byte(1).sized(types);
    // Import: env.memory.
    const { shared, minimumPages, maximumPages } = this.options.memory;
    const imports = new ByteWriter()
      .u32(1)
      .name('env')
      .name('memory')
      .byte(0x02)
      .byte(shared ? 0x03 : 0x01)
      .u32(minimumPages)
      .u32(maximumPages);
    out.byte(2).sized(imports);
    const functionSection = new ByteWriter().u32(this.functions.length);
    for (const index of typeIndex) functionSection.u32(index);
    out.byte(3).sized(functionSection);
    const exported = this.functions.filter((entry) => entry.exported);
    const exports = new ByteWriter().u32(exported.length);
    for (const { ref } of exported) exports.name(ref.name).byte(0x00).u32(ref.index);
    out.byte(7).sized(exports);
    const code = new ByteWriter().u32(this.functions.length);
    for (const { body } of this.functions) code.sized(body);
    out.byte(10).sized(code);
    return out.toBytes();
  }
}
