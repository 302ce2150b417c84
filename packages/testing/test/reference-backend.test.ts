import { describe, expect, it } from 'vitest';
import type { DType } from '@kiln/core';
import { KilnError, DTypeError, InvalidArgumentError, OutOfMemoryError } from '@kiln/core';
import { bf16BitsToF32, f32ToBf16Bits, f32ToF16Bits } from '@kiln/core';
import { philoxNormal, philoxUniform } from '@kiln/core';
import { decodeHostValues } from '@kiln/core';
import { KERNEL_API_VERSION, type StridedView, type TensorRef } from '@kiln/core';
import { createReferenceBackend, type ReferenceBackend } from '../src/reference-backend.js';

// ---- host helpers (values are chosen exactly representable unless a test is about rounding) ----

const BYTES: Record<DType, number> = { f32: 4, f16: 2, bf16: 2, i32: 4 };

function encode(values: readonly number[], dtype: DType): Uint8Array {
  if (dtype === 'f32') return new Uint8Array(Float32Array.from(values).buffer);
  if (dtype === 'i32') return new Uint8Array(Int32Array.from(values).buffer);
  const bits = Uint16Array.from(values, (value) => (dtype === 'f16' ? f32ToF16Bits(value) : f32ToBf16Bits(value)));
  return new Uint8Array(bits.buffer);
}

function decode(bytes: Uint8Array, dtype: DType): number[] {
  return Array.from(decodeHostValues(bytes, dtype));
}

function count(shape: readonly number[]): number {
  return shape.reduce((product, size) => product * size, 1);
}

function tensor(backend: ReferenceBackend, shape: number[], dtype: DType, values?: readonly number[]): TensorRef {
  const buffer = backend.alloc(count(shape) * BYTES[dtype]);
  if (values) backend.upload(buffer, encode(values, dtype));
  return { buffer, shape, dtype };
}

function view(ref: TensorRef, shape: number[], strides: number[], offset = 0): StridedView {
  return { ...ref, shape, strides, offset };
}

function dense(ref: TensorRef): StridedView {
  const strides: number[] = [];
  let stride = 1;
  for (let axis = ref.shape.length - 1; axis >= 0; axis--) {
    strides[axis] = stride;
    stride *= ref.shape[axis];
  }
  return view(ref, [...ref.shape], strides);
}

async function read(backend: ReferenceBackend, ref: TensorRef): Promise<number[]> {
  return decode(await backend.download(ref.buffer), ref.dtype).slice(0, count(ref.shape));
}

function expectClose(actual: readonly number[], expected: readonly number[], tolerance = 1e-6): void {
  expect(actual.length).toBe(expected.length);
  actual.forEach((value, index) => {
    const want = expected[index];
    if (Number.isNaN(want) || !Number.isFinite(want)) expect(value, `element ${index}`).toBe(want);
    else
      expect(Math.abs(value - want), `element ${index}: ${value} vs ${want}`).toBeLessThanOrEqual(
        tolerance * (1 + Math.abs(want)),
      );
  });
}

