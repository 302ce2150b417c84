// The wasm emitter: binary encodings, a module that validates and runs, type and label errors.
import { describe, expect, it } from 'vitest';
import { ByteWriter } from '../src/wasm/encoding.js';
import { WasmEmitError } from '../src/wasm/expression.js';
import { f32, f32x4Instructions, i32, v128 } from '../src/wasm/instructions.js';
import { call, ModuleBuilder } from '../src/wasm/module-builder.js';
import { detectWasmFeatures } from '../src/wasm/features.js';
import { buildKernelModuleBytes } from '../src/simd/kernel-module.js';

const bytes = (write: (writer: ByteWriter) => void): number[] => {
  const writer = new ByteWriter();
  write(writer);
  return Array.from(writer.toBytes());
};

describe('ByteWriter', () => {
  it('writes LEB128 integers as the spec examples', () => {
    expect(bytes((w) => w.u32(624485))).toEqual([0xe5, 0x8e, 0x26]);
    expect(bytes((w) => w.u32(0))).toEqual([0]);
    expect(bytes((w) => w.u32(0xffffffff))).toEqual([0xff, 0xff, 0xff, 0xff, 0x0f]);
    expect(bytes((w) => w.i32(-123456))).toEqual([0xc0, 0xbb, 0x78]);
    expect(bytes((w) => w.i32(63))).toEqual([0x3f]);
    expect(bytes((w) => w.i32(64))).toEqual([0xc0, 0x00]);
    expect(bytes((w) => w.i32(-64))).toEqual([0x40]);
    expect(bytes((w) => w.i32(-2147483648))).toEqual([0x80, 0x80, 0x80, 0x80, 0x78]);
  });

  it('writes names and little-endian floats', () => {
    expect(bytes((w) => w.name('env'))).toEqual([3, 0x65, 0x6e, 0x76]);
    expect(bytes((w) => w.f32(1))).toEqual([0, 0, 0x80, 0x3f]);
  });
});

function instantiate(
  module: ModuleBuilder,
  pages = 1,
): { exports: Record<string, (...args: number[]) => number>; memory: WebAssembly.Memory } {
  const memory = new WebAssembly.Memory({ initial: pages, maximum: pages });
  const instance = new WebAssembly.Instance(new WebAssembly.Module(module.toBytes()), { env: { memory } });
  return { exports: instance.exports as unknown as Record<string, (...args: number[]) => number>, memory };
}

describe('ModuleBuilder', () => {
  it('emits loops, calls and memory access that run as written', () => {
    const module = new ModuleBuilder({ memory: { shared: false, minimumPages: 1, maximumPages: 1 } });
    const square = module.func('square', { params: { x: 'f32' }, result: 'f32', exported: false }, (f, { x }) =>
      f.return(f32.mul(x, x)),
    );
    module.func('sum_squares', { params: { pointer: 'i32', count: 'i32' }, result: 'f32' }, (f, { pointer, count }) => {
      const i = f.local('i32');
      const total = f.local('f32');
      f.for(i, 0, count, 1, () =>
        f.set(total, f32.add(total, call(square, f32.load(i32.add(pointer, i32.shl(i, 2)))))),
      );
      f.return(total);
    });
    const { exports, memory } = instantiate(module);
    new Float32Array(memory.buffer).set([1, 2, 3, 4], 4);
    expect(exports.sum_squares(16, 4)).toBe(30);
    expect(exports.sum_squares(16, 0)).toBe(0);
    expect(exports.square).toBeUndefined();
  });

  it('emits SIMD: a vector add over four lanes', () => {
    const simd = f32x4Instructions(false);
    const module = new ModuleBuilder({ memory: { shared: false, minimumPages: 1, maximumPages: 1 } });
    module.func('add4', { params: { a: 'i32', b: 'i32', out: 'i32' } }, (f, { a, b, out }) =>
      f.exec(v128.store(out, simd.add(v128.load(a), v128.load(b)))),
    );
    const { exports, memory } = instantiate(module);
    const view = new Float32Array(memory.buffer);
    view.set([1, 2, 3, 4, 10, 20, 30, 40]);
    exports.add4(0, 16, 32);
    expect(Array.from(view.subarray(8, 12))).toEqual([11, 22, 33, 44]);
  });

  it('rejects ill-typed expressions and branches out of scope', () => {
    expect(() => i32.add(f32.const(1), 2)).toThrow(WasmEmitError);
    expect(() => constantFloat()).toThrow(/i32 constant must be an integer/);
    const module = new ModuleBuilder({ memory: { shared: false, minimumPages: 1, maximumPages: 1 } });
    expect(() =>
      module.func('bad', { params: {} }, (f) => {
        let escaped: Parameters<Parameters<typeof f.block>[0]>[0] | undefined;
        f.block((exit) => {
          escaped = exit;
        });
        f.branch(escaped!);
      }),
    ).toThrow(/does not enclose/);
  });

  it('the kernel module validates with and without relaxed SIMD', () => {
    expect(WebAssembly.validate(buildKernelModuleBytes(false))).toBe(true);
    if (detectWasmFeatures(true).relaxedSimd) expect(WebAssembly.validate(buildKernelModuleBytes(true))).toBe(true);
  });
});

function constantFloat(): unknown {
  return i32.const(1.5);
}

describe('relaxed SIMD', () => {
  it('is detected on Node 20 (after enabling the V8 flag) and its FMA computes a·b + c', () => {
    const features = detectWasmFeatures(true);
    expect(features.simd).toBe(true);
    if (!features.relaxedSimd) return expect(features.relaxedSimdSource).toBe('unavailable');
    const simd = f32x4Instructions(true);
    const module = new ModuleBuilder({ memory: { shared: false, minimumPages: 1, maximumPages: 1 } });
    module.func('fma', { params: { p: 'i32' } }, (f, { p }) =>
      f.exec(v128.store(p, simd.fma(v128.load(p), v128.load(p, 16), v128.load(p, 32)), 48)),
    );
    const { exports, memory } = instantiate(module);
    const view = new Float32Array(memory.buffer);
    view.set([1, 2, 3, 4, 5, 6, 7, 8, 0.5, 0.25, 0, -1]);
    exports.fma(0);
    expect(Array.from(view.subarray(12, 16))).toEqual([5.5, 12.25, 21, 31]);
  });
});
