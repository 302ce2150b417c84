/**
 * The safetensors reader rejects what the reference reader rejects: duplicate names, gaps
 * between tensors and bytes after the last tensor — and still loads everything kiln writes.
 */
import { describe, expect, it } from 'vitest';
import { CheckpointError } from '../src/errors.js';
import { parseSafetensors, serializeSafetensors, type RawTensor } from '../src/io/safetensors.js';

function craft(header: string, data: Uint8Array): Uint8Array {
  const json = new TextEncoder().encode(header);
  const bytes = new Uint8Array(8 + json.byteLength + data.byteLength);
  new DataView(bytes.buffer).setUint32(0, json.byteLength, true);
  bytes.set(json, 8);
  bytes.set(data, 8 + json.byteLength);
  return bytes;
}

function rejection(bytes: Uint8Array): CheckpointError {
  try {
    parseSafetensors(bytes, { source: 'bad.safetensors' });
  } catch (error) {
    expect(error).toBeInstanceOf(CheckpointError);
    expect((error as CheckpointError).message).toContain('bad.safetensors');
    expect((error as CheckpointError).hint).toBeTruthy();
    return error as CheckpointError;
  }
  throw new Error('the file was accepted');
}

const entry = (begin: number, end: number) =>
  `{"dtype":"F32","shape":[${(end - begin) / 4}],"data_offsets":[${begin},${end}]}`;

describe('parseSafetensors layout checks', () => {
  it('rejects a duplicate tensor name, naming it', () => {
    const error = rejection(craft(`{"w":${entry(0, 4)},"b":${entry(4, 8)},"w":${entry(0, 4)}}`, new Uint8Array(8)));
    expect(error.message).toMatch(/"w" appears twice in the header/);
  });

  it('rejects a duplicate name even when spelled with JSON escapes', () => {
    const error = rejection(craft(`{"w":${entry(0, 4)},"\\u0077":${entry(4, 8)}}`, new Uint8Array(8)));
    expect(error.message).toMatch(/"w" appears twice/);
  });

  it('rejects a duplicate __metadata__ entry', () => {
    const error = rejection(
      craft(`{"__metadata__":{"a":"1"},"w":${entry(0, 4)},"__metadata__":{"a":"2"}}`, new Uint8Array(4)),
    );
    expect(error.message).toMatch(/"__metadata__" appears twice/);
  });

  it('does not mistake repeated keys inside entries or metadata for duplicates', () => {
    const parsed = parseSafetensors(
      craft(`{"__metadata__":{"dtype":"x","shape":"y"},"a":${entry(0, 4)},"b":${entry(4, 8)}}`, new Uint8Array(8)),
    );
    expect([...parsed.tensors.keys()]).toEqual(['a', 'b']);
  });

  it('rejects a gap between two tensors, naming the tensor and the byte offset', () => {
    const error = rejection(craft(`{"a":${entry(0, 4)},"b":${entry(8, 12)}}`, new Uint8Array(12)));
    expect(error.message).toMatch(/gap.*bytes 4 to 8.*"b"/);
  });

  it('rejects a gap before the first tensor', () => {
    const error = rejection(craft(`{"a":${entry(4, 8)}}`, new Uint8Array(8)));
    expect(error.message).toMatch(/gap.*bytes 0 to 4.*"a"/);
  });

  it('rejects bytes after the last tensor, naming where they start', () => {
    const error = rejection(craft(`{"a":${entry(0, 4)}}`, new Uint8Array(7)));
    expect(error.message).toMatch(/3 bytes after the last tensor \("a"\), from byte 4/);
    const empty = rejection(craft('{}', new Uint8Array(2)));
    expect(empty.message).toMatch(/2 bytes after the last tensor.*from byte 0/);
  });

  it('still reads every file kiln writes: empty tensors, scalars, metadata, all dtypes', () => {
    const tensors: Record<string, RawTensor> = {
      empty: { dtype: 'f32', shape: [0, 3], data: new Uint8Array(0) },
      first: { dtype: 'f16', shape: [3], data: new Uint8Array(6) },
      z: { dtype: 'i32', shape: [2], data: new Uint8Array(8) },
      also_empty: { dtype: 'bf16', shape: [4, 0], data: new Uint8Array(0) },
      scalar: { dtype: 'f32', shape: [], data: new Uint8Array(4) },
    };
    const parsed = parseSafetensors(serializeSafetensors(tensors, { step: '3' }));
    expect([...parsed.tensors.keys()].sort()).toEqual(Object.keys(tensors).sort());
    expect(parsed.metadata).toEqual({ step: '3' });
    expect(parseSafetensors(serializeSafetensors({})).tensors.size).toBe(0);
    const onlyEmpty = parseSafetensors(serializeSafetensors({ e: tensors.empty }));
    expect(onlyEmpty.tensors.get('e')?.shape).toEqual([0, 3]);
  });
});
