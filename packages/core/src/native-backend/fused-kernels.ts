/**
 * Argument checks and native calls of the fused kernels every native backend shares (softmax
 * family, RMSNorm, LayerNorm (its backward where the addon has it), SwiGLU, cross-entropy, AdamW): buffers of the owning backend,
 * float dtypes that agree, element counts that match rows/cols. Layouts are core's
 * (docs/kernel-semantics.md): dense tensors from element 0. A backend subclasses it to say how
 * it checks scalars (eps, scale, the AdamW hyper-parameters) and the ignore index, and to check
 * and call rope, whose checks are its own.
 */
import type { AdamWMultiParams, AdamWParams, TensorRef } from '../backend/kernel-backend.js';
import type { DType } from '../dtype.js';
import { formatShape, InvalidArgumentError, ShapeError } from '../index.js';
import type { NativeArgumentChecks } from './argument-checks.js';
import type { NativeTensor } from './native-tensor.js';
import type { NativeErrorMapping } from './native-error.js';
import type { NativeAddonForms } from './native-kernels.js';

/** The fused-kernel methods of a native addon's backend object (each re-checks and throws a NativeFailure). */
export interface NativeFusedMethods {
  /** softmax over the last axis of x [rows, cols]. */
  softmax(x: NativeTensor, out: NativeTensor, rows: number, cols: number): void;
  /** log-softmax over the last axis of x [rows, cols]. */
  logSoftmax(x: NativeTensor, out: NativeTensor, rows: number, cols: number): void;
  /** dx = y ⊙ (dy − Σ dy·y) per row. */
  softmaxBackward(y: NativeTensor, dy: NativeTensor, dx: NativeTensor, rows: number, cols: number): void;
  /** RMSNorm; rstd f32 [rows]. */
  rmsNorm(
    x: NativeTensor,
    weight: NativeTensor,
    out: NativeTensor,
    rstd: NativeTensor,
    rows: number,
    cols: number,
    eps: number,
  ): void;
  /** RMSNorm gradients; dWeight f32 [cols] overwritten. */
  rmsNormBackward(
    x: NativeTensor,
    weight: NativeTensor,
    rstd: NativeTensor,
    dy: NativeTensor,
    dx: NativeTensor,
    dWeight: NativeTensor,
    rows: number,
    cols: number,
  ): void;
  /** LayerNorm over the last axis. */
  layerNorm(
    x: NativeTensor,
    weight: NativeTensor,
    bias: NativeTensor,
    out: NativeTensor,
    rows: number,
    cols: number,
    eps: number,
  ): void;
  /** Rotary embedding (half-split) of x [..., T, D] at positions offset…; inverse rotates by −angle. */
  rope(
    x: NativeTensor,
    out: NativeTensor,
    offset: number,
    theta: number,
    inverse: boolean,
    tokensMajor?: boolean,
  ): void;
  /** out = silu(gate) · up. */
  swiglu(gate: NativeTensor, up: NativeTensor, out: NativeTensor): void;
  /** dGate = dy · up · siluGrad(gate), dUp = dy · silu(gate). */
  swigluBackward(gate: NativeTensor, up: NativeTensor, dy: NativeTensor, dGate: NativeTensor, dUp: NativeTensor): void;
  /** Per-row cross-entropy loss f32 [rows]. */
  crossEntropy(
    logits: NativeTensor,
    targets: NativeTensor,
    loss: NativeTensor,
    rows: number,
    classes: number,
    ignoreIndex: number,
  ): void;
  /** dLogits = (softmax − onehot) · scale per row. */
  crossEntropyBackward(
    logits: NativeTensor,
    targets: NativeTensor,
    dLogits: NativeTensor,
    rows: number,
    classes: number,
    ignoreIndex: number,
    scale: number,
  ): void;
  /** One AdamW step in place on param, m, v (f32 state) from grad. */
  adamw(param: NativeTensor, grad: NativeTensor, m: NativeTensor, v: NativeTensor, params: AdamWParams): void;
  /** Optional: out (f32, one element) = Σ over tensors of Σ x², deterministic order (absent: NativeKernelBackend composes it). */
  sumOfSquaresMulti?(tensors: NativeTensor[], out: NativeTensor): void;
  /** Optional: one AdamW step on every (param, grad, m, v); gradientScale and skipIfNonFinite may be one-element f32 tensors (absent: composed). */
  adamwMulti?(
    params: NativeTensor[],
    grads: NativeTensor[],
    ms: NativeTensor[],
    vs: NativeTensor[],
    options: NativeAdamWMultiOptions,
  ): void;
  /** Optional: layerNorm's gradients, mean and rstd recomputed from x; dWeight, dBias f32 [cols] overwritten. */
  layerNormBackward?(
    x: NativeTensor,
    weight: NativeTensor,
    dy: NativeTensor,
    dx: NativeTensor,
    dWeight: NativeTensor,
    dBias: NativeTensor,
    rows: number,
    cols: number,
    eps: number,
  ): void;
  /** Optional: layerNorm with f32 x, weight and bias and an f16/bf16 out. */
  layerNormMixedPrecision?(
    x: NativeTensor,
    weight: NativeTensor,
    bias: NativeTensor,
    out: NativeTensor,
    rows: number,
    cols: number,
    eps: number,
  ): void;
  /** Optional: layerNormBackward with f32 x, weight and dx and an f16/bf16 dy. */
  layerNormBackwardMixedPrecision?(
    x: NativeTensor,
    weight: NativeTensor,
    dy: NativeTensor,
    dx: NativeTensor,
    dWeight: NativeTensor,
    dBias: NativeTensor,
    rows: number,
    cols: number,
    eps: number,
  ): void;
  /** Optional: rmsNorm with f32 x and weight and an f16/bf16 out (an addon without it refuses mixed dtypes). */
  rmsNormMixedPrecision?(
    x: NativeTensor,
    weight: NativeTensor,
    out: NativeTensor,
    rstd: NativeTensor,
    rows: number,
    cols: number,
    eps: number,
  ): void;
  /** Optional: rmsNormBackward with f32 x, weight and dx and an f16/bf16 dy. */
  rmsNormBackwardMixedPrecision?(
    x: NativeTensor,
    weight: NativeTensor,
    rstd: NativeTensor,
    dy: NativeTensor,
    dx: NativeTensor,
    dWeight: NativeTensor,
    rows: number,
    cols: number,
  ): void;
  /** Optional: adamwMulti of an addon that reads options.deviceScalars (an addon without it would ignore them, so core composes that form). */
  adamwMultiDeviceScalars?(
    params: NativeTensor[],
    grads: NativeTensor[],
    ms: NativeTensor[],
    vs: NativeTensor[],
    options: NativeAdamWMultiOptions,
  ): void;
}

