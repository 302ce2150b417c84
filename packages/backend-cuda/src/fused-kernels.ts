/**
 * The fused kernels of CudaBackend (softmax family, RMSNorm, LayerNorm, rope, SwiGLU,
 * cross-entropy, AdamW): each checks its arguments — buffers of this backend, float dtypes that
 * agree, element counts that match rows/cols — then calls the native kernel (which checks again).
 * Layouts are core's (docs/kernel-semantics.md): dense tensors from element 0.
 */
import { InvalidArgumentError, ShapeError, type AdamWParams, type TensorRef } from '@kiln/core';
import type { NativeBackend } from './native/addon-types.js';
import { callNative } from './native/native-error.js';
import { checkInteger, checkTensor, cudaChecks, expectCount, expectFloat, formatShape } from './validate.js';

/** Largest and smallest i32 (the ignore index travels as an i32). */
const I32_MAX = 2147483647;
const I32_MIN = -2147483648;

/** See the file header; `owner` is the CudaBackend whose buffers are accepted. */
export class FusedKernels {
  constructor(private readonly native: NativeBackend, private readonly owner: object) {}

  /** softmax / logSoftmax over [rows, cols]. */
  softmax(kernel: 'softmax' | 'logSoftmax', x: TensorRef, out: TensorRef, rows: number, cols: number): void {
    const count = cudaChecks.checkRowsCols(kernel, rows, cols);
    const input = cudaChecks.checkFloatTensor(x, this.owner, kernel, 'x', count, 'rows · cols');
    const output = cudaChecks.checkTensorOf(out, this.owner, kernel, 'out', input.dtype, count, 'rows · cols');
    callNative(() => this.native[kernel](input.native, output.native, rows, cols));
  }

  /** dx = y ⊙ (dy − Σ dy·y) per row. */
  softmaxBackward(y: TensorRef, dy: TensorRef, dx: TensorRef, rows: number, cols: number): void {
    const kernel = 'softmaxBackward';
    const count = cudaChecks.checkRowsCols(kernel, rows, cols);
    const output = cudaChecks.checkFloatTensor(y, this.owner, kernel, 'y', count, 'rows · cols');
    const gradient = cudaChecks.checkTensorOf(dy, this.owner, kernel, 'dy', output.dtype, count, 'rows · cols');
    const result = cudaChecks.checkTensorOf(dx, this.owner, kernel, 'dx', output.dtype, count, 'rows · cols');
    callNative(() => this.native.softmaxBackward(output.native, gradient.native, result.native, rows, cols));
  }

  /** RMSNorm; rstd f32 [rows]. */
  rmsNorm(x: TensorRef, weight: TensorRef, out: TensorRef, rstd: TensorRef, rows: number, cols: number, eps: number): void {
    const kernel = 'rmsNorm';
    const count = cudaChecks.checkRowsCols(kernel, rows, cols);
    const input = cudaChecks.checkFloatTensor(x, this.owner, kernel, 'x', count, 'rows · cols');
    const scale = cudaChecks.checkTensorOf(weight, this.owner, kernel, 'weight', input.dtype, cols, 'cols');
    const output = cudaChecks.checkTensorOf(out, this.owner, kernel, 'out', input.dtype, count, 'rows · cols');
    const inverse = cudaChecks.checkTensorOf(rstd, this.owner, kernel, 'rstd', 'f32', rows, 'rows');
    this.number(kernel, 'eps', eps);
    callNative(() => this.native.rmsNorm(input.native, scale.native, output.native, inverse.native, rows, cols, eps));
  }

