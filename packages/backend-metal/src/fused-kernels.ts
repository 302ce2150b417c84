/**
 * The fused kernels of MetalBackend (softmax family, RMSNorm, LayerNorm, rope, SwiGLU,
 * cross-entropy, AdamW): each checks its arguments — buffers of this backend, float dtypes that
 * agree, element counts that match rows/cols, finite scalars — then calls the native kernel
 * (native/host/fused_methods.cpp, which checks again). Layouts are core's
 * (docs/kernel-semantics.md): dense tensors from element 0.
 */
import { InvalidArgumentError, ShapeError, type AdamWParams, type TensorRef } from '@kiln/core';
import type { NativeBackend } from './native/addon-types.js';
import { callNative } from './native/native-error.js';
import { checkInteger, checkTensor, expectCount, expectFloat, formatShape, metalChecks } from './validate.js';

/** Largest and smallest i32 (the ignore index travels as an i32). */
const I32_MAX = 2147483647;
const I32_MIN = -2147483648;

/** See the file header; `owner` is the MetalBackend whose buffers are accepted. */
export class MetalFusedKernels {
  constructor(private readonly native: NativeBackend, private readonly owner: object) {}

  /** softmax / logSoftmax over [rows, cols]. */
  softmax(kernel: 'softmax' | 'logSoftmax', x: TensorRef, out: TensorRef, rows: number, cols: number): void {
    const count = metalChecks.checkRowsCols(kernel, rows, cols);
    const input = metalChecks.checkFloatTensor(x, this.owner, kernel, 'x', count, 'rows · cols');
    const output = metalChecks.checkTensorOf(out, this.owner, kernel, 'out', input.dtype, count, 'rows · cols');
    callNative(() => this.native[kernel](input.native, output.native, rows, cols));
  }

  /** dx = y ⊙ (dy − Σ dy·y) per row. */
  softmaxBackward(y: TensorRef, dy: TensorRef, dx: TensorRef, rows: number, cols: number): void {
    const kernel = 'softmaxBackward';
    const count = metalChecks.checkRowsCols(kernel, rows, cols);
    const output = metalChecks.checkFloatTensor(y, this.owner, kernel, 'y', count, 'rows · cols');
    const gradient = metalChecks.checkTensorOf(dy, this.owner, kernel, 'dy', output.dtype, count, 'rows · cols');
    const result = metalChecks.checkTensorOf(dx, this.owner, kernel, 'dx', output.dtype, count, 'rows · cols');
    callNative(() => this.native.softmaxBackward(output.native, gradient.native, result.native, rows, cols));
  }

  /** RMSNorm; rstd f32 [rows]. */
  rmsNorm(x: TensorRef, weight: TensorRef, out: TensorRef, rstd: TensorRef, rows: number, cols: number, eps: number): void {
    const kernel = 'rmsNorm';
    const count = metalChecks.checkRowsCols(kernel, rows, cols);
    const input = metalChecks.checkFloatTensor(x, this.owner, kernel, 'x', count, 'rows · cols');
    const scale = metalChecks.checkTensorOf(weight, this.owner, kernel, 'weight', input.dtype, cols, 'cols');
    const output = metalChecks.checkTensorOf(out, this.owner, kernel, 'out', input.dtype, count, 'rows · cols');
    const inverse = metalChecks.checkTensorOf(rstd, this.owner, kernel, 'rstd', 'f32', rows, 'rows');
    this.number(kernel, 'eps', eps);
    callNative(() => this.native.rmsNorm(input.native, scale.native, output.native, inverse.native, rows, cols, eps));
  }

  /** RMSNorm gradients; dWeight f32 [cols] overwritten (summed over rows in a fixed order). */
  rmsNormBackward(x: TensorRef, weight: TensorRef, rstd: TensorRef, dy: TensorRef, dx: TensorRef, dWeight: TensorRef, rows: number, cols: number): void {
    const kernel = 'rmsNormBackward';
    const count = metalChecks.checkRowsCols(kernel, rows, cols);
    const input = metalChecks.checkFloatTensor(x, this.owner, kernel, 'x', count, 'rows · cols');
    const scale = metalChecks.checkTensorOf(weight, this.owner, kernel, 'weight', input.dtype, cols, 'cols');
    const inverse = metalChecks.checkTensorOf(rstd, this.owner, kernel, 'rstd', 'f32', rows, 'rows');
    const gradient = metalChecks.checkTensorOf(dy, this.owner, kernel, 'dy', input.dtype, count, 'rows · cols');
    const inputGradient = metalChecks.checkTensorOf(dx, this.owner, kernel, 'dx', input.dtype, count, 'rows · cols');
    const weightGradient = metalChecks.checkTensorOf(dWeight, this.owner, kernel, 'dWeight', 'f32', cols, 'cols');
    callNative(() => this.native.rmsNormBackward(input.native, scale.native, inverse.native, gradient.native, inputGradient.native, weightGradient.native, rows, cols));
  }