describe('reference backend: storage', () => {
  it('hands out frozen, opaque handles that reveal no data', async () => {
    const backend = createReferenceBackend();
    const ref = tensor(backend, [2], 'f32', [1234.5, 6789.25]);
    expect(Object.isFrozen(ref.buffer)).toBe(true);
    expect(Reflect.ownKeys(ref.buffer)).toEqual(['byteLength']);
    expect(JSON.stringify(ref.buffer)).toBe('{"byteLength":8}');
    expect(JSON.stringify(backend)).not.toContain('1234');
    expect(
      Object.values(backend).some(
        (value) => value instanceof Map || value instanceof WeakMap || value instanceof Uint8Array,
      ),
    ).toBe(false);
    expect(await read(backend, ref)).toEqual([1234.5, 6789.25]);
  });

  it('uploads at an offset and downloads a copy, sync and async', async () => {
    const backend = createReferenceBackend();
    const ref = tensor(backend, [3], 'f32', [1, 2, 3]);
    backend.upload(ref.buffer, encode([9], 'f32'), 4);
    const bytes = await backend.download(ref.buffer);
    bytes.fill(0);
    expect(await read(backend, ref)).toEqual([1, 9, 3]);
    expect(decode(backend.downloadSync!(ref.buffer), 'f32')).toEqual([1, 9, 3]);
    expect(() => backend.upload(ref.buffer, new Uint8Array(8), 8)).toThrow(InvalidArgumentError);
    await expect(backend.synchronize()).resolves.toBeUndefined();
  });

  it('has no downloadSync at all when asyncOnly', () => {
    const backend = createReferenceBackend({ asyncOnly: true });
    expect('downloadSync' in backend).toBe(false);
    expect(backend.downloadSync).toBeUndefined();
    expect(typeof createReferenceBackend().downloadSync).toBe('function');
  });

  it('counts transfers and resets the counters', async () => {
    const backend = createReferenceBackend();
    const ref = tensor(backend, [4], 'f32', [1, 2, 3, 4]);
    backend.upload(ref.buffer, new Uint8Array(4));
    await backend.download(ref.buffer);
    backend.downloadSync!(ref.buffer);
    expect(backend.transfers).toEqual({ uploads: 2, downloads: 2, uploadBytes: 20, downloadBytes: 32 });
    backend.fill(ref, 3);
    expect(backend.transfers.downloads).toBe(2);
    backend.resetTransfers();
    expect(backend.transfers).toEqual({ uploads: 0, downloads: 0, uploadBytes: 0, downloadBytes: 0 });
  });

  it('tracks live buffers and rejects double and foreign frees', async () => {
    const backend = createReferenceBackend();
    const first = backend.alloc(12);
    const second = backend.alloc(4);
    expect(backend.memory()).toMatchObject({ allocatedBytes: 16, bufferCount: 2 });
    backend.free(first);
    expect(backend.memory()).toMatchObject({ allocatedBytes: 4, bufferCount: 1 });
    expect(() => backend.free(first)).toThrow(InvalidArgumentError);
    expect(() => backend.free({ byteLength: 4 })).toThrow(/not a live allocation/);
    expect(() => backend.fill({ buffer: first, shape: [3], dtype: 'f32' }, 1)).toThrow(InvalidArgumentError);
    await expect(backend.download(first)).rejects.toThrow(InvalidArgumentError);
    backend.free(second);
    expect(backend.memory()).toMatchObject({ allocatedBytes: 0, bufferCount: 0 });
  });

  it('throws OutOfMemoryError past memoryLimitBytes', () => {
    const backend = createReferenceBackend({ memoryLimitBytes: 100 });
    const first = backend.alloc(60);
    let caught: unknown;
    try {
      backend.alloc(50);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(OutOfMemoryError);
    expect(KilnError.isInstance(caught) && caught.code).toBe('OUT_OF_MEMORY');
    expect((caught as OutOfMemoryError).requestedBytes).toBe(50);
    expect(backend.memory()).toMatchObject({ allocatedBytes: 60, bufferCount: 1, totalBytes: 100, freeBytes: 40 });
    backend.free(first);
    expect(() => backend.alloc(100)).not.toThrow();
  });
});

describe('reference backend: identity and capabilities', () => {
  it('reports its device, version and name', () => {
    const backend = createReferenceBackend();
    expect(backend.name).toBe('reference');
    expect(createReferenceBackend({ name: 'fake-gpu' }).name).toBe('fake-gpu');
    expect(backend.apiVersion).toBe(KERNEL_API_VERSION);
    expect(backend.capabilities.device).toMatchObject({
      id: 'reference',
      name: 'float64 reference (host)',
      unifiedMemory: false,
    });
    expect(backend.capabilities.flashAttention).toBe(false);
  });

  it('supports i32 only where the semantics allow it', () => {
    const { supports } = createReferenceBackend().capabilities;
    for (const kernel of [
      'copy',
      'cast',
      'fill',
      'where',
      'gather',
      'scatterAdd',
      'binary',
      'reduce',
      'unary',
    ] as const) {
      expect(supports(kernel, 'i32'), kernel).toBe(true);
    }
    for (const kernel of ['matmul', 'softmax', 'random', 'attention', 'adamw'] as const)
      expect(supports(kernel, 'i32'), kernel).toBe(false);
    for (const dtype of ['f32', 'f16', 'bf16'] as const) {
      expect(supports('matmul', dtype)).toBe(true);
      expect(supports('attentionBackward', dtype)).toBe(true);
    }
  });

  it('leaves fused kernels really absent when asked to', () => {
    const primitives = createReferenceBackend({ fused: false });
    expect('softmax' in primitives).toBe(false);
    expect(primitives.attention).toBeUndefined();
    expect(primitives.capabilities.supports('softmax', 'f32')).toBe(false);
    expect(primitives.capabilities.supports('matmul', 'f32')).toBe(true);
    const some = createReferenceBackend({ fused: ['softmax', 'adamw'] });
    expect(typeof some.softmax).toBe('function');
    expect(typeof some.adamw).toBe('function');
    expect('rmsNorm' in some).toBe(false);
    expect(some.capabilities.supports('softmax', 'bf16')).toBe(true);
    expect(some.capabilities.supports('rmsNorm', 'f32')).toBe(false);
    expect(() => createReferenceBackend({ fused: ['nope' as 'softmax'] })).toThrow(InvalidArgumentError);
  });

  it('declares unsupported dtypes but still runs the kernel', async () => {
    const backend = createReferenceBackend({ unsupportedDTypes: { matmul: ['f16'] } });
    expect(backend.capabilities.supports('matmul', 'f16')).toBe(false);
    expect(backend.capabilities.supports('matmul', 'f32')).toBe(true);
    const a = tensor(backend, [1, 2], 'f16', [1, 2]);
    const b = tensor(backend, [2, 1], 'f16', [3, 4]);
    const out = tensor(backend, [1, 1], 'f16');
    backend.matmul(a, b, out, {
      batch: 1,
      m: 1,
      n: 1,
      k: 2,
      transposeA: false,
      transposeB: false,
      batchStrideA: 0,
      batchStrideB: 0,
    });
    expect(await read(backend, out)).toEqual([11]);
  });
});

describe('reference backend: rounding into storage', () => {
  async function stored(value: number, dtype: DType): Promise<number> {
    const backend = createReferenceBackend();
    const out = tensor(backend, [1], dtype);
    backend.fill(out, value);
    return (await read(backend, out))[0];
  }

  it('rounds f16 to nearest even, once, from the float64 value', async () => {
    expect(await stored(1 + 2 ** -11, 'f16')).toBe(1);
    expect(await stored(1 + 3 * 2 ** -11, 'f16')).toBe(1 + 2 ** -9);
    // Just above the tie: rounding through f32 first would land on the tie and go down to 1.
    expect(await stored(1 + 2 ** -11 + 2 ** -40, 'f16')).toBe(1 + 2 ** -10);
    expect(await stored(65519.99, 'f16')).toBe(65504);
    expect(await stored(65520, 'f16')).toBe(Infinity);
    expect(await stored(2 ** -25, 'f16')).toBe(0);
    expect(await stored(3 * 2 ** -25, 'f16')).toBe(2 ** -23);
    expect(Object.is(await stored(-0, 'f16'), -0)).toBe(true);
    expect(await stored(NaN, 'f16')).toBeNaN();
  });

  it('rounds bf16 to nearest even and f32 with fround', async () => {
    expect(await stored(1 + 2 ** -8, 'bf16')).toBe(1);
    expect(await stored(1 + 3 * 2 ** -8, 'bf16')).toBe(1 + 2 ** -6);
    expect(await stored(1 + 2 ** -8 + 2 ** -30, 'bf16')).toBe(1 + 2 ** -7);
    expect(await stored(3.4e38 * 2, 'bf16')).toBe(Infinity);
    expect(await stored(0.1, 'f32')).toBe(Math.fround(0.1));
  });

  it('casts with the documented conversions', async () => {
    const backend = createReferenceBackend();
    const floats = tensor(backend, [7], 'f32', [1.9, -1.9, NaN, 3e9, -3e9, Infinity, -0.5]);
    const ints = tensor(backend, [7], 'i32');
    backend.cast(floats, ints);
    expect(await read(backend, ints)).toEqual([1, -1, 0, 2147483647, -2147483648, 2147483647, 0]);
    // fill converts its float64 value like cast: saturation at both bounds, one rounding into halves.
    const filled = tensor(backend, [1], 'i32');
    backend.fill(filled, -2147483648.9);
    expect(await read(backend, filled)).toEqual([-2147483648]);
    backend.fill(filled, -Infinity);
    expect(await read(backend, filled)).toEqual([-2147483648]);
    const half = tensor(backend, [1], 'f16');
    backend.fill(half, 1 + 2 ** -11 + 2 ** -30);
    expect(await read(backend, half)).toEqual([1 + 2 ** -10]);
    // 2^24 + 2^16 + 1 lies just above a bf16 tie: a single rounding gives 2^24 + 2^17.
    const big = tensor(backend, [2], 'i32', [16842753, 16777217]);
    const asBf16 = tensor(backend, [2], 'bf16');
    const asF32 = tensor(backend, [2], 'f32');
    backend.cast(big, asBf16);
    backend.cast(big, asF32);
    expect(await read(backend, asBf16)).toEqual([2 ** 24 + 2 ** 17, 2 ** 24]);
    expect(await read(backend, asF32)).toEqual([16842752, 16777216]);
    const halves = tensor(backend, [2], 'f16');
    backend.cast(tensor(backend, [2], 'f32', [1 + 2 ** -11, 1 + 3 * 2 ** -11]), halves);
    expect(await read(backend, halves)).toEqual([1, 1 + 2 ** -9]);
  });
});

describe('reference backend: elementwise primitives', () => {
  const inputs = [-2, -0.5, 0, 1.5];
  const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));
  const gelu = (x: number) => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3)));
  const silu = (x: number) => x * sigmoid(x);
  const derivative = (fn: (x: number) => number, x: number) => (fn(x + 1e-5) - fn(x - 1e-5)) / 2e-5;

  async function unary(
    op: Parameters<ReferenceBackend['unary']>[0],
    values: number[],
    dtype: DType = 'f32',
  ): Promise<number[]> {
    const backend = createReferenceBackend();
    const out = tensor(backend, [values.length], dtype);
    backend.unary(op, tensor(backend, [values.length], dtype, values), out);
    return read(backend, out);
  }

  it('computes every float unary op', async () => {
    expect(await unary('neg', inputs)).toEqual([2, 0.5, -0, -1.5]);
    expect(await unary('abs', inputs)).toEqual([2, 0.5, 0, 1.5]);
    expect(await unary('sign', inputs)).toEqual([-1, -1, 0, 1]);
    expect(await unary('square', inputs)).toEqual([4, 0.25, 0, 2.25]);
    expect(await unary('relu', [...inputs, NaN])).toEqual([0, 0, 0, 1.5, NaN]);
    expect(await unary('sqrt', [4, 0.25, -1])).toEqual([2, 0.5, NaN]);
    expect(await unary('rsqrt', [4, 0.25, 0])).toEqual([0.5, 2, Infinity]);
    expect(await unary('reciprocal', [4, -0.5, 0])).toEqual([0.25, -2, Infinity]);
    expectClose(await unary('exp', [0, 1, -Infinity]), [1, Math.E, 0]);
    expectClose(await unary('log', [1, Math.E, 0]), [0, 1, -Infinity]);
    expectClose(await unary('tanh', [0, 100, -100]), [0, 1, -1]);
    expectClose(await unary('sigmoid', [0, Math.log(3)]), [0.5, 0.75]);
    expectClose(await unary('silu', [0, Math.log(3)]), [0, 0.75 * Math.log(3)]);
    expectClose(await unary('gelu', inputs), inputs.map(gelu));
    expectClose(
      await unary('geluGrad', inputs),
      inputs.map((x) => derivative(gelu, x)),
      1e-5,
    );
    expectClose(
      await unary('siluGrad', inputs),
      inputs.map((x) => derivative(silu, x)),
      1e-5,
    );
  });

  it('wraps i32 unary ops and refuses float-only ones', async () => {
    expect(await unary('neg', [-2147483648, 5], 'i32')).toEqual([-2147483648, -5]);
    expect(await unary('abs', [-2147483648, -5], 'i32')).toEqual([-2147483648, 5]);
    expect(await unary('square', [65536, -3], 'i32')).toEqual([0, 9]);
    expect(await unary('sign', [-7, 0, 7], 'i32')).toEqual([-1, 0, 1]);
    await expect(unary('exp', [1], 'i32')).rejects.toThrow(DTypeError);
  });

  it('computes binary ops on broadcast views, with IEEE NaN rules', async () => {
    const backend = createReferenceBackend();
    const a = tensor(backend, [2, 3], 'f32', [1, 2, 3, 4, 5, 6]);
    const row = tensor(backend, [3], 'f32', [10, 20, 30]);
    const out = tensor(backend, [2, 3], 'f32');
    backend.binary('add', dense(a), view(row, [2, 3], [0, 1]), out);
    expect(await read(backend, out)).toEqual([11, 22, 33, 14, 25, 36]);
    backend.binary('sub', view(row, [2, 3], [0, 1]), dense(a), out);
    expect(await read(backend, out)).toEqual([9, 18, 27, 6, 15, 24]);

    const left = tensor(backend, [6], 'f32', [NaN, NaN, 2, 2, 3, 1]);
    const right = tensor(backend, [6], 'f32', [1, NaN, 2, 0.5, NaN, 4]);
    const result = tensor(backend, [6], 'f32');
    const run = async (op: Parameters<ReferenceBackend['binary']>[0]) => {
      backend.binary(op, dense(left), dense(right), result);
      return read(backend, result);
    };
    expect(await run('greater')).toEqual([0, 0, 0, 1, 0, 0]);
    expect(await run('greaterEqual')).toEqual([0, 0, 1, 1, 0, 0]);
    expect(await run('lessEqual')).toEqual([0, 0, 1, 0, 0, 1]);
    expect(await run('less')).toEqual([0, 0, 0, 0, 0, 1]);
    expect(await run('equal')).toEqual([0, 0, 1, 0, 0, 0]);
    expect(await run('notEqual')).toEqual([1, 1, 0, 1, 1, 1]);
    expect(await run('maximum')).toEqual([NaN, NaN, 2, 2, NaN, 4]);
    expect(await run('minimum')).toEqual([NaN, NaN, 2, 0.5, NaN, 1]);
    expect(await run('mul')).toEqual([NaN, NaN, 4, 1, NaN, 4]);
    expect(await run('div')).toEqual([NaN, NaN, 1, 4, NaN, 0.25]);
    expect(await run('pow')).toEqual([NaN, NaN, 4, Math.fround(Math.SQRT2), NaN, 1]);
  });

  it('wraps i32 binary arithmetic', async () => {
    const backend = createReferenceBackend();
    const a = tensor(backend, [3], 'i32', [2147483647, 65536, -7]);
    const b = tensor(backend, [3], 'i32', [1, 65536, 3]);
    const out = tensor(backend, [3], 'i32');
    backend.binary('add', dense(a), dense(b), out);
    expect(await read(backend, out)).toEqual([-2147483648, 131072, -4]);
    backend.binary('mul', dense(a), dense(b), out);
    expect(await read(backend, out)).toEqual([2147483647, 0, -21]);
    backend.binary('less', dense(a), dense(b), out);
    expect(await read(backend, out)).toEqual([0, 0, 1]);
    expect(() => backend.binary('div', dense(a), dense(b), out)).toThrow(DTypeError);
  });

  it('selects with where: NaN is non-zero, −0 is zero, bits are kept', async () => {
    const backend = createReferenceBackend();
    const condition = tensor(backend, [4], 'f32', [NaN, -0, 2, 0]);
    const a = tensor(backend, [4], 'bf16', [1, 2, 3, 4]);
    const b = tensor(backend, [1], 'bf16', [-0]);
    const out = tensor(backend, [4], 'bf16');
    backend.where(dense(condition), dense(a), view(b, [4], [0]), out);
    const values = await read(backend, out);
    expect(values).toEqual([1, -0, 3, -0]);
    expect(Object.is(values[1], -0)).toBe(true);
  });

  it('fills and copies through strided views', async () => {
    const backend = createReferenceBackend();
    const ints = tensor(backend, [3], 'i32');
    backend.fill(ints, -4.7);
    expect(await read(backend, ints)).toEqual([-4, -4, -4]);
    const source = tensor(backend, [2, 3], 'f32', [1, 2, 3, 4, 5, 6]);
    const transposed = tensor(backend, [3, 2], 'f32');
    backend.copy(view(source, [3, 2], [1, 3]), dense(transposed));
    expect(await read(backend, transposed)).toEqual([1, 4, 2, 5, 3, 6]);
    const target = tensor(backend, [2, 3], 'f32', [0, 0, 0, 0, 0, 0]);
    backend.copy(view(source, [2], [3], 1), view(target, [2], [1], 4));
    expect(await read(backend, target)).toEqual([0, 0, 0, 0, 2, 5]);
    expect(() => backend.copy(dense(source), dense(tensor(backend, [2, 3], 'bf16')))).toThrow(DTypeError);
  });
});