/** adamwMulti's options as the addon takes them. */
export interface NativeAdamWMultiOptions {
  /** Learning rate. */
  lr: number;
  /** First-moment decay. */
  beta1: number;
  /** Second-moment decay. */
  beta2: number;
  /** Denominator epsilon. */
  eps: number;
  /** 1-based step. */
  step: number;
  /** Weight decay per tensor. */
  weightDecays: number[];
  /** A number or a one-element f32 tensor. */
  gradientScale: number | NativeTensor;
  /** Optional one-element f32 tensor: non-finite makes the step a no-op. */
  skipIfNonFinite?: NativeTensor;
  /** Optional f32 [stepSize, inverseRootCorrection, decay per tensor] read on the device instead of lr, step, weightDecays. */
  deviceScalars?: NativeTensor;
}

/** See the file header; `owner` is the backend whose buffers are accepted. */
export abstract class NativeFusedKernels {
  constructor(
    /** The backend's argument checks. */
    protected readonly checks: NativeArgumentChecks,
    /** The backend's native-failure mapping. */
    protected readonly errors: NativeErrorMapping,
    /** The addon's backend object. */
    protected readonly native: NativeFusedMethods,
    /** The backend instance whose buffers are accepted. */
    protected readonly owner: object,
  ) {}

  /** Throws an InvalidArgumentError unless `value` is a scalar the backend's kernels take (eps, scale, AdamW hyper-parameters). */
  protected abstract checkScalar(kernel: string, name: string, value: unknown): void;

  /** Throws an InvalidArgumentError unless `value` is a valid ignore index (it travels as an i32). */
  protected abstract checkIgnoreIndex(kernel: string, value: unknown): void;

