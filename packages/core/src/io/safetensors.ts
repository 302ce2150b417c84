/**
 * safetensors read/write — kiln's checkpoint format (portable across devices, no code execution).
 * Layout: u64 little-endian header length N, N bytes of UTF-8 JSON (padded with spaces), then the
 * data buffer. The header maps each tensor name to { dtype, shape, data_offsets: [begin, end] }
 * (offsets relative to the data buffer) plus an optional "__metadata__" map of strings.
 * The reader trusts nothing in the file: every length, offset and type is checked before use, and
 * it rejects what the reference implementation rejects: a name that appears twice in the header,
 * bytes of the data buffer that belong to no tensor (gaps, or trailing bytes), overlapping tensors.
 */
import { readFile } from 'node:fs/promises';
import { DTYPE_BYTES, isDType, type DType } from '../dtype.js';
import { CheckpointError, InvalidArgumentError } from '../errors.js';
import { writeFileAtomic } from './atomic-file.js';

/** One tensor as stored in a file: dense, row-major, little-endian bytes. */
export interface RawTensor {
  /** Element type. */
  dtype: DType;
  /** Dimensions, outermost first (`[]` is a scalar). */
  shape: number[];
  /** The elements' bytes: exactly product(shape) * bytes-per-element. */
  data: Uint8Array;
}

/** Tensors to serialize, by name. */
export type SafetensorsTensors = Record<string, RawTensor> | Map<string, RawTensor>;

/** What a safetensors file holds. */
export interface SafetensorsContents {
  /** Tensors in header order; each `data` is a zero-copy view into the parsed bytes. */
  tensors: Map<string, RawTensor>;
  /** The "__metadata__" strings ({} when absent). */
  metadata: Record<string, string>;
}

/** Options of parseSafetensors. */
export interface ParseSafetensorsOptions {
  /** Where the bytes came from (a path), named in every error. Default '<buffer>'. */
  source?: string;
}

/** Largest header the reader accepts (the reference implementation's limit). */
export const SAFETENSORS_MAX_HEADER_BYTES = 100_000_000;

const FILE_DTYPES: Readonly<Record<string, DType>> = { F32: 'f32', F16: 'f16', BF16: 'bf16', I32: 'i32' };
const DTYPE_NAMES: Readonly<Record<DType, string>> = { f32: 'F32', f16: 'F16', bf16: 'BF16', i32: 'I32' };
const SUPPORTED = Object.keys(FILE_DTYPES).join(', ');
const METADATA_KEY = '__metadata__';
const CORRUPT_HINT = 'The file is truncated or corrupt; re-save it (or restore it from a backup).';

/**
 * Serialize tensors (and optional string metadata) to safetensors bytes. Deterministic: tensors
 * are laid out by element size (largest first, so every tensor is naturally aligned) then by
 * name, and the header is space-padded so the data buffer starts at a multiple of 8 bytes.
 */
export function serializeSafetensors(tensors: SafetensorsTensors, metadata?: Record<string, string>): Uint8Array {
  const entries = tensors instanceof Map ? [...tensors.entries()] : Object.entries(tensors);
  for (const [name, tensor] of entries) checkTensorArgument(name, tensor);
  entries.sort(([nameA, a], [nameB, b]) => DTYPE_BYTES[b.dtype] - DTYPE_BYTES[a.dtype] || compareStrings(nameA, nameB));

  const fields: string[] = [];
  if (metadata !== undefined && Object.keys(metadata).length > 0) {
    for (const [key, value] of Object.entries(metadata)) {
      if (typeof value !== 'string') {
        throw new InvalidArgumentError(
          `safetensors metadata ${JSON.stringify(key)} is a ${typeof value}, not a string`,
          {
            hint: 'Metadata values must be strings; JSON.stringify numbers and objects first.',
          },
        );
      }
    }
    fields.push(`${JSON.stringify(METADATA_KEY)}:${JSON.stringify(metadata)}`);
  }
  let offset = 0;
  for (const [name, tensor] of entries) {
    const end = offset + tensor.data.byteLength;
    const entry = { dtype: DTYPE_NAMES[tensor.dtype], shape: tensor.shape, data_offsets: [offset, end] };
    fields.push(`${JSON.stringify(name)}:${JSON.stringify(entry)}`);
    offset = end;
  }
  const json = new TextEncoder().encode(`{${fields.join(',')}}`);
  const headerLength = Math.ceil(json.byteLength / 8) * 8;

  const bytes = new Uint8Array(8 + headerLength + offset);
  const view = new DataView(bytes.buffer);
  view.setUint32(0, headerLength % 2 ** 32, true);
  view.setUint32(4, Math.floor(headerLength / 2 ** 32), true);
  bytes.set(json, 8);
  bytes.fill(0x20, 8 + json.byteLength, 8 + headerLength);
  let position = 8 + headerLength;
  for (const [, tensor] of entries) {
    bytes.set(tensor.data, position);
    position += tensor.data.byteLength;
  }
  return bytes;
}

