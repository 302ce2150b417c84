import * as fsPromises from 'node:fs/promises';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { CheckpointError, InvalidArgumentError, KilnError } from '../src/errors.js';
import { bf16BitsToF32, f16BitsToF32, f32ToBf16Bits, f32ToF16Bits } from '../src/half.js';
import { writeFileAtomic } from '../src/io/atomic-file.js';
import {
  parseSafetensors,
  readSafetensorsFile,
  serializeSafetensors,
  writeSafetensorsFile,
  type RawTensor,
} from '../src/io/safetensors.js';

// Every fs function stays real unless a test injects a failure into it.
vi.mock('node:fs/promises', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:fs/promises')>();
  return { ...actual, open: vi.fn(actual.open), rename: vi.fn(actual.rename) };
});

function bytesOf(array: ArrayBufferView): Uint8Array {
  return new Uint8Array(array.buffer, array.byteOffset, array.byteLength).slice();
}

function halfTensor(values: number[], toBits: (value: number) => number, shape: number[]): RawTensor {
  return { dtype: 'f16', shape, data: bytesOf(Uint16Array.from(values, toBits)) };
}

/** Build a file by hand, straight from the spec: u64 LE length, header text, data. */
function craft(header: string | object, data: Uint8Array = new Uint8Array(0), claimedLength?: number): Uint8Array {
  const json = new TextEncoder().encode(typeof header === 'string' ? header : JSON.stringify(header));
  const bytes = new Uint8Array(8 + json.byteLength + data.byteLength);
  const view = new DataView(bytes.buffer);
  const length = claimedLength ?? json.byteLength;
  view.setUint32(0, length % 2 ** 32, true);
  view.setUint32(4, Math.floor(length / 2 ** 32), true);
  bytes.set(json, 8);
  bytes.set(data, 8 + json.byteLength);
  return bytes;
}

