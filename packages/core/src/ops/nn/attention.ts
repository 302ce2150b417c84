/** Scaled-dot-product attention: causal, additive mask, grouped-query heads, Tq ≠ Tk (KV cache). */
import type { StridedView } from '../../backend/kernel-backend.js';
import { InvalidArgumentError, ShapeError } from '../../errors.js';
import { allocateTensor, assertFloat, assertSameDType, commonBackend } from '../../engine/dispatch.js';
import { recordOp } from '../../autograd/record.js';
import { broadcastShapes, broadcastStrides } from '../../tensor/shape.js';
import type { Tensor } from '../../tensor/tensor.js';
import { castTo } from '../kernel-calls.js';
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
}

function checkAttention(q: Tensor, k: Tensor, v: Tensor): void {
  checkTensor('attention', 'q', q);
  checkTensor('attention', 'k', k);
  checkTensor('attention', 'v', v);
  commonBackend('attention', [q, k, v]);
  assertFloat('attention', q);
  assertSameDType('attention', [q, k, v]);
  const shapes = `q ${q.describe()}, k ${k.describe()}, v ${v.describe()}`;
  if (q.rank !== 4 || k.rank !== 4 || v.rank !== 4) {
    throw new ShapeError(`attention: q, k and v must be [batch, heads, time, headDim]; got ${shapes}`);
  }
  if (k.shape.some((dimension, axis) => dimension !== v.shape[axis])) throw new ShapeError(`attention: k and v must have the same shape; got ${shapes}`);
  if (q.shape[0] !== k.shape[0] || q.shape[3] !== k.shape[3]) {
    throw new ShapeError(`attention: batch and headDim of q must match k and v; got ${shapes}`);
  }
  if (k.shape[1] === 0 || q.shape[1] % k.shape[1] !== 0) {
    throw new ShapeError(`attention: query heads (${q.shape[1]}) must be a multiple of key/value heads (${k.shape[1]}); got ${shapes}`, {
      hint: 'For grouped-query attention, n_head must be divisible by n_kv_head.',
    });
  }
}

function maskView(mask: Tensor | undefined, q: Tensor, k: Tensor): { view: StridedView | null; owned: Tensor | null } {
  if (!mask) return { view: null, owned: null };
  commonBackend('attention', [q, mask]);
  const target = [q.shape[0], q.shape[1], q.shape[2], k.shape[2]];
  if (mask.rank > 4 || broadcastShapes(mask.shape, target, 'attention mask').some((dimension, axis) => dimension !== target[axis])) {
    throw new ShapeError(`attention: mask ${mask.describe()} does not broadcast to [B, Hq, Tq, Tk] = [${target.join(', ')}]`);
  }
  const owned = mask.dtype === 'f32' ? null : castTo(mask, 'f32');
  const source = owned ?? mask;
  return { view: viewOf(source, target, broadcastStrides(source.shape, target)), owned };
}

/** softmax(scale · q·kᵀ + mask) · v per head; the backend's flash kernel when it has one. */
export function attention(q: Tensor, k: Tensor, v: Tensor, options: AttentionOptions = {}): Tensor {
  checkAttention(q, k, v);
  const checked = checkOptions<AttentionOptions>('attention', 'options', options, { causal: option.boolean, scale: option.finite, mask: option.tensor });
  const causal = checked.causal ?? false;
  const scale = checked.scale ?? 1 / Math.sqrt(q.shape[3]);
  if (!Number.isFinite(scale)) throw new InvalidArgumentError(`attention: scale must be finite, got ${scale}`);
  const mask = maskView(options.mask, q, k);
  const params = { scale, causal };
  const { kernel, computeDType } = resolveFused(q.backend, 'attention', q.dtype);
  const inputs = inDType([q, k, v], computeDType);
  const output = allocateTensor(q.backend, q.shape, computeDType);
  const lse = allocateTensor(q.backend, q.shape.slice(0, 3), 'f32');
  if (output.size > 0) kernel(inputs.tensors[0].ref(), inputs.tensors[1].ref(), inputs.tensors[2].ref(), mask.view, output.ref(), lse.ref(), params);
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
      ? viewOf(savedMask, [savedQ.shape[0], savedQ.shape[1], savedQ.shape[2], savedK.shape[2]], broadcastStrides(savedMask.shape, [savedQ.shape[0], savedQ.shape[1], savedQ.shape[2], savedK.shape[2]]))
      : null;
    if (dk.size > 0) {
      if (dq.size > 0) {
        backward.kernel(cq.ref(), ck.ref(), cv.ref(), backwardMask, cOut.ref(), savedLse.ref(), cG.ref(), dq.ref(), dk.ref(), dv.ref(), params);
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