/**
 * Parse safetensors bytes. Every problem is a CheckpointError naming `source` and what was wrong.
 * Returned tensor data are zero-copy subarrays of `bytes` (no extra memory): copy them before
 * mutating or reusing `bytes`. They may be unaligned for a Float32Array view.
 */
export function parseSafetensors(bytes: Uint8Array, options: ParseSafetensorsOptions = {}): SafetensorsContents {
  const source = options.source ?? '<buffer>';
  const fail = (problem: string, hint: string = CORRUPT_HINT): CheckpointError =>
    new CheckpointError(`Invalid safetensors file ${source}: ${problem}`, { hint });

  if (bytes.byteLength < 8) {
    throw fail(`it is ${bytes.byteLength} bytes long, shorter than the 8-byte header length prefix`);
  }
  const prefix = new DataView(bytes.buffer, bytes.byteOffset, 8);
  const headerLength = prefix.getUint32(4, true) * 2 ** 32 + prefix.getUint32(0, true);
  if (headerLength > bytes.byteLength - 8) {
    throw fail(
      `the header claims ${headerLength} bytes but only ${bytes.byteLength - 8} bytes follow the length prefix`,
    );
  }
  if (headerLength > SAFETENSORS_MAX_HEADER_BYTES) {
    throw fail(`the header is ${headerLength} bytes, over the ${SAFETENSORS_MAX_HEADER_BYTES}-byte limit`);
  }

  const { header, text } = decodeHeader(bytes.subarray(8, 8 + headerLength), fail);
  // JSON.parse keeps the last of two equal keys: find repeats in the text itself.
  const repeated = firstRepeatedKey(text);
  if (repeated !== undefined) {
    throw fail(
      `${JSON.stringify(repeated)} appears twice in the header; a reader would silently keep only one of them`,
      'The file was not written by a conforming safetensors writer; re-save it from the original tensors.',
    );
  }
  const data = bytes.subarray(8 + headerLength);
  let metadata: Record<string, string> = Object.create(null) as Record<string, string>;
  const tensors = new Map<string, RawTensor>();
  const spans: Array<{ name: string; begin: number; end: number }> = [];

  for (const [name, entry] of Object.entries(header)) {
    if (name === METADATA_KEY) {
      metadata = parseMetadata(entry, fail);
      continue;
    }
    const label = `tensor ${JSON.stringify(name)}`;
    if (!isPlainObject(entry)) throw fail(`${label} is not an object with dtype, shape and data_offsets`);
    const { dtype: dtypeName, shape, data_offsets: offsets } = entry;
    if (typeof dtypeName !== 'string') throw fail(`${label} has no string "dtype"`);
    const dtype = Object.hasOwn(FILE_DTYPES, dtypeName) ? FILE_DTYPES[dtypeName] : undefined;
    if (dtype === undefined) {
      throw fail(
        `${label} has dtype ${JSON.stringify(dtypeName)}, which kiln does not support (supported: ${SUPPORTED})`,
        `Convert the tensor to one of ${SUPPORTED} before saving (for example tensor.float() in PyTorch).`,
      );
    }
    if (!Array.isArray(shape)) throw fail(`${label} has no "shape" array`);
    if (!shape.every((dimension) => Number.isSafeInteger(dimension) && dimension >= 0)) {
      throw fail(`${label} has shape ${JSON.stringify(shape)}; every dimension must be a non-negative integer`);
    }
    if (!Array.isArray(offsets) || offsets.length !== 2) throw fail(`${label} has no "data_offsets" pair [begin, end]`);
    const [begin, end] = offsets as unknown[];
    if (!isOffset(begin) || !isOffset(end)) {
      throw fail(`${label} has data_offsets ${JSON.stringify(offsets)}; both must be non-negative integers`);
    }
    if (begin > end) throw fail(`${label} has reversed data_offsets [${begin}, ${end}]`);
    if (end > data.byteLength) {
      throw fail(`${label} ends at byte ${end} but the data buffer is only ${data.byteLength} bytes`);
    }
    const elements = elementCount(shape as number[]);
    if (elements === undefined) {
      throw fail(
        `${label} has shape ${JSON.stringify(shape)}, whose element count exceeds ${Number.MAX_SAFE_INTEGER} (2^53 − 1) and cannot be counted exactly`,
      );
    }
    const expected = elements * DTYPE_BYTES[dtype];
    if (expected !== end - begin) {
      throw fail(
        `${label} has ${end - begin} bytes but shape ${JSON.stringify(shape)} of ${dtypeName} needs ${expected}`,
      );
    }
    spans.push({ name, begin, end });
    tensors.set(name, { dtype, shape: [...(shape as number[])], data: data.subarray(begin, end) });
  }
  checkLayout(spans, data.byteLength, fail);
  return { tensors, metadata };
}