describe('reference backend: reduce, matmul, gather, scatterAdd', () => {
  it('reduces the middle axis with NaN and empty-axis rules', async () => {
    const backend = createReferenceBackend();
    // x [outer 2, size 3, inner 2]
    const x = tensor(backend, [2, 3, 2], 'f32', [1, 5, 3, 5, 2, -1, 4, 0, NaN, 0, NaN, -2]);
    const out = tensor(backend, [2, 2], 'f32');
    const indices = tensor(backend, [2, 2], 'i32');
    backend.reduce('sum', x, out, 2, 3, 2);
    expect(await read(backend, out)).toEqual([6, 9, NaN, -2]);
    backend.reduce('max', x, out, 2, 3, 2);
    expect(await read(backend, out)).toEqual([3, 5, NaN, 0]);
    backend.reduce('min', x, out, 2, 3, 2);
    expect(await read(backend, out)).toEqual([1, -1, NaN, -2]);
    backend.reduce('argmax', x, indices, 2, 3, 2);
    expect(await read(backend, indices)).toEqual([1, 0, 1, 0]);
    backend.reduce('argmin', x, indices, 2, 3, 2);
    expect(await read(backend, indices)).toEqual([0, 2, 1, 2]);

    const empty = tensor(backend, [2, 0], 'f32');
    const pair = tensor(backend, [2], 'f32');
    backend.reduce('sum', empty, pair, 2, 0, 1);
    expect(await read(backend, pair)).toEqual([0, 0]);
    backend.reduce('max', empty, pair, 2, 0, 1);
    expect(await read(backend, pair)).toEqual([-Infinity, -Infinity]);
    backend.reduce('min', empty, pair, 2, 0, 1);
    expect(await read(backend, pair)).toEqual([Infinity, Infinity]);

    const ints = tensor(backend, [2], 'i32', [2147483647, 2]);
    const total = tensor(backend, [1], 'i32');
    backend.reduce('sum', ints, total, 1, 2, 1);
    expect(await read(backend, total)).toEqual([-2147483647]);
  });

  it('multiplies batches with transposes, broadcast batches and k = 0', async () => {
    const backend = createReferenceBackend();
    const a = tensor(backend, [2, 3], 'f32', [1, 2, 3, 4, 5, 6]);
    const b = tensor(backend, [3, 2], 'f32', [7, 8, 9, 10, 11, 12]);
    const out = tensor(backend, [2, 2], 'f32');
    const plain = {
      batch: 1,
      m: 2,
      n: 2,
      k: 3,
      transposeA: false,
      transposeB: false,
      batchStrideA: 0,
      batchStrideB: 0,
    };
    backend.matmul(a, b, out, plain);
    expect(await read(backend, out)).toEqual([58, 64, 139, 154]);
    // a read as [k=2, m=3] transposed, b as [n=3, k=2] transposed: (aᵀ)(bᵀ) = [3, 3].
    const square = tensor(backend, [3, 3], 'f32');
    backend.matmul(a, b, square, { ...plain, m: 3, n: 3, k: 2, transposeA: true, transposeB: true });
    expect(await read(backend, square)).toEqual([39, 49, 59, 54, 68, 82, 69, 87, 105]);
    const batched = tensor(backend, [2, 2, 2], 'f32');
    const twoB = tensor(backend, [2, 3, 2], 'f32', [7, 8, 9, 10, 11, 12, 1, 0, 0, 1, 0, 0]);
    backend.matmul(a, twoB, batched, { ...plain, batch: 2, batchStrideA: 0, batchStrideB: 6 });
    expect(await read(backend, batched)).toEqual([58, 64, 139, 154, 1, 2, 4, 5]);
    const zeros = tensor(backend, [2, 2], 'f32');
    backend.matmul(tensor(backend, [2, 0], 'f32'), tensor(backend, [0, 2], 'f32'), zeros, { ...plain, k: 0 });
    expect(await read(backend, zeros)).toEqual([0, 0, 0, 0]);
  });

  it('gathers rows and scatter-adds with duplicates onto existing values', async () => {
    const backend = createReferenceBackend();
    // x [outer 2, rows 3, inner 1]
    const x = tensor(backend, [2, 3], 'f32', [10, 11, 12, 20, 21, 22]);
    const indices = tensor(backend, [4], 'i32', [2, 0, 2, 1]);
    const gathered = tensor(backend, [2, 4], 'f32');
    backend.gather(x, indices, gathered, 2, 3, 1);
    expect(await read(backend, gathered)).toEqual([12, 10, 12, 11, 22, 20, 22, 21]);
    const out = tensor(backend, [2, 3], 'f32', [1, 1, 1, 0, 0, 0]);
    const source = tensor(backend, [2, 4], 'f32', [1, 2, 3, 4, 5, 6, 7, 8]);
    backend.scatterAdd(source, indices, out, 2, 3, 1);
    expect(await read(backend, out)).toEqual([3, 5, 5, 6, 8, 12]);
    expect(() => backend.gather(x, tensor(backend, [1], 'i32', [3]), tensor(backend, [2, 1], 'f32'), 2, 3, 1)).toThrow(
      InvalidArgumentError,
    );
  });
});

