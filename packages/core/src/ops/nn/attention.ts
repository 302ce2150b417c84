/**
 * Scaled-dot-product attention: causal, additive mask, grouped-query heads, Tq ≠ Tk (KV cache),
 * in either AttentionLayout. This op is the one place that decides how a tokens-major call runs:
 * on the backend's kernels when capabilities.attentionLayouts lists 'tokens-major', else by
 * permuting q, k, v to heads-major and the result back (the copies the layout exists to avoid).
 * (Core's composition reads both layouts too, for native backends that route some calls to it.)
 */
import type { AttentionLayout, AttentionParams, KernelBackend, StridedView } from '../../backend/kernel-backend.js';
import { InvalidArgumentError, ShapeError } from '../../errors.js';
import { allocateTensor, assertFloat, assertSameDType, commonBackend } from '../../engine/dispatch.js';
import { recordOp } from '../../autograd/record.js';
import { broadcastShapes, broadcastStrides } from '../../tensor/shape.js';
import type { Tensor } from '../../tensor/tensor.js';
import { castTo } from '../kernel-calls.js';
import { permute } from '../shape-ops.js';
import { viewOf } from '../views.js';
import { inDType, resolveFused, toDType } from './fused-call.js';
import { checkOptions, checkTensor, option } from '../../validate.js';

/** Options of attention. */
export interface AttentionOptions {
  /** Mask keys after each query (aligned to the end when Tq < Tk). Default false. */
  causal?: boolean;
  /** Score multiplier, default 1/sqrt(headDim). */
  scale?: number;
  /** Additive mask broadcastable to [B, Hq, Tq, Tk] (e.g. −Infinity on padding); no gradient. */
  mask?: Tensor;
  /** Layout of q, k, v and the result: 'heads-major' [B, H, T, D] (default) or 'tokens-major' [B, T, H, D]. */
  layout?: AttentionLayout;
}

const LAYOUTS: readonly AttentionLayout[] = ['heads-major', 'tokens-major'];
/** Swaps the head and token axes of a 4-D tensor (its own inverse). */
const SWAP_HEADS_AND_TOKENS = [0, 2, 1, 3];

/**
 * True when `backend`'s attention kernels read `layout`, so core runs a call in it without
 * permuting. A backend without an attention kernel gets false for tokens-major: core's composition
 * would copy to heads-major itself, more often than core's permutes (its backward copies again).
 */
export function backendReadsAttentionLayout(backend: KernelBackend, layout: AttentionLayout): boolean {
  if (layout === 'heads-major') return true;
  if (backend.attention === undefined) return false;
  return backend.capabilities.attentionLayouts?.includes(layout) ?? false;
}

function checkAttention(q: Tensor, k: Tensor, v: Tensor, layout: AttentionLayout): void {
  checkTensor('attention', 'q', q);
  checkTensor('attention', 'k', k);
  checkTensor('attention', 'v', v);
  commonBackend('attention', [q, k, v]);
  assertFloat('attention', q);
  assertSameDType('attention', [q, k, v]);
  const shapes = `q ${q.describe()}, k ${k.describe()}, v ${v.describe()}`;
  const tokensMajor = layout === 'tokens-major';
  if (q.rank !== 4 || k.rank !== 4 || v.rank !== 4) {
    throw new ShapeError(
      `attention: q, k and v must be ${tokensMajor ? '[batch, time, heads, headDim] (tokens-major)' : '[batch, heads, time, headDim]'}; got ${shapes}`,
    );
  }
  if (k.shape.some((dimension, axis) => dimension !== v.shape[axis]))
    throw new ShapeError(`attention: k and v must have the same shape; got ${shapes}`);
  if (q.shape[0] !== k.shape[0] || q.shape[3] !== k.shape[3]) {
    throw new ShapeError(`attention: batch and headDim of q must match k and v; got ${shapes}`);
  }
  const headAxis = tokensMajor ? 2 : 1;
  if (k.shape[headAxis] === 0 || q.shape[headAxis] % k.shape[headAxis] !== 0) {
    throw new ShapeError(
      `attention: query heads (${q.shape[headAxis]}) must be a multiple of key/value heads (${k.shape[headAxis]}); got ${shapes}${tokensMajor ? ' (tokens-major: heads are axis 2)' : ''}`,
      {
        hint: 'For grouped-query attention, n_head must be divisible by n_kv_head.',
      },
    );
  }
}

/** The mask as an f32 view broadcast to the logical score shape [B, Hq, Tq, Tk] (cast to f32 when it is not). */
function maskView(
  mask: Tensor | undefined,
  q: Tensor,
  target: readonly number[],
): { view: StridedView | null; owned: Tensor | null } {
  if (!mask) return { view: null, owned: null };
  commonBackend('attention', [q, mask]);
  if (
    mask.rank > 4 ||
    broadcastShapes(mask.shape, target, 'attention mask').some((dimension, axis) => dimension !== target[axis])
  ) {
    throw new ShapeError(
      `attention: mask ${mask.describe()} does not broadcast to [B, Hq, Tq, Tk] = [${target.join(', ')}]`,
    );
  }
  const owned = mask.dtype === 'f32' ? null : castTo(mask, 'f32');
  const source = owned ?? mask;
  return { view: viewOf(source, target, broadcastStrides(source.shape, target)), owned };
}