  /** Rotary embedding (half-split) of x [..., T, D] with D even (tokensMajor: x [B, T, H, D], only where the backend lists the layout); inverse rotates by −angle. */
  rope(x: TensorRef, out: TensorRef, offset: number, theta: number, inverse: boolean, tokensMajor = false): void {
    const kernel = 'rope';
    const prefix = `${this.checks.backend} backend: rope`;
    const input = this.checks.checkElementwiseTensor(x, this.owner, kernel, 'x');
    const output = this.checks.checkTensorOf(
      out,
      this.owner,
      kernel,
      'out',
      input.dtype,
      input.count,
      'as many elements as x',
    );
    const rank = input.shape.length;
    if (rank < 2 || input.shape[rank - 1] % 2 !== 0) {
      throw new ShapeError(`${prefix} needs x [B, H, T, D] with an even D, got ${formatShape(input.shape)}`, {
        hint: 'The half-split layout pairs element i with i + D/2, so D must be even.',
      });
    }
    this.checks.expectShape(output, input.shape, kernel, 'out');
    this.checks.checkInteger(offset, 'rope: offset');
    if (typeof theta !== 'number' || !(theta > 0) || !Number.isFinite(theta))
      throw new InvalidArgumentError(`${prefix}: theta must be a positive finite number, got ${String(theta)}`);
    if (typeof inverse !== 'boolean') throw new InvalidArgumentError(`${prefix}: inverse must be a boolean`);
    this.errors.callNative(() =>
      tokensMajor
        ? this.native.rope(input.native, output.native, offset, theta, inverse, true)
        : this.native.rope(input.native, output.native, offset, theta, inverse),
    );
  }

  /** softmax / logSoftmax over [rows, cols]. */
  softmax(kernel: 'softmax' | 'logSoftmax', x: TensorRef, out: TensorRef, rows: number, cols: number): void {
    const count = this.checks.checkRowsCols(kernel, rows, cols);
    const input = this.checks.checkFloatTensor(x, this.owner, kernel, 'x', count, 'rows · cols');
    const output = this.checks.checkTensorOf(out, this.owner, kernel, 'out', input.dtype, count, 'rows · cols');
    this.errors.callNative(() => this.native[kernel](input.native, output.native, rows, cols));
  }

  /** dx = y ⊙ (dy − Σ dy·y) per row. */
  softmaxBackward(y: TensorRef, dy: TensorRef, dx: TensorRef, rows: number, cols: number): void {
    const kernel = 'softmaxBackward';
    const count = this.checks.checkRowsCols(kernel, rows, cols);
    const output = this.checks.checkFloatTensor(y, this.owner, kernel, 'y', count, 'rows · cols');
    const gradient = this.checks.checkTensorOf(dy, this.owner, kernel, 'dy', output.dtype, count, 'rows · cols');
    const result = this.checks.checkTensorOf(dx, this.owner, kernel, 'dx', output.dtype, count, 'rows · cols');
    this.errors.callNative(() =>
      this.native.softmaxBackward(output.native, gradient.native, result.native, rows, cols),
    );
  }

  /** RMSNorm; rstd f32 [rows]. */
  rmsNorm(
    x: TensorRef,
    weight: TensorRef,
    out: TensorRef,
    rstd: TensorRef,
    rows: number,
    cols: number,
    eps: number,
  ): void {
    const kernel = 'rmsNorm';
    const count = this.checks.checkRowsCols(kernel, rows, cols);
    const input = this.checks.checkFloatTensor(x, this.owner, kernel, 'x', count, 'rows · cols');
    const scale = this.checks.checkTensorOf(weight, this.owner, kernel, 'weight', input.dtype, cols, 'cols');
    const mixed = this.mixedPrecisionNorm(input.dtype, out);
    const outDType = mixed ? out.dtype : input.dtype;
    const output = this.checks.checkTensorOf(out, this.owner, kernel, 'out', outDType, count, 'rows · cols');
    const inverse = this.checks.checkTensorOf(rstd, this.owner, kernel, 'rstd', 'f32', rows, 'rows');
    this.checkScalar(kernel, 'eps', eps);
    const method = mixed ? this.native.rmsNormMixedPrecision! : this.native.rmsNorm;
    this.errors.callNative(() =>
      method.call(this.native, input.native, scale.native, output.native, inverse.native, rows, cols, eps),
    );
  }