/** Serialize and write a safetensors file atomically (temp file, fsync, rename). */
export async function writeSafetensorsFile(
  path: string,
  tensors: SafetensorsTensors,
  metadata?: Record<string, string>,
): Promise<void> {
  await writeFileAtomic(path, serializeSafetensors(tensors, metadata));
}

/** Read and parse a safetensors file; errors name the path. Tensor data are views into one fresh buffer. */
export async function readSafetensorsFile(path: string): Promise<SafetensorsContents> {
  let contents: Buffer;
  try {
    contents = await readFile(path);
  } catch (error) {
    throw new CheckpointError(
      `Could not read safetensors file ${path}: ${error instanceof Error ? error.message : String(error)}`,
      {
        hint: 'Check the path and that the file is readable.',
        cause: error,
      },
    );
  }
  // A plain Uint8Array view, so subarrays are not Buffers that leak pool semantics to callers.
  return parseSafetensors(new Uint8Array(contents.buffer, contents.byteOffset, contents.byteLength), { source: path });
}

type Fail = (problem: string, hint?: string) => CheckpointError;

function decodeHeader(headerBytes: Uint8Array, fail: Fail): { header: Record<string, unknown>; text: string } {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(headerBytes);
  } catch {
    throw fail('the header is not valid UTF-8');
  }
  let header: unknown;
  try {
    header = JSON.parse(text);
  } catch (error) {
    throw fail(`the header is not valid JSON (${error instanceof Error ? error.message : String(error)})`);
  }
  if (!isPlainObject(header)) throw fail('the header is not a JSON object');
  return { header, text };
}

function parseMetadata(value: unknown, fail: Fail): Record<string, string> {
  if (!isPlainObject(value)) throw fail('"__metadata__" is not an object of strings');
  for (const [key, entry] of Object.entries(value)) {
    if (typeof entry !== 'string')
      throw fail(`"__metadata__" value ${JSON.stringify(key)} is a ${describeType(entry)}, not a string`);
  }
  // A null-prototype object: a "__proto__" key is an own data property, never a prototype, and no
  // key can reach Object.prototype through it.
  return Object.assign(
    Object.create(null) as Record<string, string>,
    Object.fromEntries(Object.entries(value as Record<string, string>)),
  );
}

/**
 * The tensors must tile the data buffer exactly, as the reference reader demands: sorted by
 * offsets, each starts where the previous ended (from byte 0), and the last ends at the buffer's end.
 */
function checkLayout(spans: Array<{ name: string; begin: number; end: number }>, dataLength: number, fail: Fail): void {
  const sorted = [...spans].sort((a, b) => a.begin - b.begin || a.end - b.end);
  let position = 0;
  let previous: { name: string; end: number } | undefined;
  for (const span of sorted) {
    if (span.begin < position && previous !== undefined) {
      throw fail(
        `tensors ${JSON.stringify(previous.name)} and ${JSON.stringify(span.name)} overlap in the data buffer`,
      );
    }
    if (span.begin > position) {
      throw fail(
        `there is a gap in the data buffer: bytes ${position} to ${span.begin} belong to no tensor (just before tensor ${JSON.stringify(span.name)})`,
      );
    }
    position = span.end;
    previous = span;
  }
  if (position < dataLength) {
    const last = previous === undefined ? 'there are none' : JSON.stringify(previous.name);
    throw fail(
      `there are ${dataLength - position} bytes after the last tensor (${last}), from byte ${position} of the ${dataLength}-byte data buffer`,
    );
  }
}