/** Tokens-major attention on a backend that reads only heads-major: permute in, attend, permute the result back. */
function permutedAttention(q: Tensor, k: Tensor, v: Tensor, options: AttentionOptions): Tensor {
  const [headsQ, headsK, headsV] = [q, k, v].map((x) => permute(x, SWAP_HEADS_AND_TOKENS));
  const headsMajor = attention(headsQ, headsK, headsV, { ...options, layout: 'heads-major' });
  const result = permute(headsMajor, SWAP_HEADS_AND_TOKENS);
  for (const intermediate of [headsQ, headsK, headsV, headsMajor]) intermediate.dispose();
  return result;
}

/** softmax(scale · q·kᵀ + mask) · v per head; the backend's flash kernel when it has one. */
export function attention(q: Tensor, k: Tensor, v: Tensor, options: AttentionOptions = {}): Tensor {
  const checked = checkOptions<AttentionOptions>('attention', 'options', options, {
    causal: option.boolean,
    scale: option.finite,
    mask: option.tensor,
    layout: option.choice(LAYOUTS),
  });
  const layout = checked.layout ?? 'heads-major';
  checkAttention(q, k, v, layout);
  if (!backendReadsAttentionLayout(q.backend, layout)) return permutedAttention(q, k, v, checked);
  // Logical sizes [B, H, T, D] whatever the layout.
  const [queryShape, keyShape] = [q, k].map((x) =>
    layout === 'heads-major' ? x.shape : SWAP_HEADS_AND_TOKENS.map((axis) => x.shape[axis]),
  );
  const causal = checked.causal ?? false;
  const scale = checked.scale ?? 1 / Math.sqrt(q.shape[3]);
  if (!Number.isFinite(scale)) throw new InvalidArgumentError(`attention: scale must be finite, got ${scale}`);
  const scoreShape = [queryShape[0], queryShape[1], queryShape[2], keyShape[2]];
  const mask = maskView(options.mask, q, scoreShape);
  const params: AttentionParams = layout === 'heads-major' ? { scale, causal } : { scale, causal, layout };
  const { kernel, computeDType } = resolveFused(q.backend, 'attention', q.dtype);
  const inputs = inDType([q, k, v], computeDType);
  const output = allocateTensor(q.backend, q.shape, computeDType);
  const lse = allocateTensor(q.backend, queryShape.slice(0, 3), 'f32');
  if (output.size > 0)
    kernel(
      inputs.tensors[0].ref(),
      inputs.tensors[1].ref(),
      inputs.tensors[2].ref(),
      mask.view,
      output.ref(),
      lse.ref(),
      params,
    );
  inputs.release();
  const result = toDType(output, q.dtype);
  const maskTensor = mask.owned ?? options.mask;
  const saved = [q, k, v, result, lse, ...(maskTensor ? [maskTensor] : [])];
  recordOp('attention', [q, k, v], result, saved, (g, [savedQ, savedK, savedV, savedOut, savedLse, savedMask]) => {
    const backward = resolveFused(savedQ.backend, 'attentionBackward', savedQ.dtype);
    const operands = inDType([savedQ, savedK, savedV, savedOut, g], backward.computeDType);
    const [cq, ck, cv, cOut, cG] = operands.tensors;
    const dq = allocateTensor(savedQ.backend, savedQ.shape, backward.computeDType);
    const dk = allocateTensor(savedQ.backend, savedK.shape, backward.computeDType);
    const dv = allocateTensor(savedQ.backend, savedV.shape, backward.computeDType);
    const backwardMask = savedMask
      ? viewOf(savedMask, scoreShape, broadcastStrides(savedMask.shape, scoreShape))
      : null;
    if (dk.size > 0) {
      if (dq.size > 0) {
        backward.kernel(
          cq.ref(),
          ck.ref(),
          cv.ref(),
          backwardMask,
          cOut.ref(),
          savedLse.ref(),
          cG.ref(),
          dq.ref(),
          dk.ref(),
          dv.ref(),
          params,
        );
      } else {
        savedQ.backend.fill(dk.ref(), 0);
        savedQ.backend.fill(dv.ref(), 0);
      }
    } else if (dq.size > 0) {
      savedQ.backend.fill(dq.ref(), 0);
    }
    operands.release();
    return [toDType(dq, savedQ.dtype), toDType(dk, savedQ.dtype), toDType(dv, savedQ.dtype)];
  });
  lse.dispose();
  mask.owned?.dispose();
  return result;
}
