/**
 * Rotary position embeddings (half-split) and the SwiGLU gate. rope reads [B, H, T, D] or, with
 * layout 'tokens-major', [B, T, H, D]: on the backend's kernel when capabilities.ropeLayouts lists
 * it (or core's composition, which reads both, when the backend has no rope kernel), else core
 * permutes to heads-major and back.
 */
import type { AttentionLayout } from '../../backend/kernel-backend.js';
import { InvalidArgumentError, ShapeError } from '../../errors.js';
import { allocateTensor, assertFloat, assertSameDType, commonBackend } from '../../engine/dispatch.js';
import { recordOp } from '../../autograd/record.js';
import { formatShape, shapesEqual } from '../../tensor/shape.js';
import type { Tensor } from '../../tensor/tensor.js';
import { inDType, resolveFused, toDType } from './fused-call.js';
import { checkNumber, checkOptions, checkTensor, option } from '../../validate.js';
import { permute } from '../shape-ops.js';

/** Options of rope. */
export interface RopeOptions {
  /** Position of the first time step (KV-cache decoding), default 0. */
  offset?: number;
  /** Base of the frequencies, default 10000. */
  theta?: number;
  /** Layout of x and the result: 'heads-major' [B, H, T, D] (default) or 'tokens-major' [B, T, H, D]. */
  layout?: AttentionLayout;
}

const SWAP_HEADS_AND_TOKENS = [0, 2, 1, 3];

function ropeKernel(x: Tensor, offset: number, theta: number, inverse: boolean, tokensMajor: boolean): Tensor {
  const { kernel, computeDType } = resolveFused(x.backend, 'rope', x.dtype);
  const inputs = inDType([x], computeDType);
  const output = allocateTensor(x.backend, x.shape, computeDType);
  if (output.size > 0) {
    if (tokensMajor) kernel(inputs.tensors[0].ref(), output.ref(), offset, theta, inverse, 'tokens-major');
    else kernel(inputs.tensors[0].ref(), output.ref(), offset, theta, inverse);
  }
  inputs.release();
  return toDType(output, x.dtype);
}

/** True when `backend` runs rope on `layout` without core permuting (its kernel reads it, or core's composition runs). */
export function backendReadsRopeLayout(backend: Tensor['backend'], layout: AttentionLayout): boolean {
  if (layout === 'heads-major' || backend.rope === undefined) return true;
  return backend.capabilities.ropeLayouts?.includes(layout) ?? false;
}

/** Rotates pairs (i, i + D/2) of x [B, H, T, D] (or [B, T, H, D] tokens-major) by position·theta^(−2i/D). */
export function rope(x: Tensor, options: RopeOptions = {}): Tensor {
  checkTensor('rope', 'x', x);
  const checked = checkOptions<RopeOptions>('rope', 'options', options, {
    offset: option.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
    theta: (op, name, value) => void checkNumber(op, name, value, { finite: true, min: 0, exclusiveMin: true }),
    layout: option.choice(['heads-major', 'tokens-major']),
  });
  const layout = checked.layout ?? 'heads-major';
  const offset = checked.offset ?? 0;
  const theta = checked.theta ?? 10000;
  assertFloat('rope', x);
  if (x.rank !== 4 || x.shape[3] % 2 !== 0) {
    throw new ShapeError(
      `rope: input must be ${layout === 'tokens-major' ? '[batch, time, heads, headDim] (tokens-major)' : '[batch, heads, time, headDim]'} with an even headDim, got ${x.describe()}`,
    );
  }
  if (!Number.isSafeInteger(offset) || offset < 0)
    throw new InvalidArgumentError(`rope: offset must be a non-negative integer, got ${offset}`);
  if (!(theta > 0)) throw new InvalidArgumentError(`rope: theta must be > 0, got ${theta}`);
  if (!backendReadsRopeLayout(x.backend, layout)) {
    const headsMajor = permute(x, SWAP_HEADS_AND_TOKENS);
    const rotated = rope(headsMajor, { offset, theta });
    const result = permute(rotated, SWAP_HEADS_AND_TOKENS);
    headsMajor.dispose();
    rotated.dispose();
    return result;
  }
  const tokensMajor = layout === 'tokens-major';
  const result = ropeKernel(x, offset, theta, false, tokensMajor);
  recordOp('rope', [x], result, [], (g) => [ropeKernel(g, offset, theta, true, tokensMajor)]);
  return result;
}

/** silu(gate) · up (the SwiGLU MLP gate). */
export function swiglu(gate: Tensor, up: Tensor): Tensor {
  checkTensor('swiglu', 'gate', gate);
  checkTensor('swiglu', 'up', up);
  commonBackend('swiglu', [gate, up]);
  assertFloat('swiglu', gate);
  const dtype = assertSameDType('swiglu', [gate, up]);
  if (!shapesEqual(gate.shape, up.shape)) {
    throw new ShapeError(
      `swiglu: gate ${formatShape(gate.shape)} and up ${formatShape(up.shape)} must have the same shape`,
    );
  }
  const { kernel, computeDType } = resolveFused(gate.backend, 'swiglu', dtype);
  const inputs = inDType([gate, up], computeDType);
  const output = allocateTensor(gate.backend, gate.shape, computeDType);
  if (output.size > 0) kernel(inputs.tensors[0].ref(), inputs.tensors[1].ref(), output.ref());
  inputs.release();
  const result = toDType(output, dtype);
  recordOp('swiglu', [gate, up], result, [gate, up], (g, [savedGate, savedUp]) => {
    const backward = resolveFused(savedGate.backend, 'swigluBackward', dtype);
    const operands = inDType([savedGate, savedUp, g], backward.computeDType);
    const dGate = allocateTensor(savedGate.backend, savedGate.shape, backward.computeDType);
    const dUp = allocateTensor(savedGate.backend, savedGate.shape, backward.computeDType);
    if (dGate.size > 0)
      backward.kernel(
        operands.tensors[0].ref(),
        operands.tensors[1].ref(),
        operands.tensors[2].ref(),
        dGate.ref(),
        dUp.ref(),
      );
    operands.release();
    return [toDType(dGate, dtype), toDType(dUp, dtype)];
  });
  return result;
}
