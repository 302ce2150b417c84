/**
 * Keys and values of the tokens already seen, per layer, each [B, Hkv, Tcache, hd] in the
 * compute dtype (keys after rope). The model appends to it in forwardCached; the owner disposes it.
 */
import { concat, keep, type Tensor } from '@kiln/core';

/** One layer's cached keys and values (null before the first token). */
export interface LayerCache {
  /** Keys [B, Hkv, Tcache, hd], rope already applied. */
  key: Tensor | null;
  /** Values [B, Hkv, Tcache, hd]. */
  value: Tensor | null;
}

/** The KV cache of one generation. */
export class KvCache implements Disposable {
  /** Per-layer keys and values. */
  readonly layers: LayerCache[];
  private cachedLength = 0;

  /** An empty cache for a model with `layerCount` blocks. */
  constructor(layerCount: number) {
    this.layers = Array.from({ length: layerCount }, () => ({ key: null, value: null }));
  }

  /** Tokens held (the position of the next token). */
  get length(): number {
    return this.cachedLength;
  }

  /** Appends new keys/values to layer `index` and returns the full ones (owned by the cache). */
  append(index: number, key: Tensor, value: Tensor): { key: Tensor; value: Tensor } {
    const layer = this.layers[index];
    const fullKey = layer.key ? concat([layer.key, key], 2) : key;
    const fullValue = layer.value ? concat([layer.value, value], 2) : value;
    // The cache outlives the tidy scope of the forward pass that produced these.
    keep(fullKey);
    keep(fullValue);
    if (layer.key && layer.key !== fullKey) layer.key.dispose();
    if (layer.value && layer.value !== fullValue) layer.value.dispose();
    layer.key = fullKey;
    layer.value = fullValue;
    return { key: fullKey, value: fullValue };
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
}
