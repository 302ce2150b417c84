/**
 * Argument checks of the CUDA flash-attention kernels: core's checks (@kiln/core/native-backend:
 * shapes, dtypes, mask, params, grid size) with CUDA's launch grid (64 query rows per thread
 * block). The head-dimension limit (128) is not an error here: CudaBackend routes larger heads to
 * core's composition instead.
 */
import type { AttentionParams, StridedView, TensorRef } from '@kiln/core';
import {
  checkAttentionInputs as checkInputs, checkAttentionLike, checkAttentionLse, type AttentionGrid, type CheckedAttention,
} from '@kiln/core/native-backend';
import { cudaChecks, type CheckedTensor } from './validate.js';

export type { CheckedAttention };

/** Largest head dimension of the native flash kernels (kAttentionMaxHeadDim in kernels/attention_common.cuh). */
export const FLASH_ATTENTION_MAX_HEAD_DIM = 128;

/** Rows per thread block of the kernels (grid size = B · H · ⌈T / 64⌉ must stay below 2³¹). */
const GRID: AttentionGrid = { blockRows: 64, blockName: 'thread blocks' };

/** Checks q, k, v, mask and params of `kernel`. */
export function checkAttentionInputs(
  owner: object, kernel: string, q: TensorRef, k: TensorRef, v: TensorRef, mask: StridedView | null, params: AttentionParams,
): CheckedAttention {
  return checkInputs(cudaChecks, GRID, owner, kernel, q, k, v, mask, params);
}

/** Checks an output (or dOut) of `kernel` against the dtype and shape of `like`. */
export function checkLike(ref: TensorRef, like: CheckedTensor, owner: object, kernel: string, role: string): CheckedTensor {
  return checkAttentionLike(cudaChecks, ref, like, owner, kernel, role);
}

/** Checks lse: f32 [B, Hq, Tq]. */
export function checkLse(ref: TensorRef, call: CheckedAttention, owner: object, kernel: string): CheckedTensor {
  return checkAttentionLse(cudaChecks, ref, call, owner, kernel);
}
