// Helpers of test/attention.test.ts: seeded inputs, running attention forward/backward on any
// KernelBackend from host values, and error measures against a reference.
import {
  decodeHostValues,
  encodeHostValues,
  type AttentionParams,
  type DType,
  type KernelBackend,
  type StridedView,
  type TensorRef,
} from '@kiln/core';

/** One attention problem. */
export interface Geometry {
  batch: number;
  headsQ: number;
  headsKV: number;
  lengthQ: number;
  lengthK: number;
  headDim: number;
  causal: boolean;
  /** Multiplier of q·k (default 1/√D). */
  scale?: number;
  /** 'padding': [B, 1, 1, Tk] broadcast with stride 0; 'dense': [B, Hq, Tq, Tk] with whole rows at −Inf. */
  mask?: 'padding' | 'dense';
}

/** Host inputs of one problem (values already rounded to the storage dtype). */
export interface Inputs {
  q: Float64Array;
  k: Float64Array;
  v: Float64Array;
  dOut: Float64Array;
  /** Stored mask values, its [B, Hq, Tq, Tk] strides, and the query rows (b, h, i) it masks entirely. */
  mask: { values: Float64Array; strides: number[]; emptyRows: Set<number> } | null;
}

/** Forward and backward results as float64 host arrays. */
export interface Results {
  out: Float64Array;
  lse: Float64Array;
  dq: Float64Array;
  dk: Float64Array;
  dv: Float64Array;
}

/** Allowed max |error| of a half-precision out or gradient relative to its largest |value| (f32 accumulation, P, out and dS rounded to the dtype). */
export const HALF_RELATIVE_LIMIT: Partial<Record<DType, number>> = { f16: 2e-3, bf16: 1.6e-2 };

/** Allowed max |error| of lse (kept in f32) relative to its largest |value|. */
export const LSE_RELATIVE_LIMIT = 1e-5;

/** A small seeded generator (mulberry32), uniform in [low, high). */
export function uniform(count: number, seed: number, low = -1, high = 1): Float64Array {
  let state = seed >>> 0;
  const values = new Float64Array(count);
  for (let i = 0; i < count; i++) {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    values[i] = low + (((t ^ (t >>> 14)) >>> 0) / 4294967296) * (high - low);
  }
  return values;
}

/** `values` rounded to `dtype` (as stored). */
export function rounded(values: Float64Array, dtype: DType): Float64Array {
  return Float64Array.from(decodeHostValues(encodeHostValues(values, dtype), dtype));
}

const size = (shape: readonly number[]) => shape.reduce((a, b) => a * b, 1);

/** q, k, v, dOut and the mask of a geometry, rounded to `dtype`. */
export function makeInputs(geometry: Geometry, dtype: DType, seed: number): Inputs {
  const { batch, headsQ, headsKV, lengthQ, lengthK, headDim } = geometry;
  const q = rounded(uniform(batch * headsQ * lengthQ * headDim, seed), dtype);
  const k = rounded(uniform(batch * headsKV * lengthK * headDim, seed + 1), dtype);
  const v = rounded(uniform(batch * headsKV * lengthK * headDim, seed + 2), dtype);
  const dOut = rounded(uniform(q.length, seed + 3), dtype);
  let mask: Inputs['mask'] = null;
  if (geometry.mask === 'padding') {
    // The last 17 keys of batch 1 are padding; a few others get finite penalties.
    const values = uniform(batch * lengthK, seed + 4).map((value, index) => {
      const [b, j] = [Math.floor(index / lengthK), index % lengthK];
      if (b === 1 && j >= lengthK - 17) return -Infinity;
      return value > 0.6 ? -2 : 0;
    });
    mask = { values, strides: [lengthK, 0, 0, 1], emptyRows: new Set() };
  } else if (geometry.mask === 'dense') {
    const values = uniform(batch * headsQ * lengthQ * lengthK, seed + 4).map((value) =>
      value < -0.8 ? -Infinity : value,
    );
    const emptyRows = new Set<number>();
    for (let row = 0; row < batch * headsQ * lengthQ; row += 7) {
      emptyRows.add(row);
      values.fill(-Infinity, row * lengthK, (row + 1) * lengthK);
    }
    mask = { values, strides: [headsQ * lengthQ * lengthK, lengthQ * lengthK, lengthK, 1], emptyRows };
  }
  return { q, k, v, dOut, mask };
}

/** The params of a geometry. */
export function paramsOf(geometry: Geometry): AttentionParams {
  return { scale: geometry.scale ?? 1 / Math.sqrt(geometry.headDim), causal: geometry.causal };
}