function expectCheckpointError(bytes: Uint8Array, pattern: RegExp): CheckpointError {
  let caught: unknown;
  try {
    parseSafetensors(bytes, { source: 'models/bad.safetensors' });
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(CheckpointError);
  const error = caught as CheckpointError;
  expect(error.code).toBe('CHECKPOINT_ERROR');
  expect(error.message).toContain('models/bad.safetensors');
  expect(error.message).toMatch(pattern);
  expect(error.hint ?? '').not.toBe('');
  return error;
}

const f32Values = [1.5, -2.25, 3e-8, 65504, -0];
const f16Values = [0.5, -1, 2.001953125, 65504];
const bf16Values = [1, -3.140625, 1e30, 0.0078125, 7, 8];
const i32Values = [0, -1, 2147483647, -2147483648];

function sampleTensors(): Record<string, RawTensor> {
  return {
    'layers.0.weight': { dtype: 'f32', shape: [5], data: bytesOf(Float32Array.from(f32Values)) },
    'layers.0.half': halfTensor(f16Values, f32ToF16Bits, [2, 2]),
    'layers.0.brain': { dtype: 'bf16', shape: [3, 2], data: bytesOf(Uint16Array.from(bf16Values, f32ToBf16Bits)) },
    tokens: { dtype: 'i32', shape: [2, 1, 2], data: bytesOf(Int32Array.from(i32Values)) },
    empty: { dtype: 'f32', shape: [0, 3], data: new Uint8Array(0) },
    scale: { dtype: 'f32', shape: [], data: bytesOf(Float32Array.of(0.125)) },
  };
}

describe('serializeSafetensors / parseSafetensors', () => {
  it('round-trips all four dtypes, metadata, an empty tensor and a scalar', () => {
    const metadata = { format: 'pt', step: '1200', note: 'ünïcödé ✓' };
    const bytes = serializeSafetensors(sampleTensors(), metadata);
    const parsed = parseSafetensors(bytes);
    expect(parsed.metadata).toEqual(metadata);
    expect([...parsed.tensors.keys()].sort()).toEqual(Object.keys(sampleTensors()).sort());

    const weight = parsed.tensors.get('layers.0.weight') as RawTensor;
    expect(weight.dtype).toBe('f32');
    expect(Array.from(new Float32Array(weight.data.slice().buffer))).toEqual(f32Values.map(Math.fround));
    const half = parsed.tensors.get('layers.0.half') as RawTensor;
    expect(half.shape).toEqual([2, 2]);
    expect(Array.from(new Uint16Array(half.data.slice().buffer), f16BitsToF32)).toEqual(f16Values);
    const brain = parsed.tensors.get('layers.0.brain') as RawTensor;
    expect(brain.dtype).toBe('bf16');
    expect(Array.from(new Uint16Array(brain.data.slice().buffer), bf16BitsToF32)).toEqual(
      bf16Values.map((value) => bf16BitsToF32(f32ToBf16Bits(value))),
    );
    const tokens = parsed.tensors.get('tokens') as RawTensor;
    expect(Array.from(new Int32Array(tokens.data.slice().buffer))).toEqual(i32Values);
    expect(parsed.tensors.get('empty')).toMatchObject({ dtype: 'f32', shape: [0, 3] });
    expect(parsed.tensors.get('empty')?.data.byteLength).toBe(0);
    const scale = parsed.tensors.get('scale') as RawTensor;
    expect(scale.shape).toEqual([]);
    expect(new Float32Array(scale.data.slice().buffer)[0]).toBe(0.125);
  });

  it('writes the layout the spec describes: u64 length, space-padded JSON, 8-aligned data, naturally aligned tensors', () => {
    // 'a.odd' sorts first by name and is 2 bytes long: only size-first ordering keeps the f32 tensors aligned.
    const odd = halfTensor([1], f32ToF16Bits, [1]);
    const bytes = serializeSafetensors({ ...sampleTensors(), 'a.odd': odd }, { a: 'b' });
    const view = new DataView(bytes.buffer, bytes.byteOffset);
    const length = view.getUint32(0, true);
    expect(view.getUint32(4, true)).toBe(0);
    expect((8 + length) % 8).toBe(0);
    const text = new TextDecoder().decode(bytes.subarray(8, 8 + length));
    expect(text).toMatch(/^\{.*\} *$/);
    const header = JSON.parse(text) as Record<
      string,
      { dtype: string; shape: number[]; data_offsets: [number, number] }
    >;
    expect(header.__metadata__).toEqual({ a: 'b' });
    expect(header['layers.0.brain'].dtype).toBe('BF16');
    expect(header['layers.0.half'].dtype).toBe('F16');
    expect(header.tokens.dtype).toBe('I32');
    let total = 0;
    for (const [name, entry] of Object.entries(header)) {
      if (name === '__metadata__') continue;
      const [begin, end] = entry.data_offsets;
      const elementBytes = entry.dtype === 'F16' || entry.dtype === 'BF16' ? 2 : 4;
      expect((8 + length + begin) % elementBytes).toBe(0);
      total += end - begin;
    }
    expect(bytes.byteLength).toBe(8 + length + total);
  });

  it('is deterministic whatever the insertion order or container', () => {
    const tensors = sampleTensors();
    const reversed = new Map(Object.entries(tensors).reverse());
    expect(serializeSafetensors(reversed, { x: '1' })).toEqual(serializeSafetensors(tensors, { x: '1' }));
  });

  it('reads a hand-made file with padding, unsorted keys and no metadata', () => {
    const data = bytesOf(Int32Array.of(7, 8, 9));
    const header =
      '{"b":{"dtype":"I32","shape":[1],"data_offsets":[8,12]},"a":{"dtype":"I32","shape":[2],"data_offsets":[0,8]}}   ';
    const parsed = parseSafetensors(craft(header, data));
    expect(parsed.metadata).toEqual({});
    expect(Array.from(new Int32Array(parsed.tensors.get('a')?.data.slice().buffer as ArrayBuffer))).toEqual([7, 8]);
    expect(Array.from(new Int32Array(parsed.tensors.get('b')?.data.slice().buffer as ArrayBuffer))).toEqual([9]);
  });

  it('returns zero-copy views into the input bytes', () => {
    const bytes = serializeSafetensors({ x: { dtype: 'i32', shape: [1], data: bytesOf(Int32Array.of(5)) } });
    const parsed = parseSafetensors(bytes);
    expect(parsed.tensors.get('x')?.data.buffer).toBe(bytes.buffer);
  });

  it('rejects bad arguments when serializing', () => {
    expect(() => serializeSafetensors({ x: { dtype: 'f32', shape: [2], data: new Uint8Array(4) } })).toThrow(/needs 8/);
    expect(() => serializeSafetensors({ x: { dtype: 'f64' as never, shape: [1], data: new Uint8Array(8) } })).toThrow(
      InvalidArgumentError,
    );
    expect(() => serializeSafetensors({ x: { dtype: 'f32', shape: [-1], data: new Uint8Array(0) } })).toThrow(
      InvalidArgumentError,
    );
    expect(() => serializeSafetensors({ __metadata__: { dtype: 'f32', shape: [], data: new Uint8Array(4) } })).toThrow(
      /reserved/,
    );
    expect(() => serializeSafetensors({}, { step: 3 as unknown as string })).toThrow(/not a string/);
  });
});

describe('parseSafetensors never trusts the file', () => {
  const entry = (extra: object) => ({ dtype: 'F32', shape: [2], data_offsets: [0, 8], ...extra });
  const data8 = new Uint8Array(8);

  it('rejects a file shorter than 8 bytes', () => {
    expectCheckpointError(new Uint8Array(5), /5 bytes long/);
  });

  it('rejects a header length larger than the file', () => {
    const bytes = craft('{}', new Uint8Array(0), 300);
    expectCheckpointError(bytes, /claims 300 bytes but only 2 bytes follow/);
  });

  it('rejects a header claiming 2^40 bytes before allocating anything', () => {
    const decode = vi.spyOn(TextDecoder.prototype, 'decode');
    const started = performance.now();
    expectCheckpointError(craft('{}', new Uint8Array(16), 2 ** 40), /1099511627776/);
    expect(performance.now() - started).toBeLessThan(100);
    expect(decode).not.toHaveBeenCalled();
    decode.mockRestore();
  });

  it('rejects a header over the 100 MB limit', () => {
    const bytes = new Uint8Array(100_000_016);
    new DataView(bytes.buffer).setUint32(0, 100_000_001, true);
    expectCheckpointError(bytes, /100000001 bytes, over the 100000000-byte limit/);
  });

  it('rejects headers that are not UTF-8, not JSON or not an object', () => {
    const invalidUtf8 = craft('{"a":"xx"}');
    invalidUtf8[8 + 6] = 0xff;
    expectCheckpointError(invalidUtf8, /not valid UTF-8/);
    expectCheckpointError(craft('{"a": '), /not valid JSON/);
    expectCheckpointError(craft('[1, 2]'), /not a JSON object/);
    expectCheckpointError(craft('null'), /not a JSON object/);
  });

  it('rejects entries with missing or mistyped fields', () => {
    expectCheckpointError(craft({ w: 3 }, data8), /tensor "w" is not an object/);
    expectCheckpointError(craft({ w: { shape: [2], data_offsets: [0, 8] } }, data8), /no string "dtype"/);
    expectCheckpointError(craft({ w: entry({ shape: '2' }) }, data8), /no "shape" array/);
    expectCheckpointError(craft({ w: entry({ data_offsets: [0] }) }, data8), /data_offsets/);
    expectCheckpointError(craft({ w: entry({ data_offsets: [0, '8'] }) }, data8), /non-negative integers/);
    expectCheckpointError(craft({ w: entry({ data_offsets: [-8, 0] }) }, data8), /non-negative integers/);
  });

  it('names an unsupported dtype and lists the supported ones', () => {
    const error = expectCheckpointError(craft({ w: entry({ dtype: 'F64', shape: [1] }) }, data8), /"F64"/);
    expect(error.message).toContain('F32, F16, BF16, I32');
  });

  it('rejects negative or fractional dimensions', () => {
    expectCheckpointError(craft({ w: entry({ shape: [-2] }) }, data8), /\[-2\].*non-negative integer/);
    expectCheckpointError(craft({ w: entry({ shape: [2.5] }) }, data8), /\[2\.5\]/);
  });

  it('rejects a byte length that does not match the shape', () => {
    expectCheckpointError(craft({ w: entry({ shape: [3] }) }, data8), /has 8 bytes but shape \[3\] of F32 needs 12/);
    expectCheckpointError(
      craft({ w: entry({ shape: [2 ** 40, 2 ** 40] }) }, data8),
      /whose element count exceeds 9007199254740991/,
    );
  });

  it('rejects offsets out of range, reversed or overlapping', () => {
    expectCheckpointError(
      craft({ w: entry({ data_offsets: [0, 16], shape: [4] }) }, data8),
      /ends at byte 16 but the data buffer is only 8 bytes/,
    );
    expectCheckpointError(craft({ w: entry({ data_offsets: [8, 0] }) }, data8), /reversed data_offsets \[8, 0\]/);
    const overlapping = { a: entry({ data_offsets: [0, 8] }), b: entry({ data_offsets: [4, 12] }) };
    expectCheckpointError(craft(overlapping, new Uint8Array(12)), /"a" and "b" overlap/);
    const nested = { a: entry({ data_offsets: [0, 16], shape: [4] }), b: entry({ shape: [1], data_offsets: [4, 8] }) };
    expectCheckpointError(craft(nested, new Uint8Array(16)), /overlap/);
  });

  it('rejects metadata that is not an object of strings', () => {
    expectCheckpointError(craft({ __metadata__: { step: 3 } }), /"step" is a number, not a string/);
    expectCheckpointError(craft({ __metadata__: ['x'] }), /"__metadata__" is not an object/);
  });

  it('keeps a "__proto__" metadata key as data, in an object with no prototype to reach', () => {
    const parsed = parseSafetensors(craft('{"__metadata__":{"__proto__":"x","constructor":"y"}}'));
    expect(Object.getPrototypeOf(parsed.metadata)).toBeNull();
    expect(Object.getOwnPropertyDescriptor(parsed.metadata, '__proto__')?.value).toBe('x');
    expect(parsed.metadata.constructor).toBe('y');
    expect(Object.getPrototypeOf(parseSafetensors(craft('{}')).metadata)).toBeNull();
    expect(({} as Record<string, unknown>).x).toBeUndefined();
  });

  it('keeps a tensor named "__proto__" as an ordinary tensor', () => {
    const header = '{"__proto__":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}';
    const parsed = parseSafetensors(craft(header, bytesOf(Float32Array.of(2.5))));
    expect([...parsed.tensors.keys()]).toEqual(['__proto__']);
    expect(parsed.tensors.get('__proto__')?.shape).toEqual([1]);
    expect(Object.prototype).not.toHaveProperty('dtype');
    // And back: a record with an own "__proto__" key serializes it as a tensor name.
    const tensors = Object.defineProperty({}, '__proto__', {
      value: parsed.tensors.get('__proto__'),
      enumerable: true,
    }) as Record<string, RawTensor>;
    expect(parseSafetensors(serializeSafetensors(tensors)).tensors.has('__proto__')).toBe(true);
  });

  it('refuses a shape whose element count passes 2^53, and accepts an empty one of huge dimensions', () => {
    const huge = { a: { dtype: 'F32', shape: [2 ** 40, 2 ** 40], data_offsets: [0, 0] } };
    expectCheckpointError(
      craft(huge),
      /tensor "a" has shape \[1099511627776,1099511627776\], whose element count exceeds 9007199254740991 \(2\^53 − 1\)/,
    );
    const empty = { a: { dtype: 'F32', shape: [2 ** 40, 2 ** 40, 0], data_offsets: [0, 0] } };
    expect(parseSafetensors(craft(empty)).tensors.get('a')?.data.byteLength).toBe(0);
    expect(() =>
      serializeSafetensors({ a: { dtype: 'f32', shape: [2 ** 30, 2 ** 30, 2 ** 30], data: new Uint8Array(0) } }),
    ).toThrow(/whose element count exceeds 9007199254740991/);
  });
});

describe('safetensors files and atomic writes', () => {
  let directory: string;
  beforeEach(async () => {
    directory = await mkdtemp(join(tmpdir(), 'kiln-safetensors-'));
  });
  afterEach(async () => {
    vi.mocked(fsPromises.open).mockClear();
    vi.mocked(fsPromises.rename).mockClear();
    await rm(directory, { recursive: true, force: true });
  });

  it('writes and reads a file', async () => {
    const path = join(directory, 'model.safetensors');
    await writeSafetensorsFile(path, sampleTensors(), { step: '7' });
    const read = await readSafetensorsFile(path);
    expect(read.metadata).toEqual({ step: '7' });
    expect(read.tensors.get('tokens')?.data).toEqual(sampleTensors().tokens.data);
    expect(Buffer.isBuffer(read.tensors.get('tokens')?.data)).toBe(false);
    expect(await readdir(directory)).toEqual(['model.safetensors']);
  });

  it('names the path when a file is missing or corrupt', async () => {
    const missing = join(directory, 'missing.safetensors');
    await expect(readSafetensorsFile(missing)).rejects.toThrow(CheckpointError);
    await expect(readSafetensorsFile(missing)).rejects.toThrow(missing);
    const corrupt = join(directory, 'corrupt.safetensors');
    await writeFile(corrupt, craft('{"w": 1'));
    await expect(readSafetensorsFile(corrupt)).rejects.toThrow(new RegExp(`${corrupt}: the header is not valid JSON`));
  });

  it('replaces the target and leaves no temp file behind', async () => {
    const path = join(directory, 'state.json');
    await writeFile(path, 'old');
    await writeFileAtomic(path, '{"new":true}');
    expect(await readFile(path, 'utf8')).toBe('{"new":true}');
    expect(await readdir(directory)).toEqual(['state.json']);
  });

  it('leaves the old file intact when writing fails halfway', async () => {
    const path = join(directory, 'model.safetensors');
    await writeFile(path, 'old contents');
    const actualOpen = (await vi.importActual<typeof import('node:fs/promises')>('node:fs/promises')).open;
    vi.mocked(fsPromises.open).mockImplementationOnce(async (...args: Parameters<typeof actualOpen>) => {
      const handle = await actualOpen(...args);
      const write = handle.write.bind(handle) as (
        buffer: Uint8Array,
        offset: number,
        length: number,
      ) => Promise<{ bytesWritten: number }>;
      let calls = 0;
      Object.assign(handle, {
        write: async (buffer: Uint8Array, offset: number, length: number) => {
          if (calls++ > 0) throw new Error('ENOSPC: no space left on device (injected)');
          return write(buffer, offset, Math.max(1, Math.floor(length / 2)));
        },
      });
      return handle;
    });
    const failure = writeSafetensorsFile(path, sampleTensors());
    await expect(failure).rejects.toThrow(CheckpointError);
    await expect(failure).rejects.toThrow(/no space left on device \(injected\)/);
    expect(await readFile(path, 'utf8')).toBe('old contents');
    expect(await readdir(directory)).toEqual(['model.safetensors']);
  });

  it('leaves the old file intact when the rename fails', async () => {
    const path = join(directory, 'model.safetensors');
    await writeFile(path, 'old contents');
    vi.mocked(fsPromises.rename).mockRejectedValueOnce(new Error('EXDEV (injected)'));
    const error = await writeFileAtomic(path, new Uint8Array([1, 2, 3])).catch((caught: unknown) => caught);
    expect(KilnError.isInstance(error)).toBe(true);
    expect((error as Error).message).toContain(path);
    expect(await readFile(path, 'utf8')).toBe('old contents');
    expect(await readdir(directory)).toEqual(['model.safetensors']);
  });

  it('fails with a CheckpointError when the directory does not exist', async () => {
    await expect(writeFileAtomic(join(directory, 'no', 'such', 'file.json'), 'x')).rejects.toThrow(
      /Could not write .*file\.json/,
    );
  });
});