describe('reference backend: fused kernels', () => {
  it('softmax, logSoftmax and softmaxBackward', async () => {
    const backend = createReferenceBackend();
    const x = tensor(backend, [2, 3], 'f32', [0, Math.log(2), Math.log(3), -Infinity, -Infinity, -Infinity]);
    const out = tensor(backend, [2, 3], 'f32');
    backend.softmax!(x, out, 2, 3);
    expectClose(await read(backend, out), [1 / 6, 2 / 6, 3 / 6, NaN, NaN, NaN]);
    backend.logSoftmax!(x, out, 2, 3);
    expectClose(await read(backend, out), [Math.log(1 / 6), Math.log(2 / 6), Math.log(3 / 6), NaN, NaN, NaN]);
    const y = tensor(backend, [1, 2], 'f32', [0.5, 0.5]);
    const dy = tensor(backend, [1, 2], 'f32', [1, 0]);
    const dx = tensor(backend, [1, 2], 'f32');
    backend.softmaxBackward!(y, dy, dx, 1, 2);
    expect(await read(backend, dx)).toEqual([0.25, -0.25]);
  });

  it('rmsNorm and layerNorm', async () => {
    const backend = createReferenceBackend();
    const out = tensor(backend, [1, 2], 'f32');
    const rstd = tensor(backend, [1], 'f32');
    backend.rmsNorm!(tensor(backend, [1, 2], 'f32', [3, 4]), tensor(backend, [2], 'f32', [1, 2]), out, rstd, 1, 2, 0);
    expectClose(await read(backend, rstd), [1 / Math.sqrt(12.5)]);
    expectClose(await read(backend, out), [3 / Math.sqrt(12.5), 8 / Math.sqrt(12.5)]);
    const normalized = tensor(backend, [1, 3], 'f32');
    const weight = tensor(backend, [3], 'f32', [1, 2, 3]);
    const bias = tensor(backend, [3], 'f32', [0, 1, 0]);
    backend.layerNorm!(tensor(backend, [1, 3], 'f32', [1, 2, 3]), weight, bias, normalized, 1, 3, 0);
    const unit = 1 / Math.sqrt(2 / 3);
    expectClose(await read(backend, normalized), [-unit, 1, 3 * unit]);
  });

  it('rmsNormBackward matches finite differences of Σ dy·out', async () => {
    const backend = createReferenceBackend();
    const x = [0.5, -1, 2, 1.5, 0.25, -0.75];
    const w = [1.5, -0.5, 2];
    const upstream = [0.3, -0.2, 0.1, 0.7, 0.4, -0.6];
    const eps = 1e-3;
    const loss = (input: number[], weights: number[]) => {
      let total = 0;
      for (let row = 0; row < 2; row++) {
        const slice = input.slice(row * 3, row * 3 + 3);
        const r = 1 / Math.sqrt(slice.reduce((sum, value) => sum + value * value, 0) / 3 + eps);
        slice.forEach((value, col) => (total += upstream[row * 3 + col] * value * r * weights[col]));
      }
      return total;
    };
    const numeric = (values: number[], index: number, fn: (changed: number[]) => number) => {
      const plus = [...values];
      const minus = [...values];
      plus[index] += 1e-6;
      minus[index] -= 1e-6;
      return (fn(plus) - fn(minus)) / 2e-6;
    };
    const rstd = [0, 1].map(
      (row) => 1 / Math.sqrt(x.slice(row * 3, row * 3 + 3).reduce((sum, value) => sum + value * value, 0) / 3 + eps),
    );
    const dx = tensor(backend, [2, 3], 'f32');
    const dWeight = tensor(backend, [3], 'f32', [99, 99, 99]);
    backend.rmsNormBackward!(
      tensor(backend, [2, 3], 'f32', x),
      tensor(backend, [3], 'f32', w),
      tensor(backend, [2], 'f32', rstd),
      tensor(backend, [2, 3], 'f32', upstream),
      dx,
      dWeight,
      2,
      3,
    );
    expectClose(
      await read(backend, dx),
      x.map((_, index) => numeric(x, index, (changed) => loss(changed, w))),
      1e-5,
    );
    expectClose(
      await read(backend, dWeight),
      w.map((_, index) => numeric(w, index, (changed) => loss(x, changed))),
      1e-5,
    );
  });

  it('rope rotates by position·theta^(−2i/D) and inverse undoes it', async () => {
    const backend = createReferenceBackend();
    // x [1, 1, 2, 4]: positions offset 3 and 4; pairs (i, i + 2).
    const values = [1, 0, 0, 1, 2, 1, -1, 0.5];
    const x = tensor(backend, [1, 1, 2, 4], 'f32', values);
    const out = tensor(backend, [1, 1, 2, 4], 'f32');
    backend.rope!(x, out, 3, 100, false);
    const expected: number[] = [];
    for (const t of [0, 1]) {
      const row = values.slice(t * 4, t * 4 + 4);
      const angles = [(3 + t) * 1, (3 + t) * 100 ** -0.5];
      expected.push(
        row[0] * Math.cos(angles[0]) - row[2] * Math.sin(angles[0]),
        row[1] * Math.cos(angles[1]) - row[3] * Math.sin(angles[1]),
        row[2] * Math.cos(angles[0]) + row[0] * Math.sin(angles[0]),
        row[3] * Math.cos(angles[1]) + row[1] * Math.sin(angles[1]),
      );
    }
    expectClose(await read(backend, out), expected);
    const back = tensor(backend, [1, 1, 2, 4], 'f32');
    backend.rope!(out, back, 3, 100, true);
    expectClose(await read(backend, back), values);
  });

  it('swiglu and its backward (checked against finite differences)', async () => {
    const backend = createReferenceBackend();
    const gate = [0, Math.log(3), -1];
    const up = [5, 2, -3];
    const dy = [1, 0.5, 2];
    const silu = (x: number) => x / (1 + Math.exp(-x));
    const out = tensor(backend, [3], 'f32');
    backend.swiglu!(tensor(backend, [3], 'f32', gate), tensor(backend, [3], 'f32', up), out);
    expectClose(await read(backend, out), [0, 0.75 * Math.log(3) * 2, silu(-1) * -3]);
    const dGate = tensor(backend, [3], 'f32');
    const dUp = tensor(backend, [3], 'f32');
    backend.swigluBackward!(
      tensor(backend, [3], 'f32', gate),
      tensor(backend, [3], 'f32', up),
      tensor(backend, [3], 'f32', dy),
      dGate,
      dUp,
    );
    const slope = (x: number) => (silu(x + 1e-6) - silu(x - 1e-6)) / 2e-6;
    expectClose(
      await read(backend, dGate),
      gate.map((g, index) => dy[index] * up[index] * slope(g)),
      1e-5,
    );
    expectClose(
      await read(backend, dUp),
      gate.map((g, index) => dy[index] * silu(g)),
    );
  });

  it('crossEntropy and crossEntropyBackward with an ignored row', async () => {
    const backend = createReferenceBackend();
    const logits = tensor(backend, [2, 2], 'f32', [0, Math.log(3), 5, 7]);
    const targets = tensor(backend, [2], 'i32', [1, -100]);
    const loss = tensor(backend, [2], 'f32');
    backend.crossEntropy!(logits, targets, loss, 2, 2, -100);
    expectClose(await read(backend, loss), [Math.log(4 / 3), 0]);
    const dLogits = tensor(backend, [2, 2], 'f32');
    backend.crossEntropyBackward!(logits, targets, dLogits, 2, 2, -100, 0.5);
    expectClose(await read(backend, dLogits), [0.125, -0.125, 0, 0]);
  });

  it('crossEntropy gives NaN rows for out-of-range targets instead of reading another row', async () => {
    const backend = createReferenceBackend();
    const logits = tensor(backend, [3, 2], 'f32', [0, Math.log(3), 5, 7, 1, 1]);
    const targets = tensor(backend, [3], 'i32', [1, -5, 2]);
    const loss = tensor(backend, [3], 'f32');
    backend.crossEntropy!(logits, targets, loss, 3, 2, -1);
    const losses = await read(backend, loss);
    expectClose([losses[0]], [Math.log(4 / 3)]);
    expect(losses.slice(1)).toEqual([NaN, NaN]);
    const dLogits = tensor(backend, [3, 2], 'f32');
    backend.crossEntropyBackward!(logits, targets, dLogits, 3, 2, -1, 1);
    expect((await read(backend, dLogits)).slice(2)).toEqual([NaN, NaN, NaN, NaN]);
  });

  it('adamw updates param, m and v in place', async () => {
    const backend = createReferenceBackend();
    const param = tensor(backend, [2], 'f32', [1, 1]);
    const m = tensor(backend, [2], 'f32', [0, 0]);
    const v = tensor(backend, [2], 'f32', [0, 0]);
    backend.adamw!(param, tensor(backend, [2], 'f32', [0.5, -2]), m, v, {
      lr: 0.1,
      beta1: 0.9,
      beta2: 0.999,
      eps: 0,
      weightDecay: 0.1,
      step: 1,
    });
    // Step 1: bias correction recovers g and g², so the update is lr·sign(g) after decay by 1 − lr·wd.
    expectClose(await read(backend, param), [0.99 - 0.1, 0.99 + 0.1]);
    expectClose(await read(backend, m), [0.05, -0.2]);
    expectClose(await read(backend, v), [0.00025, 0.004]);
  });

  it('random equals the host Philox stream, rounded to the dtype', async () => {
    const backend = createReferenceBackend();
    const out = tensor(backend, [6], 'f32');
    backend.random!(out, { kind: 'uniform', low: -1, high: 3 }, 42, 5);
    const host = new Float32Array(6);
    philoxUniform(host, 42, 5, -1, 3);
    expect(await read(backend, out)).toEqual(Array.from(host));
    const halves = tensor(backend, [5], 'bf16');
    backend.random!(halves, { kind: 'normal', mean: 1, std: 2 }, 7, 0);
    const normal = new Float32Array(5);
    philoxNormal(normal, 7, 0, 1, 2);
    expect(await read(backend, halves)).toEqual(Array.from(normal, (value) => bf16BitsToF32(f32ToBf16Bits(value))));
  });
});