/** The first top-level key of a valid JSON object text that occurs twice (compared after unescaping), if any. */
function firstRepeatedKey(text: string): string | undefined {
  const seen = new Set<string>();
  let index = text.indexOf('{') + 1;
  const skipSpace = (): void => {
    while (index < text.length && ' \t\n\r'.includes(text[index])) index++;
  };
  const readString = (): string => {
    const start = index;
    index++;
    while (text[index] !== '"') index += text[index] === '\\' ? 2 : 1;
    index++;
    return JSON.parse(text.slice(start, index)) as string;
  };
  const skipValue = (): void => {
    if (text[index] === '"') {
      readString();
      return;
    }
    if (text[index] === '{' || text[index] === '[') {
      let depth = 0;
      do {
        const char = text[index];
        if (char === '"') {
          readString();
          continue;
        }
        if (char === '{' || char === '[') depth++;
        else if (char === '}' || char === ']') depth--;
        index++;
      } while (depth > 0);
      return;
    }
    // A number, true, false or null ends at the next comma, closing bracket or space.
    while (index < text.length && !',}] \t\n\r'.includes(text[index])) index++;
  };
  for (;;) {
    skipSpace();
    if (text[index] !== '"') return undefined;
    const key = readString();
    if (seen.has(key)) return key;
    seen.add(key);
    skipSpace();
    index++; // the ':'
    skipSpace();
    skipValue();
    skipSpace();
    if (text[index] !== ',') return undefined;
    index++;
  }
}

function checkTensorArgument(name: string, tensor: RawTensor): void {
  const label = `tensor ${JSON.stringify(name)}`;
  if (name === METADATA_KEY) {
    throw new InvalidArgumentError(`${label}: this name is reserved for metadata`, { hint: 'Rename the tensor.' });
  }
  if (!isPlainObject(tensor) || !isDType(tensor.dtype)) {
    throw new InvalidArgumentError(
      `${label} has dtype ${JSON.stringify((tensor as { dtype?: unknown } | null)?.dtype)}`,
      {
        hint: "Use one of 'f32', 'f16', 'bf16', 'i32'.",
      },
    );
  }
  if (
    !Array.isArray(tensor.shape) ||
    !tensor.shape.every((dimension) => Number.isSafeInteger(dimension) && dimension >= 0)
  ) {
    throw new InvalidArgumentError(`${label} has shape ${JSON.stringify(tensor.shape)}`, {
      hint: 'A shape is an array of non-negative integers ([] for a scalar).',
    });
  }
  if (!(tensor.data instanceof Uint8Array)) {
    throw new InvalidArgumentError(`${label} data is not a Uint8Array`, {
      hint: 'Pass the raw little-endian bytes, e.g. new Uint8Array(float32Array.buffer).',
    });
  }
  const elements = elementCount(tensor.shape);
  if (elements === undefined) {
    throw new InvalidArgumentError(
      `${label} has shape ${JSON.stringify(tensor.shape)}, whose element count exceeds ${Number.MAX_SAFE_INTEGER} (2^53 − 1)`,
      {
        hint: 'A tensor that large cannot exist in memory: check the shape.',
      },
    );
  }
  const expected = elements * DTYPE_BYTES[tensor.dtype];
  if (tensor.data.byteLength !== expected) {
    throw new InvalidArgumentError(
      `${label} has ${tensor.data.byteLength} bytes but shape ${JSON.stringify(tensor.shape)} of ${tensor.dtype} needs ${expected}`,
      {
        hint: 'data must hold exactly product(shape) elements of the dtype.',
      },
    );
  }
}

/**
 * product(shape), or undefined when it exceeds 2^53 − 1 (past that, doubles round and a product
 * could not be compared with a byte count). A zero dimension makes any shape empty: [2^40, 2^40, 0] is 0.
 */
function elementCount(shape: readonly number[]): number | undefined {
  if (shape.includes(0)) return 0;
  let count = 1;
  for (const dimension of shape) {
    count *= dimension;
    if (count > Number.MAX_SAFE_INTEGER) return undefined;
  }
  return count;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isOffset(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

function describeType(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value;
}

function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