  /** RMSNorm gradients; dWeight f32 [cols] overwritten. */
  rmsNormBackward(
    x: TensorRef,
    weight: TensorRef,
    rstd: TensorRef,
    dy: TensorRef,
    dx: TensorRef,
    dWeight: TensorRef,
    rows: number,
    cols: number,
  ): void {
    const kernel = 'rmsNormBackward';
    const count = this.checks.checkRowsCols(kernel, rows, cols);
    const input = this.checks.checkFloatTensor(x, this.owner, kernel, 'x', count, 'rows · cols');
    const scale = this.checks.checkTensorOf(weight, this.owner, kernel, 'weight', input.dtype, cols, 'cols');
    const inverse = this.checks.checkTensorOf(rstd, this.owner, kernel, 'rstd', 'f32', rows, 'rows');
    const mixed = this.mixedPrecisionNorm(input.dtype, dy);
    const dyDType = mixed ? dy.dtype : input.dtype;
    const gradient = this.checks.checkTensorOf(dy, this.owner, kernel, 'dy', dyDType, count, 'rows · cols');
    const inputGradient = this.checks.checkTensorOf(dx, this.owner, kernel, 'dx', input.dtype, count, 'rows · cols');
    const weightGradient = this.checks.checkTensorOf(dWeight, this.owner, kernel, 'dWeight', 'f32', cols, 'cols');
    const method = mixed ? this.native.rmsNormBackwardMixedPrecision! : this.native.rmsNormBackward;
    this.errors.callNative(() =>
      method.call(
        this.native,
        input.native,
        scale.native,
        inverse.native,
        gradient.native,
        inputGradient.native,
        weightGradient.native,
        rows,
        cols,
      ),
    );
  }

  /** LayerNorm over the last axis. */
  layerNorm(
    x: TensorRef,
    weight: TensorRef,
    bias: TensorRef,
    out: TensorRef,
    rows: number,
    cols: number,
    eps: number,
  ): void {
    const kernel = 'layerNorm';
    const count = this.checks.checkRowsCols(kernel, rows, cols);
    const input = this.checks.checkFloatTensor(x, this.owner, kernel, 'x', count, 'rows · cols');
    const scale = this.checks.checkTensorOf(weight, this.owner, kernel, 'weight', input.dtype, cols, 'cols');
    const shift = this.checks.checkTensorOf(bias, this.owner, kernel, 'bias', input.dtype, cols, 'cols');
    const mixed = this.mixedPrecisionNorm(input.dtype, out);
    const outDType = mixed ? out.dtype : input.dtype;
    const output = this.checks.checkTensorOf(out, this.owner, kernel, 'out', outDType, count, 'rows · cols');
    this.checkScalar(kernel, 'eps', eps);
    const method = mixed ? this.native.layerNormMixedPrecision! : this.native.layerNorm;
    this.errors.callNative(() =>
      method.call(this.native, input.native, scale.native, shift.native, output.native, rows, cols, eps),
    );
  }

  /** LayerNorm gradients (mean and rstd recomputed from x); dWeight, dBias f32 [cols] overwritten. Only where hasLayerNormBackward(). */
  layerNormBackward(
    x: TensorRef,
    weight: TensorRef,
    dy: TensorRef,
    dx: TensorRef,
    dWeight: TensorRef,
    dBias: TensorRef,
    rows: number,
    cols: number,
    eps: number,
  ): void {
    const kernel = 'layerNormBackward';
    const count = this.checks.checkRowsCols(kernel, rows, cols);
    const input = this.checks.checkFloatTensor(x, this.owner, kernel, 'x', count, 'rows · cols');
    const scale = this.checks.checkTensorOf(weight, this.owner, kernel, 'weight', input.dtype, cols, 'cols');
    const mixed = this.mixedPrecisionNorm(input.dtype, dy);
    const dyDType = mixed ? dy.dtype : input.dtype;
    const gradient = this.checks.checkTensorOf(dy, this.owner, kernel, 'dy', dyDType, count, 'rows · cols');
    const inputGradient = this.checks.checkTensorOf(dx, this.owner, kernel, 'dx', input.dtype, count, 'rows · cols');
    const weightGradient = this.checks.checkTensorOf(dWeight, this.owner, kernel, 'dWeight', 'f32', cols, 'cols');
    const biasGradient = this.checks.checkTensorOf(dBias, this.owner, kernel, 'dBias', 'f32', cols, 'cols');
    this.checkScalar(kernel, 'eps', eps);
    const method = mixed ? this.native.layerNormBackwardMixedPrecision! : this.native.layerNormBackward!;
    this.errors.callNative(() =>
      method.call(
        this.native,
        input.native,
        scale.native,
        gradient.native,
        inputGradient.native,
        weightGradient.native,
        biasGradient.native,
        rows,
        cols,
        eps,
      ),
    );
  }