/** Tensors of one backend, freed together. */
class Workspace {
  private readonly refs: TensorRef[] = [];
  constructor(readonly backend: KernelBackend) {}
  put(shape: number[], dtype: DType, values: ArrayLike<number>): TensorRef {
    const bytes = encodeHostValues(values, dtype);
    const buffer = this.backend.alloc(bytes.byteLength);
    if (bytes.byteLength > 0) this.backend.upload(buffer, bytes);
    const ref = { buffer, shape, dtype };
    this.refs.push(ref);
    return ref;
  }
  output(shape: number[], dtype: DType): TensorRef {
    return this.put(shape, dtype, new Float64Array(size(shape)).fill(-12345));
  }
  async read(ref: TensorRef): Promise<Float64Array> {
    return Float64Array.from(decodeHostValues(await this.backend.download(ref.buffer), ref.dtype)).subarray(
      0,
      size(ref.shape),
    );
  }
  release(): void {
    for (const ref of this.refs.splice(0)) this.backend.free(ref.buffer);
  }
}

/**
 * Runs the forward on `backend` in `dtype`, then the backward from `saved` (out and lse of the
 * reference, so every backend differentiates the same forward) or from its own forward.
 */
export async function runAttention(
  backend: KernelBackend,
  dtype: DType,
  geometry: Geometry,
  inputs: Inputs,
  saved?: Pick<Results, 'out' | 'lse'>,
): Promise<Results> {
  const { batch, headsQ, headsKV, lengthQ, lengthK, headDim } = geometry;
  const qShape = [batch, headsQ, lengthQ, headDim];
  const kShape = [batch, headsKV, lengthK, headDim];
  const rowShape = [batch, headsQ, lengthQ];
  const space = new Workspace(backend);
  try {
    const [q, k, v, dOut] = [
      space.put(qShape, dtype, inputs.q),
      space.put(kShape, dtype, inputs.k),
      space.put(kShape, dtype, inputs.v),
      space.put(qShape, dtype, inputs.dOut),
    ];
    let mask: StridedView | null = null;
    if (inputs.mask) {
      const stored = space.put([inputs.mask.values.length], 'f32', inputs.mask.values);
      mask = { ...stored, shape: [batch, headsQ, lengthQ, lengthK], strides: inputs.mask.strides, offset: 0 };
    }
    const params = paramsOf(geometry);
    const [out, lse] = [space.output(qShape, dtype), space.output(rowShape, 'f32')];
    backend.attention!(q, k, v, mask, out, lse, params);
    const forward = { out: await space.read(out), lse: await space.read(lse) };
    const source = saved ?? forward;
    const [savedOut, savedLse] = [space.put(qShape, dtype, source.out), space.put(rowShape, 'f32', source.lse)];
    const [dq, dk, dv] = [space.output(qShape, dtype), space.output(kShape, dtype), space.output(kShape, dtype)];
    backend.attentionBackward!(q, k, v, mask, savedOut, savedLse, dOut, dq, dk, dv, params);
    return { ...forward, dq: await space.read(dq), dk: await space.read(dk), dv: await space.read(dv) };
  } finally {
    space.release();
  }
}

/** Largest |got − expected| (both −Inf counts as 0; any other non-finite mismatch as Infinity). */
export function maxAbsError(got: Float64Array, expected: Float64Array): number {
  let worst = 0;
  for (let i = 0; i < expected.length; i++) {
    if (got[i] === expected[i]) continue;
    const error = Math.abs(got[i] - expected[i]);
    worst = Math.max(worst, Number.isNaN(error) ? Infinity : error);
  }
  return worst;
}

/** Largest |x|, the scale errors are judged against. */
export function maxAbs(values: Float64Array): number {
  let largest = 0;
  for (const value of values) if (Number.isFinite(value)) largest = Math.max(largest, Math.abs(value));
  return largest;
}

/** [B, H, T, D] values reordered to [B, T, H, D] (`toTokens`) or back. */
export function swapHeadsAndTokens(
  values: Float64Array,
  batch: number,
  heads: number,
  length: number,
  headDim: number,
  toTokens: boolean,
): Float64Array {
  const swapped = new Float64Array(values.length);
  for (let b = 0; b < batch; b++) {
    for (let h = 0; h < heads; h++) {
      for (let t = 0; t < length; t++) {
        const headsMajor = ((b * heads + h) * length + t) * headDim;
        const tokensMajor = ((b * length + t) * heads + h) * headDim;
        const [from, to] = toTokens ? [headsMajor, tokensMajor] : [tokensMajor, headsMajor];
        swapped.set(values.subarray(from, from + headDim), to);
      }
    }
  }
  return swapped;
}

