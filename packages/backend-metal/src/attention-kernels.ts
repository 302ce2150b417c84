/**
 * Argument checks of the flash-attention kernels in TypeScript (the addon checks again in C++):
 * q [B, Hq, Tq, D], k = v = [B, Hkv, Tk, D] of one float dtype with Hkv ≥ 1 dividing Hq; the
 * optional mask an f32 view of shape [B, Hq, Tq, Tk] with non-negative strides; lse f32
 * [B, Hq, Tq]; outputs shaped like their inputs; params { scale finite, causal boolean }; sizes
 * the kernels can index. The head-dimension limit (128) is not an error here: MetalBackend
 * routes larger heads to core's composition instead.
 */
import { DTypeError, InvalidArgumentError, ShapeError, type AttentionParams, type StridedView, type TensorRef } from '@kiln/core';
import { checkTensor, expectDType, expectFloat, expectShape, formatShape, type CheckedTensor } from './validate.js';

/** Largest head dimension of the native flash kernels (KILN_ATTENTION_MAX_HEAD_DIM in native/kernels/kiln_metal_args_attention.h). */
export const FLASH_ATTENTION_MAX_HEAD_DIM = 128;
/** Longest Tq / Tk the kernels index (2³⁰). */
export const FLASH_ATTENTION_MAX_LENGTH = 2 ** 30;
/** Rows per threadgroup of the kernels (the 1-D grid B · H · ⌈T / 32⌉ must stay below 2³¹). */
const BLOCK_ROWS = 32;
const MAX_THREADGROUPS = 2 ** 31 - 1;

/** Validated q, k, v, mask and params of one attention call. */
export interface CheckedAttention {
  /** q. */
  q: CheckedTensor;
  /** k. */
  k: CheckedTensor;
  /** v. */
  v: CheckedTensor;
  /** The mask view, or null. */
  mask: CheckedTensor | null;
  /** Plain copy of the params (scale, causal). */
  params: { scale: number; causal: boolean };
  /** D. */
  headDim: number;
  /** [B, Hq, Tq], the shape of lse. */
  rowShape: readonly number[];
}

/** Checks q, k, v, mask and params of `kernel` (see the file header). */
export function checkAttentionInputs(
  owner: object, kernel: string, q: TensorRef, k: TensorRef, v: TensorRef, mask: StridedView | null, params: AttentionParams,
): CheckedAttention {
  const query = checkTensor(q, owner, kernel, 'q', false);
  const key = checkTensor(k, owner, kernel, 'k', false);
  const value = checkTensor(v, owner, kernel, 'v', false);
  expectFloat(query, kernel, 'q');
  expectDType(key, query.dtype, kernel, 'k');
  expectDType(value, query.dtype, kernel, 'v');
  if (query.shape.length !== 4) throw new ShapeError(`metal backend: ${kernel}: q must be [B, Hq, Tq, D], got ${formatShape(query.shape)}`);
  if (key.shape.length !== 4) throw new ShapeError(`metal backend: ${kernel}: k must be [B, Hkv, Tk, D], got ${formatShape(key.shape)}`);
  expectShape(value, key.shape, kernel, 'v');
  const [batch, headsQ, lengthQ, headDim] = query.shape;
  const [, headsKV, lengthK] = key.shape;
  const shapes = `q ${formatShape(query.shape)}, k ${formatShape(key.shape)}`;
  if (key.shape[0] !== batch || key.shape[3] !== headDim) throw new ShapeError(`metal backend: ${kernel}: batch and head dim of q must match k and v; got ${shapes}`);
  if (headsKV === 0 || headsQ % headsKV !== 0) {
    throw new ShapeError(`metal backend: ${kernel}: query heads (${headsQ}) must be a multiple of key/value heads (${headsKV}, at least 1); got ${shapes}`, {
      hint: 'For grouped-query attention, n_head must be divisible by n_kv_head.',
    });
  }
  for (const [name, length] of [['Tq', lengthQ], ['Tk', lengthK]] as const) {
    if (length > FLASH_ATTENTION_MAX_LENGTH) {
      throw new InvalidArgumentError(`metal backend: ${kernel}: ${name} = ${length} exceeds the flash-attention kernels' limit of 2^30 positions; got ${shapes}`);
    }
  }
  const threadgroups = Math.max(Math.ceil(lengthQ / BLOCK_ROWS) * batch * headsQ, Math.ceil(lengthK / BLOCK_ROWS) * batch * headsKV);
  if (threadgroups > MAX_THREADGROUPS) {
    throw new InvalidArgumentError(`metal backend: ${kernel}: needs more than 2^31 - 1 threadgroups (B · H · ⌈T / 32⌉); got ${shapes}`, {
      hint: 'Split the batch into several calls.',
    });
  }
  let checkedMask: CheckedTensor | null = null;
  if (mask !== null && mask !== undefined) {
    checkedMask = checkTensor(mask, owner, kernel, 'mask', true);
    if (checkedMask.dtype !== 'f32') throw new DTypeError(`metal backend: ${kernel}: mask must be f32, got ${checkedMask.dtype}`, { hint: 'Cast the mask to f32.' });
    expectShape(checkedMask, [batch, headsQ, lengthQ, lengthK], kernel, 'mask (a view broadcast to [B, Hq, Tq, Tk])');
    if ('strides' in mask && mask.strides.some((stride) => stride < 0)) {
      throw new InvalidArgumentError(`metal backend: ${kernel}: mask strides must be non-negative, got [${mask.strides.join(', ')}]`);
    }
  }
  if (typeof params !== 'object' || params === null) throw new InvalidArgumentError(`metal backend: ${kernel}: params must be an object { scale, causal }`);
  const { scale, causal } = params;
  if (typeof scale !== 'number' || !Number.isFinite(scale)) throw new InvalidArgumentError(`metal backend: ${kernel}: params.scale must be a finite number, got ${String(scale)}`);
  if (typeof causal !== 'boolean') throw new InvalidArgumentError(`metal backend: ${kernel}: params.causal must be a boolean, got ${String(causal)}`);
  return { q: query, k: key, v: value, mask: checkedMask, params: { scale, causal }, headDim, rowShape: [batch, headsQ, lengthQ] };
}

/** Checks an output (or dOut) of `kernel` against the dtype and shape of `like`. */
export function checkLike(ref: TensorRef, like: CheckedTensor, owner: object, kernel: string, role: string): CheckedTensor {
  const tensor = checkTensor(ref, owner, kernel, role, false);
  expectDType(tensor, like.dtype, kernel, role);
  expectShape(tensor, like.shape, kernel, role);
  return tensor;
}

/** Checks lse: f32 [B, Hq, Tq]. */
export function checkLse(ref: TensorRef, call: CheckedAttention, owner: object, kernel: string): CheckedTensor {
  const lse = checkTensor(ref, owner, kernel, 'lse', false);
  expectDType(lse, 'f32', kernel, 'lse');
  expectShape(lse, call.rowShape, kernel, 'lse');
  return lse;
}
