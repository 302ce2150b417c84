/**
 * Argument checks of flash-attention kernels in TypeScript (the addon checks again): q
 * [B, Hq, Tq, D], k = v = [B, Hkv, Tk, D] of one float dtype with Hkv ≥ 1 dividing Hq; the
 * optional mask an f32 view of shape [B, Hq, Tq, Tk]; lse f32 [B, Hq, Tq]; outputs shaped like
 * their inputs; params { scale finite, causal boolean }; Tq, Tk at most 2³⁰; a launch grid of
 * B · H · ⌈T / rows per block⌉ blocks below 2³¹. A head-dimension limit is the backend's to route.
 * With params.layout 'tokens-major' (accepted only when the backend lists it) q is [B, Tq, Hq, D]
 * and k = v = [B, Tk, Hkv, D]; lse and the mask keep their logical shapes.
 */
import type { AttentionLayout, AttentionParams, StridedView, TensorRef } from '../backend/kernel-backend.js';
import { DTypeError, InvalidArgumentError, ShapeError, formatShape } from '../index.js';
import type { CheckedTensor, NativeArgumentChecks } from './argument-checks.js';

/** Longest Tq / Tk the checks accept (2³⁰). */
export const FLASH_ATTENTION_MAX_LENGTH = 2 ** 30;
const MAX_GRID_BLOCKS = 2 ** 31 - 1;

/** How a backend's attention kernels are launched, as the checks need it. */
export interface AttentionGrid {
  /** Query/key rows per block of the kernels (the grid is B · H · ⌈T / blockRows⌉ blocks). */
  blockRows: number;
  /** What messages call a block: 'thread blocks' (CUDA), 'threadgroups' (Metal). */
  blockName: string;
  /** Reject mask views with a negative stride (kernels that cannot walk backwards); default false. */
  nonNegativeMaskStrides?: boolean;
}

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
  /** Plain copy of the params (scale, causal, and layout when tokens-major). */
  params: AttentionParams;
  /** D. */
  headDim: number;
  /** [B, Hq, Tq], the shape of lse. */
  rowShape: readonly number[];
}

/** The layout params asks for, checked against the layouts the backend's kernels read. */
function checkLayout(prefix: string, params: AttentionParams, layouts: readonly AttentionLayout[]): AttentionLayout {
  if (typeof params !== 'object' || params === null)
    throw new InvalidArgumentError(`${prefix} params must be an object { scale, causal, layout? }`);
  const layout = params.layout ?? 'heads-major';
  if (layout !== 'heads-major' && layout !== 'tokens-major') {
    throw new InvalidArgumentError(
      `${prefix} params.layout must be 'heads-major' or 'tokens-major', got ${String(layout)}`,
    );
  }
  if (!layouts.includes(layout)) {
    throw new InvalidArgumentError(
      `${prefix} this backend's attention kernels do not read layout '${layout}' (capabilities.attentionLayouts: ${layouts.join(', ')})`,
      {
        hint: "Call core's attention op, which permutes to a layout the backend reads.",
      },
    );
  }
  return layout;
}