/** Runs only the forward on `backend` in `dtype` and `layout`; out comes back heads-major. */
export async function runAttentionForward(
  backend: KernelBackend,
  dtype: DType,
  geometry: Geometry,
  inputs: Inputs,
  layout: 'heads-major' | 'tokens-major',
): Promise<Pick<Results, 'out' | 'lse'>> {
  const { batch, headsQ, headsKV, lengthQ, lengthK, headDim } = geometry;
  const tokens = layout === 'tokens-major';
  const arrange = (values: Float64Array, heads: number, length: number) =>
    tokens ? swapHeadsAndTokens(values, batch, heads, length, headDim, true) : values;
  const qShape = tokens ? [batch, lengthQ, headsQ, headDim] : [batch, headsQ, lengthQ, headDim];
  const kShape = tokens ? [batch, lengthK, headsKV, headDim] : [batch, headsKV, lengthK, headDim];
  const space = new Workspace(backend);
  try {
    const q = space.put(qShape, dtype, arrange(inputs.q, headsQ, lengthQ));
    const k = space.put(kShape, dtype, arrange(inputs.k, headsKV, lengthK));
    const v = space.put(kShape, dtype, arrange(inputs.v, headsKV, lengthK));
    let mask: StridedView | null = null;
    if (inputs.mask) {
      const stored = space.put([inputs.mask.values.length], 'f32', inputs.mask.values);
      mask = { ...stored, shape: [batch, headsQ, lengthQ, lengthK], strides: inputs.mask.strides, offset: 0 };
    }
    const [out, lse] = [space.output(qShape, dtype), space.output([batch, headsQ, lengthQ], 'f32')];
    backend.attention!(q, k, v, mask, out, lse, {
      ...paramsOf(geometry),
      ...(tokens ? { layout: 'tokens-major' as const } : {}),
    });
    const outValues = await space.read(out);
    return {
      out: tokens ? swapHeadsAndTokens(outValues, batch, headsQ, lengthQ, headDim, false) : outValues,
      lse: await space.read(lse),
    };
  } finally {
    space.release();
  }
}

/**
 * Runs only the backward on `backend` in `dtype` and `layout`, differentiating the forward whose
 * out and lse are `saved` (heads-major; typically the reference's); dq, dk, dv come back heads-major.
 */
export async function runAttentionBackward(
  backend: KernelBackend,
  dtype: DType,
  geometry: Geometry,
  inputs: Inputs,
  saved: Pick<Results, 'out' | 'lse'>,
  layout: 'heads-major' | 'tokens-major',
): Promise<Pick<Results, 'dq' | 'dk' | 'dv'>> {
  const { batch, headsQ, headsKV, lengthQ, lengthK, headDim } = geometry;
  const tokens = layout === 'tokens-major';
  const arrange = (values: Float64Array, heads: number, length: number) =>
    tokens ? swapHeadsAndTokens(values, batch, heads, length, headDim, true) : values;
  const back = (values: Float64Array, heads: number, length: number) =>
    tokens ? swapHeadsAndTokens(values, batch, heads, length, headDim, false) : values;
  const qShape = tokens ? [batch, lengthQ, headsQ, headDim] : [batch, headsQ, lengthQ, headDim];
  const kShape = tokens ? [batch, lengthK, headsKV, headDim] : [batch, headsKV, lengthK, headDim];
  const space = new Workspace(backend);
  try {
    const q = space.put(qShape, dtype, arrange(inputs.q, headsQ, lengthQ));
    const k = space.put(kShape, dtype, arrange(inputs.k, headsKV, lengthK));
    const v = space.put(kShape, dtype, arrange(inputs.v, headsKV, lengthK));
    const dOut = space.put(qShape, dtype, arrange(inputs.dOut, headsQ, lengthQ));
    const out = space.put(qShape, dtype, arrange(saved.out, headsQ, lengthQ));
    const lse = space.put([batch, headsQ, lengthQ], 'f32', saved.lse);
    let mask: StridedView | null = null;
    if (inputs.mask) {
      const stored = space.put([inputs.mask.values.length], 'f32', inputs.mask.values);
      mask = { ...stored, shape: [batch, headsQ, lengthQ, lengthK], strides: inputs.mask.strides, offset: 0 };
    }
    const [dq, dk, dv] = [space.output(qShape, dtype), space.output(kShape, dtype), space.output(kShape, dtype)];
    backend.attentionBackward!(q, k, v, mask, out, lse, dOut, dq, dk, dv, {
      ...paramsOf(geometry),
      ...(tokens ? { layout: 'tokens-major' as const } : {}),
    });
    return {
      dq: back(await space.read(dq), headsQ, lengthQ),
      dk: back(await space.read(dk), headsKV, lengthK),
      dv: back(await space.read(dv), headsKV, lengthK),
    };
  } finally {
    space.release();
  }
}
