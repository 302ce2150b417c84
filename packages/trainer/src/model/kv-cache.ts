/**
 * Keys and values of the tokens already seen, per layer, in preallocated buffers
 * [B, Hkv, capacity, hd] (compute dtype, keys after rope) that new tokens are written into in
 * place (core's writeSlice: a strided copy of just the new rows). When a write would pass the
 * capacity, every layer's buffer is reallocated at twice the size (or what is needed) and the
 * old rows copied once, so growth costs O(1) amortised per token.
 *
 * What attention sees:
 *  - Decoding one token (the hot path) attends over the whole buffer with an additive mask row
 *    [1, capacity] that is 0 for the cached positions and the new one and −Infinity after. The
 *    mask lives in the cache and is updated in place (one 0 written per token), so a decode step
 *    copies and allocates the same amount at position 8 as at position 8000: per-token cost is
 *    flat apart from attention itself, which reads `capacity` keys. Masked keys get probability
 *    exactly 0 (and the unused rows hold zeros, never NaN), so the result equals attention over
 *    the valid prefix only.
 *  - A chunk of several tokens (prefill) attends causally over a dense copy of the valid prefix
 *    (one copy per chunk; the chunk's attention is quadratic anyway), which needs no
 *    [chunk, capacity] mask.
 * The owner disposes the cache; reset() frees the buffers and starts again from position 0.
 */
import {
  DTypeError,
  full,
  InvalidArgumentError,
  keep,
  slice,
  tensor,
  writeSlice,
  zeros,
  type Tensor,
} from '@kiln/core';

/** One layer's cached keys and values (null before the first token). */
export interface LayerCache {
  /** Keys [B, Hkv, capacity, hd], rope already applied; rows at and after the cache length are unused. */
  key: Tensor | null;
  /** Values [B, Hkv, capacity, hd]; rows at and after the cache length are unused. */
  value: Tensor | null;
}

/** Options of a KV cache. */
export interface KvCacheOptions {
  /** Token slots to allocate at the first write (default: what that write needs, at least 16); the cache doubles when full. */
  capacity?: number;
}

/** What attention reads for the tokens just appended to one layer. */
export interface CachedAttentionInputs {
  /** Keys to attend over: the whole buffer (with `mask`) or the valid prefix (mask null). */
  key: Tensor;
  /** Values, the same length as key. */
  value: Tensor;
  /** Additive f32 mask [1, capacity] hiding the unused rows, or null: attend causally over exactly key/value. */
  mask: Tensor | null;
}

const MINIMUM_CAPACITY = 16;

/** The KV cache of one generation. */
export class KvCache implements Disposable {
  /** Per-layer keys and values. */
  readonly layers: LayerCache[];
  private readonly requestedCapacity: number;
  private slots = 0;
  private cachedLength = 0;
  /** [1, slots] f32: 0 for the first `visible` positions, −Infinity after. */
  private maskRow: Tensor | null = null;
  private visible = 0;

  /** An empty cache for a model with `layerCount` blocks. */
  constructor(layerCount: number, options: KvCacheOptions = {}) {
    const capacity = options.capacity ?? 0;
    if (!Number.isSafeInteger(capacity) || capacity < 0) {
      throw new InvalidArgumentError(`KvCache: capacity must be a whole number of tokens ≥ 0, got ${capacity}`);
    }
    this.layers = Array.from({ length: layerCount }, () => ({ key: null, value: null }));
    this.requestedCapacity = capacity;
  }

  /** Tokens held (the position of the next token). */
  get length(): number {
    return this.cachedLength;
  }

  /** Token slots allocated per layer (0 before the first write). */
  get capacity(): number {
    return this.slots;
  }