  /** RMSNorm gradients; dWeight f32 [cols] overwritten. */
  rmsNormBackward(x: TensorRef, weight: TensorRef, rstd: TensorRef, dy: TensorRef, dx: TensorRef, dWeight: TensorRef, rows: number, cols: number): void {
    const kernel = 'rmsNormBackward';
    const count = cudaChecks.checkRowsCols(kernel, rows, cols);
    const input = cudaChecks.checkFloatTensor(x, this.owner, kernel, 'x', count, 'rows · cols');
    const scale = cudaChecks.checkTensorOf(weight, this.owner, kernel, 'weight', input.dtype, cols, 'cols');
    const inverse = cudaChecks.checkTensorOf(rstd, this.owner, kernel, 'rstd', 'f32', rows, 'rows');
    const gradient = cudaChecks.checkTensorOf(dy, this.owner, kernel, 'dy', input.dtype, count, 'rows · cols');
    const inputGradient = cudaChecks.checkTensorOf(dx, this.owner, kernel, 'dx', input.dtype, count, 'rows · cols');
    const weightGradient = cudaChecks.checkTensorOf(dWeight, this.owner, kernel, 'dWeight', 'f32', cols, 'cols');
    callNative(() => this.native.rmsNormBackward(input.native, scale.native, inverse.native, gradient.native, inputGradient.native, weightGradient.native, rows, cols));
  }

  /** LayerNorm. */
  layerNorm(x: TensorRef, weight: TensorRef, bias: TensorRef, out: TensorRef, rows: number, cols: number, eps: number): void {
    const kernel = 'layerNorm';
    const count = cudaChecks.checkRowsCols(kernel, rows, cols);
    const input = cudaChecks.checkFloatTensor(x, this.owner, kernel, 'x', count, 'rows · cols');
    const scale = cudaChecks.checkTensorOf(weight, this.owner, kernel, 'weight', input.dtype, cols, 'cols');
    const shift = cudaChecks.checkTensorOf(bias, this.owner, kernel, 'bias', input.dtype, cols, 'cols');
    const output = cudaChecks.checkTensorOf(out, this.owner, kernel, 'out', input.dtype, count, 'rows · cols');
    this.number(kernel, 'eps', eps);
    callNative(() => this.native.layerNorm(input.native, scale.native, shift.native, output.native, rows, cols, eps));
  }

  /** Rotary embedding of x [..., T, D] (D even). */
  rope(x: TensorRef, out: TensorRef, offset: number, theta: number, inverse: boolean): void {
    const kernel = 'rope';
    const input = checkTensor(x, this.owner, kernel, 'x', false);
    expectFloat(input, kernel, 'x');
    const rank = input.shape.length;
    if (rank < 2 || input.shape[rank - 1] % 2 !== 0) {
      throw new ShapeError(`cuda backend: rope needs x [B, H, T, D] with an even D, got ${formatShape(input.shape)}`, {
        hint: 'The half-split layout pairs element i with i + D/2, so D must be even.',
      });
    }
    const output = cudaChecks.checkTensorOf(out, this.owner, kernel, 'out', input.dtype, input.count, 'as many elements as x');
    checkInteger(offset, 'rope: offset');
    if (typeof theta !== 'number' || !Number.isFinite(theta) || theta <= 0) throw new InvalidArgumentError(`cuda backend: rope: theta must be a positive number, got ${String(theta)}`);
    if (typeof inverse !== 'boolean') throw new InvalidArgumentError('cuda backend: rope: inverse must be a boolean');
    callNative(() => this.native.rope(input.native, output.native, offset, theta, inverse));
  }

  /** out = silu(gate) · up. */
  swiglu(gate: TensorRef, up: TensorRef, out: TensorRef): void {
    const gates = cudaChecks.checkElementwiseTensor(gate, this.owner, 'swiglu', 'gate');
    const ups = cudaChecks.checkTensorOf(up, this.owner, 'swiglu', 'up', gates.dtype, gates.count, 'as many elements as gate');
    const output = cudaChecks.checkTensorOf(out, this.owner, 'swiglu', 'out', gates.dtype, gates.count, 'as many elements as gate');
    callNative(() => this.native.swiglu(gates.native, ups.native, output.native));
  }

  /** dGate = dy · up · siluGrad(gate), dUp = dy · silu(gate). */
  swigluBackward(gate: TensorRef, up: TensorRef, dy: TensorRef, dGate: TensorRef, dUp: TensorRef): void {
    const kernel = 'swigluBackward';
    const gates = cudaChecks.checkElementwiseTensor(gate, this.owner, kernel, 'gate');
    const [ups, gradient, gateGradient, upGradient] = ([['up', up], ['dy', dy], ['dGate', dGate], ['dUp', dUp]] as const).map(([role, ref]) =>
      cudaChecks.checkTensorOf(ref, this.owner, kernel, role, gates.dtype, gates.count, 'as many elements as gate'));
    callNative(() => this.native.swigluBackward(gates.native, ups.native, gradient.native, gateGradient.native, upGradient.native));
  }

