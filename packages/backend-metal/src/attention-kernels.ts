/**
 * Argument checks of the Metal flash-attention kernels: core's checks (@kiln/core/native-backend:
 * shapes, dtypes, mask, params, grid size) with Metal's launch grid (32 query rows per
 * threadgroup) and mask views with non-negative strides. The head-dimension limit (128) is not an
 * error here: MetalBackend routes larger heads to core's composition instead.
 */
import type { AttentionParams, StridedView, TensorRef } from '@kiln/core';
import {
  checkAttentionInputs as checkInputs, checkAttentionLike, checkAttentionLse, type AttentionGrid, type CheckedAttention,
} from '@kiln/core/native-backend';
import { metalChecks, type CheckedTensor } from './validate.js';

export type { CheckedAttention };

/** Largest head dimension of the native flash kernels (KILN_ATTENTION_MAX_HEAD_DIM in native/kernels/kiln_metal_args_attention.h). */
export const FLASH_ATTENTION_MAX_HEAD_DIM = 128;

/** Rows per threadgroup of the kernels (the 1-D grid B · H · ⌈T / 32⌉ must stay below 2³¹); the kernels walk masks forwards only. */
const GRID: AttentionGrid = { blockRows: 32, blockName: 'threadgroups', nonNegativeMaskStrides: true };

/** Checks q, k, v, mask and params of `kernel`. */
export function checkAttentionInputs(
  owner: object, kernel: string, q: TensorRef, k: TensorRef, v: TensorRef, mask: StridedView | null, params: AttentionParams,
): CheckedAttention {
  return checkInputs(metalChecks, GRID, owner, kernel, q, k, v, mask, params);
}

/** Checks an output (or dOut) of `kernel` against the dtype and shape of `like`. */
export function checkLike(ref: TensorRef, like: CheckedTensor, owner: object, kernel: string, role: string): CheckedTensor {
  return checkAttentionLike(metalChecks, ref, like, owner, kernel, role);
}

/** Checks lse: f32 [B, Hq, Tq]. */
export function checkLse(ref: TensorRef, call: CheckedAttention, owner: object, kernel: string): CheckedTensor {
  return checkAttentionLse(metalChecks, ref, call, owner, kernel);
}
