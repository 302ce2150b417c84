/**
 * Causal self-attention over [B, H, T, hd] heads, two ways: 'flash' calls core's fused attention
 * (native on backends that have it, composed otherwise); 'naive' spells out
 * softmax(q·kᵀ·scale + causal mask)·v with ops, repeating each key/value head for its group of
 * query heads (Hugging Face's repeat_kv: query head h reads kv head floor(h / group)).
 * Both align the causal mask to the end, so Tq < Tk (decoding with a KV cache) works; the KV
 * cache's decode step passes an explicit mask instead (maskedAttention), to attend over a
 * preallocated buffer of which only a prefix is filled.
 */
import {
  add,
  attention,
  cast,
  expand,
  matmul,
  mul,
  reshape,
  softmax,
  tensor,
  type DType,
  type KernelBackend,
  type Tensor,
} from '@kiln/core';

/** Which attention implementation a forward pass uses. */
export type AttentionKind = 'flash' | 'naive';

/** Additive [Tq, Tk] mask: 0 where query i may see key j (j ≤ i + Tk − Tq), −Infinity elsewhere. */
export function causalMask(queryLength: number, keyLength: number, dtype: DType, backend: KernelBackend): Tensor {
  const values = new Float32Array(queryLength * keyLength);
  const shift = keyLength - queryLength;
  for (let query = 0; query < queryLength; query++) {
    for (let key = query + shift + 1; key < keyLength; key++) values[query * keyLength + key] = -Infinity;
  }
  return tensor(values, [queryLength, keyLength], { dtype, backend });
}

/** [B, Hkv, T, hd] → [B, Hkv·group, T, hd], each kv head repeated for its adjacent query heads. */
export function repeatKvHeads(x: Tensor, group: number): Tensor {
  if (group === 1) return x;
  const [batch, kvHeads, length, width] = x.shape;
  const widened = expand(reshape(x, [batch, kvHeads, 1, length, width]), [batch, kvHeads, group, length, width]);
  return reshape(widened, [batch, kvHeads * group, length, width]);
}

/** softmax(q·kᵀ·scale + mask)·v composed from ops (scale default 1/√hd); the mask (broadcast to the scores) defaults to the causal one. */
export function naiveAttention(
  q: Tensor,
  k: Tensor,
  v: Tensor,
  mask?: Tensor,
  scale = 1 / Math.sqrt(q.shape[3]),
): Tensor {
  const group = q.shape[1] / k.shape[1];
  const keys = repeatKvHeads(k, group);
  const values = repeatKvHeads(v, group);
  const scores = mul(matmul(q, keys, { transposeB: true }), scale);
  const additive =
    mask === undefined
      ? causalMask(q.shape[2], k.shape[2], scores.dtype, q.backend)
      : mask.dtype === scores.dtype
        ? mask
        : cast(mask, scores.dtype);
  const probabilities = softmax(add(scores, additive), -1);
  return matmul(probabilities, values);
}

/** Causal attention of q [B, H, Tq, hd] over k, v [B, Hkv, Tk, hd] with the chosen implementation (scale default 1/√hd). */
export function causalAttention(
  q: Tensor,
  k: Tensor,
  v: Tensor,
  kind: AttentionKind,
  scale = 1 / Math.sqrt(q.shape[3]),
): Tensor {
  return kind === 'flash' ? attention(q, k, v, { causal: true, scale }) : naiveAttention(q, k, v, undefined, scale);
}

/**
 * Flash causal attention in the projections' own layout: q [B, Tq, H, hd], k, v [B, Tk, Hkv, hd],
 * result [B, Tq, H, hd] (core runs it without permute copies where the backend reads tokens-major).
 */
export function tokensMajorCausalAttention(q: Tensor, k: Tensor, v: Tensor, scale: number): Tensor {
  return attention(q, k, v, { causal: true, scale, layout: 'tokens-major' });
}

/** Attention of q over k, v with an additive mask (broadcast to [B, H, Tq, Tk]; −Infinity hides a key) instead of the causal rule. */
export function maskedAttention(
  q: Tensor,
  k: Tensor,
  v: Tensor,
  mask: Tensor,
  kind: AttentionKind,
  scale = 1 / Math.sqrt(q.shape[3]),
): Tensor {
  return kind === 'flash' ? attention(q, k, v, { mask, scale }) : naiveAttention(q, k, v, mask, scale);
}