  /**
   * Writes the new keys/values [B, Hkv, Tnew, hd] of layer `index` at the current length (every
   * layer of one forward pass writes at the same position; advance() moves it afterwards) and
   * returns what attention over the cached and new tokens reads.
   */
  append(index: number, key: Tensor, value: Tensor): CachedAttentionInputs {
    const layer = this.layers[index];
    const count = key.shape[2];
    const start = this.cachedLength;
    this.ensureCapacity(layer, key, start + count);
    writeSlice(layer.key!, key, [0, 0, start, 0]);
    writeSlice(layer.value!, value, [0, 0, start, 0]);
    if (count !== 1) {
      const [batch, heads, , width] = key.shape;
      const prefix = [batch, heads, start + count, width];
      return {
        key: slice(layer.key!, [0, 0, 0, 0], prefix),
        value: slice(layer.value!, [0, 0, 0, 0], prefix),
        mask: null,
      };
    }
    return { key: layer.key!, value: layer.value!, mask: this.decodeMask(start + 1) };
  }

  /** Records that `count` more tokens were appended to every layer. */
  advance(count: number): void {
    this.cachedLength += count;
  }

  /** Empties the cache (frees its tensors); it can be filled again. */
  reset(): void {
    for (const layer of this.layers) {
      layer.key?.dispose();
      layer.value?.dispose();
      layer.key = null;
      layer.value = null;
    }
    this.maskRow?.dispose();
    this.maskRow = null;
    this.visible = 0;
    this.slots = 0;
    this.cachedLength = 0;
  }

  /** Frees every tensor. */
  dispose(): void {
    this.reset();
  }

  /** `using` support. */
  [Symbol.dispose](): void {
    this.dispose();
  }

  /** Makes `layer` hold at least `needed` slots, in the dtype and shape of `key` (checked against what it holds). */
  private ensureCapacity(layer: LayerCache, key: Tensor, needed: number): void {
    const held = layer.key;
    if (held !== null) {
      this.checkCompatible(held, key);
      if (held.shape[2] >= needed) return;
    }
    if (needed > this.slots) {
      this.slots = Math.max(needed, 2 * this.slots, this.slots === 0 ? this.requestedCapacity || MINIMUM_CAPACITY : 0);
    }
    const [batch, heads, , width] = key.shape;
    const grow = (old: Tensor | null): Tensor => {
      // Zeros, not uninitialised memory: masked rows must never hold NaN (0 · NaN would leak into the output).
      const buffer = keep(zeros([batch, heads, this.slots, width], { dtype: key.dtype, backend: key.backend }));
      if (old !== null) {
        writeSlice(buffer, old, [0, 0, 0, 0]);
        old.dispose();
      }
      return buffer;
    };
    layer.key = grow(layer.key);
    layer.value = grow(layer.value);
  }

  private checkCompatible(held: Tensor, key: Tensor): void {
    if (held.dtype !== key.dtype) {
      throw new DTypeError(
        `KvCache: the cache holds ${held.dtype} keys but this forward pass computes in ${key.dtype}`,
        {
          hint: 'Use one computeDType per cache, or reset() the cache before switching.',
        },
      );
    }
    if (held.shape[0] !== key.shape[0] || held.shape[1] !== key.shape[1] || held.shape[3] !== key.shape[3]) {
      throw new InvalidArgumentError(
        `KvCache: the cache holds keys ${held.describe()}, the new ones are ${key.describe()} (batch, heads and head size must match)`,
        {
          hint: 'Use one cache per batch of sequences, or reset() it first.',
        },
      );
    }
  }

  /** The mask row letting a query see positions [0, visible): rebuilt when the capacity changed, else extended in place. */
  private decodeMask(visible: number): Tensor {
    const backend = this.layers[0].key!.backend;
    if (this.maskRow === null || this.maskRow.shape[1] !== this.slots || visible < this.visible) {
      this.maskRow?.dispose();
      const values = new Float32Array(this.slots).fill(-Infinity);
      values.fill(0, 0, visible);
      this.maskRow = keep(tensor(values, [1, this.slots], { dtype: 'f32', backend }));
      this.visible = visible;
    } else if (visible > this.visible) {
      const opened = full([1, visible - this.visible], 0, { dtype: 'f32', backend });
      writeSlice(this.maskRow, opened, [0, this.visible]);
      opened.dispose();
      this.visible = visible;
    }
    return this.maskRow;
  }
}