describe('reference backend: attention', () => {
  const shapeOf = (b: number, h: number, t: number, d: number) => [b, h, t, d];

  it('weights values by softmax of scaled scores and reports lse', async () => {
    const backend = createReferenceBackend();
    const out = tensor(backend, shapeOf(1, 1, 1, 1), 'f32');
    const lse = tensor(backend, [1, 1, 1], 'f32');
    backend.attention!(
      tensor(backend, shapeOf(1, 1, 1, 1), 'f32', [2]),
      tensor(backend, shapeOf(1, 1, 2, 1), 'f32', [0, Math.log(3)]),
      tensor(backend, shapeOf(1, 1, 2, 1), 'f32', [4, 8]),
      null,
      out,
      lse,
      { scale: 0.5, causal: false },
    );
    expectClose(await read(backend, out), [7]);
    expectClose(await read(backend, lse), [Math.log(4)]);
  });

  it('aligns the causal mask to the end and shares kv heads across a group', async () => {
    const backend = createReferenceBackend();
    // Hq = 2 query heads read the single kv head; Tq = 2, Tk = 3 so query i sees keys j ≤ i + 1.
    const q = tensor(backend, shapeOf(1, 2, 2, 1), 'f32', [0, 0, 1, 1]);
    const k = tensor(backend, shapeOf(1, 1, 3, 1), 'f32', [0, Math.log(2), Math.log(3)]);
    const v = tensor(backend, shapeOf(1, 1, 3, 1), 'f32', [6, 12, 18]);
    const out = tensor(backend, shapeOf(1, 2, 2, 1), 'f32');
    const lse = tensor(backend, [1, 2, 2], 'f32');
    backend.attention!(q, k, v, null, out, lse, { scale: 1, causal: true });
    expectClose(await read(backend, out), [9, 12, 10, 14]);
    expectClose(await read(backend, lse), [Math.log(2), Math.log(3), Math.log(3), Math.log(6)]);
  });

  it('gives out = 0 and lse = −Inf to rows without an allowed key', async () => {
    const backend = createReferenceBackend();
    // Tq = 3, Tk = 2, causal: query i sees keys j ≤ i − 1, so row 0 sees none; the mask hides row 1 entirely.
    const mask = tensor(backend, [3, 2], 'f32', [0, 0, -Infinity, -Infinity, 0, Math.log(3)]);
    const out = tensor(backend, shapeOf(1, 1, 3, 1), 'f32');
    const lse = tensor(backend, [1, 1, 3], 'f32');
    backend.attention!(
      tensor(backend, shapeOf(1, 1, 3, 1), 'f32', [1, 1, 1]),
      tensor(backend, shapeOf(1, 1, 2, 1), 'f32', [0, 0]),
      tensor(backend, shapeOf(1, 1, 2, 1), 'f32', [4, 8]),
      view(mask, [1, 1, 3, 2], [0, 0, 2, 1]),
      out,
      lse,
      { scale: 1, causal: true },
    );
    expectClose(await read(backend, out), [0, 0, 7]);
    expectClose(await read(backend, lse), [-Infinity, -Infinity, Math.log(4)]);
  });

  it('attentionBackward matches finite differences of Σ dOut·out (GQA, causal, mask)', async () => {
    const [batch, queryHeads, keyHeads, queryLength, keyLength, dimension] = [1, 4, 2, 2, 3, 2];
    const scale = 0.7;
    const numbers = (length: number, seed: number) =>
      Array.from({ length }, (_, index) => Math.sin(seed * 12.9898 + index * 78.233) * 0.9);
    const q = numbers(batch * queryHeads * queryLength * dimension, 1);
    const k = numbers(batch * keyHeads * keyLength * dimension, 2);
    const v = numbers(k.length, 3);
    const upstream = numbers(q.length, 4);
    const maskValues = numbers(queryLength * keyLength, 5);
    const group = queryHeads / keyHeads;
    // An independent float64 forward: L = Σ upstream · attention(q, k, v).
    const objective = (query: number[], key: number[], value: number[]) => {
      let total = 0;
      for (let h = 0; h < queryHeads; h++) {
        const kv = Math.floor(h / group);
        for (let i = 0; i < queryLength; i++) {
          const scores: number[] = [];
          for (let j = 0; j < keyLength; j++) {
            if (j > i + keyLength - queryLength) continue;
            let dot = 0;
            for (let d = 0; d < dimension; d++)
              dot += query[(h * queryLength + i) * dimension + d] * key[(kv * keyLength + j) * dimension + d];
            scores.push(scale * dot + maskValues[i * keyLength + j]);
          }
          const weights = scores.map((score) => Math.exp(score));
          const sum = weights.reduce((acc, weight) => acc + weight, 0);
          for (let d = 0; d < dimension; d++) {
            let mixed = 0;
            weights.forEach((weight, j) => (mixed += (weight / sum) * value[(kv * keyLength + j) * dimension + d]));
            total += upstream[(h * queryLength + i) * dimension + d] * mixed;
          }
        }
      }
      return total;
    };
    const gradient = (values: number[], index: number, apply: (changed: number[]) => number) => {
      const plus = [...values];
      const minus = [...values];
      plus[index] += 1e-6;
      minus[index] -= 1e-6;
      return (apply(plus) - apply(minus)) / 2e-6;
    };

    const backend = createReferenceBackend();
    const qRef = tensor(backend, shapeOf(batch, queryHeads, queryLength, dimension), 'f32', q);
    const kRef = tensor(backend, shapeOf(batch, keyHeads, keyLength, dimension), 'f32', k);
    const vRef = tensor(backend, shapeOf(batch, keyHeads, keyLength, dimension), 'f32', v);
    const mask = view(
      tensor(backend, [queryLength, keyLength], 'f32', maskValues),
      [batch, queryHeads, queryLength, keyLength],
      [0, 0, keyLength, 1],
    );
    const out = tensor(backend, qRef.shape as number[], 'f32');
    const lse = tensor(backend, [batch, queryHeads, queryLength], 'f32');
    const params = { scale, causal: true };
    backend.attention!(qRef, kRef, vRef, mask, out, lse, params);
    const dq = tensor(backend, qRef.shape as number[], 'f32');
    const dk = tensor(backend, kRef.shape as number[], 'f32');
    const dv = tensor(backend, vRef.shape as number[], 'f32');
    backend.attentionBackward!(
      qRef,
      kRef,
      vRef,
      mask,
      out,
      lse,
      tensor(backend, qRef.shape as number[], 'f32', upstream),
      dq,
      dk,
      dv,
      params,
    );
    expectClose(
      await read(backend, dq),
      q.map((_, index) => gradient(q, index, (changed) => objective(changed, k, v))),
      1e-4,
    );
    expectClose(
      await read(backend, dk),
      k.map((_, index) => gradient(k, index, (changed) => objective(q, changed, v))),
      1e-4,
    );
    expectClose(
      await read(backend, dv),
      v.map((_, index) => gradient(v, index, (changed) => objective(q, k, changed))),
      1e-4,
    );
  });
});