  /** True when the addon has layerNormBackward (else core composes it: capabilities.supports says no). */
  hasLayerNormBackward(): boolean {
    return typeof this.native.layerNormBackward === 'function';
  }

  /** out = silu(gate) · up. */
  swiglu(gate: TensorRef, up: TensorRef, out: TensorRef): void {
    const kernel = 'swiglu';
    const gates = this.checks.checkElementwiseTensor(gate, this.owner, kernel, 'gate');
    const ups = this.checks.checkTensorOf(
      up,
      this.owner,
      kernel,
      'up',
      gates.dtype,
      gates.count,
      'as many elements as gate',
    );
    const output = this.checks.checkTensorOf(
      out,
      this.owner,
      kernel,
      'out',
      gates.dtype,
      gates.count,
      'as many elements as gate',
    );
    this.errors.callNative(() => this.native.swiglu(gates.native, ups.native, output.native));
  }

  /** dGate = dy · up · siluGrad(gate), dUp = dy · silu(gate). */
  swigluBackward(gate: TensorRef, up: TensorRef, dy: TensorRef, dGate: TensorRef, dUp: TensorRef): void {
    const kernel = 'swigluBackward';
    const gates = this.checks.checkElementwiseTensor(gate, this.owner, kernel, 'gate');
    const [ups, gradient, gateGradient, upGradient] = (
      [
        ['up', up],
        ['dy', dy],
        ['dGate', dGate],
        ['dUp', dUp],
      ] as const
    ).map(([role, ref]) =>
      this.checks.checkTensorOf(ref, this.owner, kernel, role, gates.dtype, gates.count, 'as many elements as gate'),
    );
    this.errors.callNative(() =>
      this.native.swigluBackward(gates.native, ups.native, gradient.native, gateGradient.native, upGradient.native),
    );
  }

  /** Per-row cross-entropy loss f32 [rows]. */
  crossEntropy(
    logits: TensorRef,
    targets: TensorRef,
    loss: TensorRef,
    rows: number,
    classes: number,
    ignoreIndex: number,
  ): void {
    const kernel = 'crossEntropy';
    const count = this.checks.checkRowsCols(kernel, rows, classes, 'classes');
    const input = this.checks.checkFloatTensor(logits, this.owner, kernel, 'logits', count, 'rows · classes');
    const labels = this.checks.checkTensorOf(targets, this.owner, kernel, 'targets', 'i32', rows, 'rows');
    const output = this.checks.checkTensorOf(loss, this.owner, kernel, 'loss', 'f32', rows, 'rows');
    this.checkIgnoreIndex(kernel, ignoreIndex);
    this.errors.callNative(() =>
      this.native.crossEntropy(input.native, labels.native, output.native, rows, classes, ignoreIndex),
    );
  }

  /** dLogits = (softmax − onehot) · scale per row. */
  crossEntropyBackward(
    logits: TensorRef,
    targets: TensorRef,
    dLogits: TensorRef,
    rows: number,
    classes: number,
    ignoreIndex: number,
    scale: number,
  ): void {
    const kernel = 'crossEntropyBackward';
    const count = this.checks.checkRowsCols(kernel, rows, classes, 'classes');
    const input = this.checks.checkFloatTensor(logits, this.owner, kernel, 'logits', count, 'rows · classes');
    const labels = this.checks.checkTensorOf(targets, this.owner, kernel, 'targets', 'i32', rows, 'rows');
    const output = this.checks.checkTensorOf(
      dLogits,
      this.owner,
      kernel,
      'dLogits',
      input.dtype,
      count,
      'rows · classes',
    );
    this.checkIgnoreIndex(kernel, ignoreIndex);
    this.checkScalar(kernel, 'scale', scale);
    this.errors.callNative(() =>
      this.native.crossEntropyBackward(input.native, labels.native, output.native, rows, classes, ignoreIndex, scale),
    );
  }