  /** LayerNorm over the last axis. */
  layerNorm(x: TensorRef, weight: TensorRef, bias: TensorRef, out: TensorRef, rows: number, cols: number, eps: number): void {
    const kernel = 'layerNorm';
    const count = metalChecks.checkRowsCols(kernel, rows, cols);
    const input = metalChecks.checkFloatTensor(x, this.owner, kernel, 'x', count, 'rows · cols');
    const scale = metalChecks.checkTensorOf(weight, this.owner, kernel, 'weight', input.dtype, cols, 'cols');
    const shift = metalChecks.checkTensorOf(bias, this.owner, kernel, 'bias', input.dtype, cols, 'cols');
    const output = metalChecks.checkTensorOf(out, this.owner, kernel, 'out', input.dtype, count, 'rows · cols');
    this.number(kernel, 'eps', eps);
    callNative(() => this.native.layerNorm(input.native, scale.native, shift.native, output.native, rows, cols, eps));
  }

  /** Rotary embedding (half-split) on x [..., T, D]; inverse rotates by −angle. */
  rope(x: TensorRef, out: TensorRef, offset: number, theta: number, inverse: boolean): void {
    const kernel = 'rope';
    const input = metalChecks.checkElementwiseTensor(x, this.owner, kernel, 'x');
    const output = metalChecks.checkTensorOf(out, this.owner, kernel, 'out', input.dtype, input.count, 'as many elements as x');
    const rank = input.shape.length;
    if (rank < 2 || input.shape[rank - 1] % 2 !== 0) {
      throw new ShapeError(`metal backend: rope needs x [B, H, T, D] with an even D, got ${formatShape(input.shape)}`, {
        hint: 'The half-split layout pairs element i with i + D/2, so D must be even.',
      });
    }
    if (output.shape.length !== rank || output.shape.some((size, dim) => size !== input.shape[dim])) {
      throw new ShapeError(`metal backend: rope: out has shape ${formatShape(output.shape)}, expected ${formatShape(input.shape)}`);
    }
    checkInteger(offset, 'rope: offset');
    if (typeof theta !== 'number' || !(theta > 0) || !Number.isFinite(theta)) {
      throw new InvalidArgumentError(`metal backend: rope: theta must be a positive finite number, got ${String(theta)}`);
    }
    if (typeof inverse !== 'boolean') throw new InvalidArgumentError('metal backend: rope: inverse must be a boolean');
    callNative(() => this.native.rope(input.native, output.native, offset, theta, inverse));
  }

  /** out = silu(gate) · up. */
  swiglu(gate: TensorRef, up: TensorRef, out: TensorRef): void {
    const kernel = 'swiglu';
    const gates = metalChecks.checkElementwiseTensor(gate, this.owner, kernel, 'gate');
    const ups = metalChecks.checkTensorOf(up, this.owner, kernel, 'up', gates.dtype, gates.count, 'as many elements as gate');
    const output = metalChecks.checkTensorOf(out, this.owner, kernel, 'out', gates.dtype, gates.count, 'as many elements as gate');
    callNative(() => this.native.swiglu(gates.native, ups.native, output.native));
  }

  /** dGate = dy · up · siluGrad(gate), dUp = dy · silu(gate). */
  swigluBackward(gate: TensorRef, up: TensorRef, dy: TensorRef, dGate: TensorRef, dUp: TensorRef): void {
    const kernel = 'swigluBackward';
    const gates = metalChecks.checkElementwiseTensor(gate, this.owner, kernel, 'gate');
    const [ups, gradient, gateGradient, upGradient] = ([['up', up], ['dy', dy], ['dGate', dGate], ['dUp', dUp]] as const).map(([role, ref]) =>
      metalChecks.checkTensorOf(ref, this.owner, kernel, role, gates.dtype, gates.count, 'as many elements as gate'));
    callNative(() => this.native.swigluBackward(gates.native, ups.native, gradient.native, gateGradient.native, upGradient.native));
  }