/** Checks q, k, v, mask and params of `kernel` (see the file header); `layouts` are the layouts the backend's kernels read. */
export function checkAttentionInputs(
  checks: NativeArgumentChecks,
  grid: AttentionGrid,
  owner: object,
  kernel: string,
  q: TensorRef,
  k: TensorRef,
  v: TensorRef,
  mask: StridedView | null,
  params: AttentionParams,
  layouts: readonly AttentionLayout[],
): CheckedAttention {
  const prefix = `${checks.backend} backend: ${kernel}:`;
  const layout = checkLayout(prefix, params, layouts);
  const tokensMajor = layout === 'tokens-major';
  const query = checks.checkTensor(q, owner, kernel, 'q', false);
  const key = checks.checkTensor(k, owner, kernel, 'k', false);
  const value = checks.checkTensor(v, owner, kernel, 'v', false);
  checks.expectFloat(query, kernel, 'q');
  checks.expectDType(key, query.dtype, kernel, 'k');
  checks.expectDType(value, query.dtype, kernel, 'v');
  if (query.shape.length !== 4)
    throw new ShapeError(
      `${prefix} q must be ${tokensMajor ? '[B, Tq, Hq, D] (tokens-major)' : '[B, Hq, Tq, D]'}, got ${formatShape(query.shape)}`,
    );
  if (key.shape.length !== 4)
    throw new ShapeError(
      `${prefix} k must be ${tokensMajor ? '[B, Tk, Hkv, D] (tokens-major)' : '[B, Hkv, Tk, D]'}, got ${formatShape(key.shape)}`,
    );
  checks.expectShape(value, key.shape, kernel, 'v');
  // Logical [B, H, T, D] sizes whatever the layout.
  const logical = (shape: readonly number[]): readonly number[] =>
    tokensMajor ? [shape[0], shape[2], shape[1], shape[3]] : shape;
  const [batch, headsQ, lengthQ, headDim] = logical(query.shape);
  const [, headsKV, lengthK] = logical(key.shape);
  const shapes = `q ${formatShape(query.shape)}, k ${formatShape(key.shape)}${tokensMajor ? ' (tokens-major)' : ''}`;
  if (key.shape[0] !== batch || key.shape[3] !== headDim)
    throw new ShapeError(`${prefix} batch and head dim of q must match k and v; got ${shapes}`);
  if (headsKV === 0 || headsQ % headsKV !== 0) {
    throw new ShapeError(
      `${prefix} query heads (${headsQ}) must be a multiple of key/value heads (${headsKV}, at least 1); got ${shapes}`,
      {
        hint: 'For grouped-query attention, n_head must be divisible by n_kv_head.',
      },
    );
  }
  for (const [name, length] of [
    ['Tq', lengthQ],
    ['Tk', lengthK],
  ] as const) {
    if (length > FLASH_ATTENTION_MAX_LENGTH) {
      throw new InvalidArgumentError(
        `${prefix} ${name} = ${length} exceeds the flash-attention kernels' limit of 2^30 positions; got ${shapes}`,
      );
    }
  }
  const blocks = Math.max(
    Math.ceil(lengthQ / grid.blockRows) * batch * headsQ,
    Math.ceil(lengthK / grid.blockRows) * batch * headsKV,
  );
  if (blocks > MAX_GRID_BLOCKS) {
    throw new InvalidArgumentError(
      `${prefix} needs more than 2^31 - 1 ${grid.blockName} (B · H · ⌈T / ${grid.blockRows}⌉); got ${shapes}`,
      {
        hint: 'Split the batch into several calls.',
      },
    );
  }
  let checkedMask: CheckedTensor | null = null;
  if (mask !== null && mask !== undefined) {
    checkedMask = checks.checkTensor(mask, owner, kernel, 'mask', true);
    if (checkedMask.dtype !== 'f32')
      throw new DTypeError(`${prefix} mask must be f32, got ${checkedMask.dtype}`, { hint: 'Cast the mask to f32.' });
    checks.expectShape(
      checkedMask,
      [batch, headsQ, lengthQ, lengthK],
      kernel,
      'mask (a view broadcast to [B, Hq, Tq, Tk])',
    );
    if (grid.nonNegativeMaskStrides && 'strides' in mask && mask.strides.some((stride) => stride < 0)) {
      throw new InvalidArgumentError(`${prefix} mask strides must be non-negative, got [${mask.strides.join(', ')}]`);
    }
  }
  const { scale, causal } = params;
  if (typeof scale !== 'number' || !Number.isFinite(scale))
    throw new InvalidArgumentError(`${prefix} params.scale must be a finite number, got ${String(scale)}`);
  if (typeof causal !== 'boolean')
    throw new InvalidArgumentError(`${prefix} params.causal must be a boolean, got ${String(causal)}`);
  const checkedParams: AttentionParams = tokensMajor ? { scale, causal, layout } : { scale, causal };
  return {
    q: query,
    k: key,
    v: value,
    mask: checkedMask,
    params: checkedParams,
    headDim,
    rowShape: [batch, headsQ, lengthQ],
  };
}

/** Checks an output (or dOut) of `kernel` against the dtype and shape of `like`. */
export function checkAttentionLike(
  checks: NativeArgumentChecks,
  ref: TensorRef,
  like: CheckedTensor,
  owner: object,
  kernel: string,
  role: string,
): CheckedTensor {
  const tensor = checks.checkTensor(ref, owner, kernel, role, false);
  checks.expectDType(tensor, like.dtype, kernel, role);
  checks.expectShape(tensor, like.shape, kernel, role);
  return tensor;
}

/** Checks lse: f32 [B, Hq, Tq]. */
export function checkAttentionLse(
  checks: NativeArgumentChecks,
  ref: TensorRef,
  call: CheckedAttention,
  owner: object,
  kernel: string,
): CheckedTensor {
  const lse = checks.checkTensor(ref, owner, kernel, 'lse', false);
  checks.expectDType(lse, 'f32', kernel, 'lse');
  checks.expectShape(lse, call.rowShape, kernel, 'lse');
  return lse;
}