  /** Per-row cross-entropy loss f32 [rows]. */
  crossEntropy(logits: TensorRef, targets: TensorRef, loss: TensorRef, rows: number, classes: number, ignoreIndex: number): void {
    const kernel = 'crossEntropy';
    const count = cudaChecks.checkRowsCols(kernel, rows, classes, 'classes');
    const input = cudaChecks.checkFloatTensor(logits, this.owner, kernel, 'logits', count, 'rows · classes');
    const labels = cudaChecks.checkTensorOf(targets, this.owner, kernel, 'targets', 'i32', rows, 'rows');
    const output = cudaChecks.checkTensorOf(loss, this.owner, kernel, 'loss', 'f32', rows, 'rows');
    this.ignoreIndex(kernel, ignoreIndex);
    callNative(() => this.native.crossEntropy(input.native, labels.native, output.native, rows, classes, ignoreIndex));
  }

  /** dLogits = (softmax − onehot)·scale per row. */
  crossEntropyBackward(logits: TensorRef, targets: TensorRef, dLogits: TensorRef, rows: number, classes: number, ignoreIndex: number, scale: number): void {
    const kernel = 'crossEntropyBackward';
    const count = cudaChecks.checkRowsCols(kernel, rows, classes, 'classes');
    const input = cudaChecks.checkFloatTensor(logits, this.owner, kernel, 'logits', count, 'rows · classes');
    const labels = cudaChecks.checkTensorOf(targets, this.owner, kernel, 'targets', 'i32', rows, 'rows');
    const output = cudaChecks.checkTensorOf(dLogits, this.owner, kernel, 'dLogits', input.dtype, count, 'rows · classes');
    this.ignoreIndex(kernel, ignoreIndex);
    this.number(kernel, 'scale', scale);
    callNative(() => this.native.crossEntropyBackward(input.native, labels.native, output.native, rows, classes, ignoreIndex, scale));
  }

  /** One AdamW step in place. */
  adamw(param: TensorRef, grad: TensorRef, m: TensorRef, v: TensorRef, params: AdamWParams): void {
    const kernel = 'adamw';
    const parameter = cudaChecks.checkElementwiseTensor(param, this.owner, kernel, 'param');
    const gradient = checkTensor(grad, this.owner, kernel, 'grad', false);
    expectFloat(gradient, kernel, 'grad');
    expectCount(gradient, parameter.count, kernel, 'grad', 'as many elements as param');
    const first = cudaChecks.checkTensorOf(m, this.owner, kernel, 'm', 'f32', parameter.count, 'as many elements as param');
    const second = cudaChecks.checkTensorOf(v, this.owner, kernel, 'v', 'f32', parameter.count, 'as many elements as param');
    if (typeof params !== 'object' || params === null) throw new InvalidArgumentError('cuda backend: adamw: params must be an object');
    const { lr, beta1, beta2, eps, weightDecay, step } = params;
    for (const [name, value] of Object.entries({ lr, beta1, beta2, eps, weightDecay })) this.number(kernel, `params.${name}`, value);
    checkInteger(step, 'adamw: params.step', 1);
    callNative(() => this.native.adamw(parameter.native, gradient.native, first.native, second.native, { lr, beta1, beta2, eps, weightDecay, step }));
  }

  private number(kernel: string, name: string, value: unknown): void {
    if (typeof value !== 'number') throw new InvalidArgumentError(`cuda backend: ${kernel}: ${name} must be a number, got ${typeof value}`);
  }

  private ignoreIndex(kernel: string, value: number): void {
    if (typeof value !== 'number' || !Number.isInteger(value) || value < I32_MIN || value > I32_MAX) {
      throw new InvalidArgumentError(`cuda backend: ${kernel}: ignoreIndex must be an integer in the i32 range, got ${String(value)}`);
    }
  }
}