  /** One AdamW step in place on param, m, v (f32 state) from grad. */
  adamw(param: TensorRef, grad: TensorRef, m: TensorRef, v: TensorRef, params: AdamWParams): void {
    const kernel = 'adamw';
    const parameter = this.checks.checkElementwiseTensor(param, this.owner, kernel, 'param');
    const gradient = this.checks.checkTensor(grad, this.owner, kernel, 'grad', false);
    this.checks.expectFloat(gradient, kernel, 'grad');
    this.checks.expectCount(gradient, parameter.count, kernel, 'grad', 'as many elements as param');
    const first = this.checks.checkTensorOf(
      m,
      this.owner,
      kernel,
      'm',
      'f32',
      parameter.count,
      'as many elements as param',
    );
    const second = this.checks.checkTensorOf(
      v,
      this.owner,
      kernel,
      'v',
      'f32',
      parameter.count,
      'as many elements as param',
    );
    if (typeof params !== 'object' || params === null)
      throw new InvalidArgumentError(`${this.checks.backend} backend: adamw: params must be an object`);
    const { lr, beta1, beta2, eps, weightDecay, step } = params;
    for (const [name, value] of Object.entries({ lr, beta1, beta2, eps, weightDecay }))
      this.checkScalar(kernel, `params.${name}`, value);
    this.checks.checkInteger(step, 'adamw: params.step', 1);
    this.errors.callNative(() =>
      this.native.adamw(parameter.native, gradient.native, first.native, second.native, {
        lr,
        beta1,
        beta2,
        eps,
        weightDecay,
        step,
      }),
    );
  }

  /** True when the addon has the norms' mixed-precision forms (capabilities.mixedPrecisionNorm): rmsNorm's, layerNorm's, and layerNormBackward's where it has that kernel. */
  hasMixedPrecisionNorm(): boolean {
    const native = this.native;
    return (
      typeof native.rmsNormMixedPrecision === 'function' &&
      typeof native.rmsNormBackwardMixedPrecision === 'function' &&
      typeof native.layerNormMixedPrecision === 'function' &&
      (!this.hasLayerNormBackward() || typeof native.layerNormBackwardMixedPrecision === 'function')
    );
  }

  /** Which optional forms the addon has, for the backend's capabilities. */
  addonForms(): NativeAddonForms {
    return {
      adamwMultiDeviceScalars: this.hasMultiTensor('adamwMultiDeviceScalars'),
      mixedPrecisionNorm: this.hasMixedPrecisionNorm(),
      layerNormBackward: this.hasLayerNormBackward(),
    };
  }

  /** Whether a call whose x is `xDType` and whose out (or dy) is `half` takes the mixed-precision form: f32 x, f16/bf16 `half`, an addon that has it. */
  private mixedPrecisionNorm(xDType: DType, half: TensorRef): boolean {
    return xDType === 'f32' && (half.dtype === 'f16' || half.dtype === 'bf16') && this.hasMixedPrecisionNorm();
  }

  /** True when the addon has the multi-tensor kernel `name` (else NativeKernelBackend composes it). */
  hasMultiTensor(name: 'sumOfSquaresMulti' | 'adamwMulti' | 'adamwMultiDeviceScalars'): boolean {
    return typeof this.native[name] === 'function';
  }

  /** out = Σ over tensors of Σ x² (f32, one element). */
  sumOfSquaresMulti(tensors: readonly TensorRef[], out: TensorRef): void {
    const kernel = 'sumOfSquaresMulti';
    const inputs = this.tensorList(kernel, 'tensors', tensors);
    const output = this.checks.checkTensorOf(out, this.owner, kernel, 'out', 'f32', 1, 'one element');
    this.errors.callNative(() =>
      this.native.sumOfSquaresMulti!(
        inputs.map((tensor) => tensor.native),
        output.native,
      ),
    );
  }

