/**
 * kiln's random stream: Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as
 * 1, 2, 3", SC 2011), counter-based, so element i of a tensor depends only on (seed, offset + i):
 * every backend and every thread can compute any element independently and identically.
 *
 * Layout: element e = offset + i uses block c = floor(e / 4), lane e % 4, with counter words
 * [c mod 2^32, floor(c / 2^32), 0, 0] and key [seed mod 2^32, floor(seed / 2^32)].
 * Numerics: uniform = (word >>> 8) * 2^-24 in [0, 1), exact in f32, then low + (high - low) * u
 * rounded to f32. Normal (Box-Muller on lanes 0 and 1 of block e, computed in f64, rounded to f32):
 * z = sqrt(-2 ln u1) cos(2 pi u2) with u1 = ((w0 >>> 8) + 1) * 2^-24 in (0, 1].
 */
const PHILOX_M0 = 0xd2511f53;
const PHILOX_M1 = 0xcd9e8d57;
const PHILOX_W0 = 0x9e3779b9;
const PHILOX_W1 = 0xbb67ae85;

/** High 32 bits of the 64-bit product of two u32 (the low half is Math.imul). */
function mulHigh32(a: number, b: number): number {
  const aLow = a & 0xffff;
  const aHigh = a >>> 16;
  const bLow = b & 0xffff;
  const bHigh = b >>> 16;
  const lowLow = aLow * bLow;
  const lowHigh = aLow * bHigh;
  const highLow = aHigh * bLow;
  const cross = (lowLow >>> 16) + (lowHigh & 0xffff) + (highLow & 0xffff);
  return (aHigh * bHigh + (lowHigh >>> 16) + (highLow >>> 16) + Math.floor(cross / 65536)) >>> 0;
}

/** Philox4x32-10 of one 128-bit counter under a 64-bit key; writes four u32 words into `out`. */
export function philox4x32(counter: readonly number[], key: readonly number[], out: Uint32Array): void {
  let c0 = counter[0] >>> 0,
    c1 = counter[1] >>> 0,
    c2 = counter[2] >>> 0,
    c3 = counter[3] >>> 0;
  let k0 = key[0] >>> 0,
    k1 = key[1] >>> 0;
  for (let round = 0; round < 10; round++) {
    const high0 = mulHigh32(PHILOX_M0, c0);
    const low0 = Math.imul(PHILOX_M0, c0) >>> 0;
    const high1 = mulHigh32(PHILOX_M1, c2);
    const low1 = Math.imul(PHILOX_M1, c2) >>> 0;
    c0 = (high1 ^ c1 ^ k0) >>> 0;
    c1 = low1;
    c2 = (high0 ^ c3 ^ k1) >>> 0;
    c3 = low0;
    k0 = (k0 + PHILOX_W0) >>> 0;
    k1 = (k1 + PHILOX_W1) >>> 0;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

function keyOf(seed: number): [number, number] {
  if (!Number.isSafeInteger(seed) || seed < 0)
    throw new RangeError(`random seed must be a non-negative safe integer, got ${seed}`);
  return [seed % 2 ** 32, Math.floor(seed / 2 ** 32)];
}

function counterOf(block: number): [number, number, number, number] {
  return [block % 2 ** 32, Math.floor(block / 2 ** 32), 0, 0];
}

/** Fill `out` with uniform [low, high) values of stream (seed) starting at element `offset`. */
export function philoxUniform(out: Float32Array | Float64Array, seed: number, offset: number, low = 0, high = 1): void {
  const key = keyOf(seed);
  const words = new Uint32Array(4);
  let cachedBlock = -1;
  for (let i = 0; i < out.length; i++) {
    const element = offset + i;
    const block = Math.floor(element / 4);
    if (block !== cachedBlock) {
      philox4x32(counterOf(block), key, words);
      cachedBlock = block;
    }
    const unit = (words[element % 4] >>> 8) * 2 ** -24;
    out[i] = Math.fround(low + (high - low) * unit);
  }
}

/** Fill `out` with normal(mean, std) values of stream (seed) starting at element `offset`. */
export function philoxNormal(out: Float32Array | Float64Array, seed: number, offset: number, mean = 0, std = 1): void {
  const key = keyOf(seed);
  const words = new Uint32Array(4);
  for (let i = 0; i < out.length; i++) {
    philox4x32(counterOf(offset + i), key, words);
    const u1 = ((words[0] >>> 8) + 1) * 2 ** -24;
    const u2 = (words[1] >>> 8) * 2 ** -24;
    const z = Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
    out[i] = Math.fround(mean + std * z);
  }
}