  /** Per-row cross-entropy loss f32 [rows]; an out-of-range target gives NaN and rejects the next synchronize/download. */
  crossEntropy(logits: TensorRef, targets: TensorRef, loss: TensorRef, rows: number, classes: number, ignoreIndex: number): void {
    const kernel = 'crossEntropy';
    const count = metalChecks.checkRowsCols(kernel, rows, classes, 'classes');
    const input = metalChecks.checkFloatTensor(logits, this.owner, kernel, 'logits', count, 'rows · classes');
    const labels = metalChecks.checkTensorOf(targets, this.owner, kernel, 'targets', 'i32', rows, 'rows');
    const output = metalChecks.checkTensorOf(loss, this.owner, kernel, 'loss', 'f32', rows, 'rows');
    this.ignoreIndex(kernel, ignoreIndex);
    callNative(() => this.native.crossEntropy(input.native, labels.native, output.native, rows, classes, ignoreIndex));
  }

  /** dLogits = (softmax − onehot) · scale per row, one pass over the vocabulary after the logsumexp. */
  crossEntropyBackward(logits: TensorRef, targets: TensorRef, dLogits: TensorRef, rows: number, classes: number, ignoreIndex: number, scale: number): void {
    const kernel = 'crossEntropyBackward';
    const count = metalChecks.checkRowsCols(kernel, rows, classes, 'classes');
    const input = metalChecks.checkFloatTensor(logits, this.owner, kernel, 'logits', count, 'rows · classes');
    const labels = metalChecks.checkTensorOf(targets, this.owner, kernel, 'targets', 'i32', rows, 'rows');
    const output = metalChecks.checkTensorOf(dLogits, this.owner, kernel, 'dLogits', input.dtype, count, 'rows · classes');
    this.ignoreIndex(kernel, ignoreIndex);
    this.number(kernel, 'scale', scale);
    callNative(() => this.native.crossEntropyBackward(input.native, labels.native, output.native, rows, classes, ignoreIndex, scale));
  }

  /** One AdamW step in place on param, m, v (f32 state) from grad. */
  adamw(param: TensorRef, grad: TensorRef, m: TensorRef, v: TensorRef, params: AdamWParams): void {
    const kernel = 'adamw';
    const parameter = metalChecks.checkElementwiseTensor(param, this.owner, kernel, 'param');
    const gradient = checkTensor(grad, this.owner, kernel, 'grad', false);
    expectFloat(gradient, kernel, 'grad');
    expectCount(gradient, parameter.count, kernel, 'grad', 'as many elements as param');
    const first = metalChecks.checkTensorOf(m, this.owner, kernel, 'm', 'f32', parameter.count, 'as many elements as param');
    const second = metalChecks.checkTensorOf(v, this.owner, kernel, 'v', 'f32', parameter.count, 'as many elements as param');
    if (typeof params !== 'object' || params === null) throw new InvalidArgumentError('metal backend: adamw: params must be an object');
    const { lr, beta1, beta2, eps, weightDecay, step } = params;
    for (const [name, value] of Object.entries({ lr, beta1, beta2, eps, weightDecay })) this.number(kernel, `params.${name}`, value);
    checkInteger(step, 'adamw: params.step', 1);
    callNative(() => this.native.adamw(parameter.native, gradient.native, first.native, second.native, { lr, beta1, beta2, eps, weightDecay, step }));
  }

  private number(kernel: string, name: string, value: unknown): void {
    if (typeof value !== 'number' || !Number.isFinite(value)) {
      throw new InvalidArgumentError(`metal backend: ${kernel}: ${name} must be a finite number, got ${String(value)}`);
    }
  }

  private ignoreIndex(kernel: string, value: unknown): void {
    if (typeof value !== 'number' || !Number.isInteger(value) || value < I32_MIN || value > I32_MAX) {
      throw new InvalidArgumentError(`metal backend: ${kernel}: ignoreIndex must be an i32 integer, got ${String(value)}`);
    }
  }
}