  /** One AdamW step on every (params[i], grads[i], ms[i], vs[i]). */
  adamwMulti(
    params: readonly TensorRef[],
    grads: readonly TensorRef[],
    ms: readonly TensorRef[],
    vs: readonly TensorRef[],
    options: AdamWMultiParams,
  ): void {
    const kernel = 'adamwMulti';
    const parameters = this.tensorList(kernel, 'params', params);
    const gradients = this.tensorList(kernel, 'grads', grads);
    const lists = {
      grads: gradients.length,
      ms: Array.isArray(ms) ? ms.length : -1,
      vs: Array.isArray(vs) ? vs.length : -1,
    };
    for (const [name, length] of Object.entries(lists)) {
      if (length !== parameters.length)
        throw new InvalidArgumentError(
          `${this.checks.backend} backend: ${kernel}: ${name} must be an array of ${parameters.length} tensors (one per param)`,
        );
    }
    const why = 'as many elements as its param';
    parameters.forEach((parameter, index) =>
      this.checks.expectCount(gradients[index], parameter.count, kernel, `grads[${index}]`, why),
    );
    const first = ms.map((m, index) =>
      this.checks.checkTensorOf(m, this.owner, kernel, `ms[${index}]`, 'f32', parameters[index].count, why),
    );
    const second = vs.map((v, index) =>
      this.checks.checkTensorOf(v, this.owner, kernel, `vs[${index}]`, 'f32', parameters[index].count, why),
    );
    if (typeof options !== 'object' || options === null)
      throw new InvalidArgumentError(`${this.checks.backend} backend: ${kernel}: options must be an object`);
    const { lr, beta1, beta2, eps, step, weightDecays, gradientScale, skipIfNonFinite, deviceScalars } = options;
    for (const [name, value] of Object.entries({ lr, beta1, beta2, eps }))
      this.checkScalar(kernel, `options.${name}`, value);
    this.checks.checkInteger(step, `${kernel}: options.step`, 1);
    if (!Array.isArray(weightDecays) || weightDecays.length !== parameters.length) {
      throw new InvalidArgumentError(
        `${this.checks.backend} backend: ${kernel}: options.weightDecays must hold one number per param (${parameters.length})`,
      );
    }
    weightDecays.forEach((value, index) => this.checkScalar(kernel, `options.weightDecays[${index}]`, value));
    const scalar = (ref: TensorRef, name: string) =>
      this.checks.checkTensorOf(ref, this.owner, kernel, name, 'f32', 1, 'one element').native;
    let scale: number | NativeTensor;
    if (typeof gradientScale === 'number') {
      this.checkScalar(kernel, 'options.gradientScale', gradientScale);
      scale = gradientScale;
    } else {
      scale = scalar(gradientScale, 'options.gradientScale');
    }
    const native: NativeAdamWMultiOptions = {
      lr,
      beta1,
      beta2,
      eps,
      step,
      weightDecays: [...weightDecays],
      gradientScale: scale,
    };
    if (skipIfNonFinite !== undefined) native.skipIfNonFinite = scalar(skipIfNonFinite, 'options.skipIfNonFinite');
    if (deviceScalars !== undefined) {
      native.deviceScalars = this.checks.checkTensorOf(
        deviceScalars,
        this.owner,
        kernel,
        'options.deviceScalars',
        'f32',
        2 + parameters.length,
        '2 + one per param',
      ).native;
    }
    this.errors.callNative(() =>
      (native.deviceScalars ? this.native.adamwMultiDeviceScalars! : this.native.adamwMulti!).call(
        this.native,
        parameters.map((tensor) => tensor.native),
        gradients.map((tensor) => tensor.native),
        first.map((tensor) => tensor.native),
        second.map((tensor) => tensor.native),
        native,
      ),
    );
  }

  /** A list of dense float tensors owned by this backend. */
  private tensorList(kernel: string, name: string, list: readonly TensorRef[]) {
    if (!Array.isArray(list))
      throw new InvalidArgumentError(`${this.checks.backend} backend: ${kernel}: ${name} must be an array of tensors`);
    return list.map((ref, index) => {
      const checked = this.checks.checkTensor(ref, this.owner, kernel, `${name}[${index}]`, false);
      this.checks.expectFloat(checked, kernel, `${name}[${index}]`);
      return checked;
    });
  }
}
