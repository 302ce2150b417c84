/**
 * Multi-tensor optimizer ops: the global sum of squares of many tensors (a gradient norm) and one
 * AdamW step over many parameters, each one fused kernel call when the backend has it (one or a
 * few launches for all tensors) and core's per-tensor composition otherwise.
 */
import type { AdamWMultiParams, KernelBackend, TensorRef } from '../../backend/kernel-backend.js';
import type { DType } from '../../dtype.js';
import { DTypeError, InvalidArgumentError, ShapeError } from '../../errors.js';
import { allocateTensor, assertFloat, commonBackend, composedKernel, fusedKernel } from '../../engine/dispatch.js';
import { shapesEqual } from '../../tensor/shape.js';
import type { Tensor } from '../../tensor/tensor.js';
import {
  checkNumber,
  checkOptions,
  checkTensor,
  checkTensorList,
  describeValue,
  type OptionCheck,
} from '../../validate.js';

/** Options of adamwUpdateMulti: AdamW's hyper-parameters, a weight decay per tensor, and an optional device-side scale and guard. */
export interface AdamWMultiOptions {
  /** Learning rate for this step. */
  lr: number;
  /** First-moment decay, in [0, 1). */
  beta1: number;
  /** Second-moment decay, in [0, 1). */
  beta2: number;
  /** Denominator epsilon (> 0). */
  eps: number;
  /** 1-based step number (bias correction). */
  step: number;
  /** Decoupled weight decay of each parameter, in the order of `params` (≥ 0 each). */
  weightDecays: readonly number[];
  /** Optional (default 1): multiplier of every gradient (clip factor × 1/loss scale), a number or a one-element f32 tensor read on the device. */
  gradientScale?: number | Tensor;
  /** Optional: a one-element f32 tensor (e.g. the squared gradient norm); when it holds NaN or ±Inf nothing is updated. */
  skipIfNonFinite?: Tensor;
  /** Optional: f32 [2 + params.length] from adamwDeviceScalars, read on the device in place of lr, step and weightDecays (rewrite it between CUDA-graph replays). */
  deviceScalars?: Tensor;
}

/** What adamwDeviceScalars needs: the step's hyper-parameters. */
export interface AdamWDeviceScalarInputs {
  /** Learning rate for this step. */
  lr: number;
  /** First-moment decay. */
  beta1: number;
  /** Second-moment decay. */
  beta2: number;
  /** 1-based step number. */
  step: number;
  /** Decoupled weight decay of each parameter. */
  weightDecays: readonly number[];
}

/**
 * The contents of adamwUpdateMulti's options.deviceScalars: [lr/(1−β1^step), 1/√(1−β2^step),
 * 1 − lr·weightDecays[i]…], each computed in f64 and rounded to f32 once (as the fused kernels do).
 */
export function adamwDeviceScalars(inputs: AdamWDeviceScalarInputs): Float32Array {
  const op = 'adamwDeviceScalars';
  if (typeof inputs !== 'object' || inputs === null) {
    throw new InvalidArgumentError(
      `${op}: inputs must be an object { lr, beta1, beta2, step, weightDecays }, got ${describeValue(inputs)}`,
    );
  }
  checkOptions<AdamWDeviceScalarInputs>(op, 'inputs', inputs, DEVICE_SCALAR_INPUTS);
  for (const key of ['lr', 'beta1', 'beta2', 'step', 'weightDecays'] as const) {
    if (inputs[key] === undefined)
      throw new InvalidArgumentError(`${op}: inputs.${key} is missing`, {
        hint: 'Pass lr, beta1, beta2, step and weightDecays (one per parameter).',
      });
  }
  const { lr, beta1, beta2, step, weightDecays } = inputs;
  if (!Array.isArray(weightDecays)) {
    throw new InvalidArgumentError(
      `${op}: inputs.weightDecays must be an array of numbers (one per parameter), got ${describeValue(weightDecays)}`,
    );
  }
  weightDecays.forEach((value, index) =>
    checkNumber(op, `inputs.weightDecays[${index}]`, value, { finite: true, min: 0 }),
  );
  const values = new Float32Array(2 + weightDecays.length);
  values[0] = lr / (1 - beta1 ** step);
  values[1] = 1 / Math.sqrt(1 - beta2 ** step);
  weightDecays.forEach((decay, index) => {
    values[2 + index] = 1 - lr * decay;
  });
  return values;
}

const HYPER_PARAMETERS: { readonly [K in keyof AdamWMultiOptions]-?: OptionCheck } = {
  lr: (op, name, value) => void checkNumber(op, name, value, { finite: true, min: 0 }),
  beta1: (op, name, value) => void checkNumber(op, name, value, { finite: true, min: 0, max: 0.9999999999999999 }),
  beta2: (op, name, value) => void checkNumber(op, name, value, { finite: true, min: 0, max: 0.9999999999999999 }),
  eps: (op, name, value) => void checkNumber(op, name, value, { finite: true, min: 0, exclusiveMin: true }),
  step: (op, name, value) => void checkNumber(op, name, value, { integer: true, min: 1, max: Number.MAX_SAFE_INTEGER }),
  weightDecays: () => undefined,
  gradientScale: () => undefined,
  skipIfNonFinite: () => undefined,
  deviceScalars: () => undefined,
};

const DEVICE_SCALAR_INPUTS: { readonly [K in keyof AdamWDeviceScalarInputs]-?: OptionCheck } = {
  lr: HYPER_PARAMETERS.lr,
  beta1: HYPER_PARAMETERS.beta1,
  beta2: HYPER_PARAMETERS.beta2,
  step: HYPER_PARAMETERS.step,
  weightDecays: () => undefined,
};

/** Σ over `tensors` of Σ x², as a new f32 scalar (f32 accumulation, deterministic order). Float tensors of any dtype mix on one backend. */
export function sumOfSquaresMulti(tensors: readonly Tensor[]): Tensor {
  const list = checkTensorList('sumOfSquaresMulti', 'tensors', tensors, 1);
  const backend = commonBackend('sumOfSquaresMulti', list);
  list.forEach((tensor, index) => assertFloat('sumOfSquaresMulti', tensor, `tensors[${index}]`));
  const out = allocateTensor(backend, [], 'f32');
  multiKernel(
    backend,
    'sumOfSquaresMulti',
    list.map((tensor) => tensor.dtype),
  )(
    list.map((tensor) => tensor.ref()),
    out.ref(),
  );
  return out;
}

/** One AdamW step on every params[i] (in place, with its f32 moments ms[i], vs[i]) from grads[i] × gradientScale. */
export function adamwUpdateMulti(
  params: readonly Tensor[],
  grads: readonly Tensor[],
  ms: readonly Tensor[],
  vs: readonly Tensor[],
  options: AdamWMultiOptions,
): void {
  const op = 'adamwUpdateMulti';
  const lists = {
    params: checkTensorList(op, 'params', params, 0),
    grads: checkTensorList(op, 'grads', grads, 0),
    ms: checkTensorList(op, 'ms', ms, 0),
    vs: checkTensorList(op, 'vs', vs, 0),
  };
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError(
      `${op}: options must be an object { lr, beta1, beta2, eps, step, weightDecays, gradientScale?, skipIfNonFinite? }, got ${describeValue(options)}`,
    );
  }
  checkOptions<AdamWMultiOptions>(op, 'options', options, HYPER_PARAMETERS);
  for (const key of ['lr', 'beta1', 'beta2', 'eps', 'step', 'weightDecays'] as const) {
    if (options[key] === undefined)
      throw new InvalidArgumentError(`${op}: options.${key} is missing`, {
        hint: 'Pass lr, beta1, beta2, eps, step and weightDecays.',
      });
  }
  const count = lists.params.length;
  for (const name of ['grads', 'ms', 'vs'] as const) {
    if (lists[name].length !== count) {
      throw new ShapeError(`${op}: ${name} holds ${lists[name].length} tensors but params holds ${count}`, {
        hint: 'Pass one gradient and two moments per parameter, in the same order.',
      });
    }
  }
  const decays = options.weightDecays;
  if (!Array.isArray(decays) || decays.length !== count) {
    throw new InvalidArgumentError(
      `${op}: options.weightDecays must be an array of ${count} numbers (one per parameter), got ${describeValue(decays)}`,
    );
  }
  decays.forEach((value, index) => checkNumber(op, `options.weightDecays[${index}]`, value, { finite: true, min: 0 }));
  if (count === 0) return;
  const scale = options.gradientScale ?? 1;
  const scalars: Tensor[] = [];
  if (typeof scale === 'number') checkNumber(op, 'options.gradientScale', scale, { finite: true });
  else scalars.push(checkDeviceScalar(op, 'options.gradientScale', scale));
  if (options.skipIfNonFinite !== undefined)
    scalars.push(checkDeviceScalar(op, 'options.skipIfNonFinite', options.skipIfNonFinite));
  const deviceScalars =
    options.deviceScalars === undefined ? undefined : checkDeviceScalarList(op, options.deviceScalars, 2 + count);
  if (deviceScalars) scalars.push(deviceScalars);
  const backend = commonBackend(op, [...lists.params, ...lists.grads, ...lists.ms, ...lists.vs, ...scalars]);
  for (let index = 0; index < count; index++) {
    const param = lists.params[index];
    assertFloat(op, param, `params[${index}]`);
    assertFloat(op, lists.grads[index], `grads[${index}]`);
    for (const name of ['grads', 'ms', 'vs'] as const) {
      const tensor = lists[name][index];
      if (!shapesEqual(tensor.shape, param.shape))
        throw new ShapeError(
          `${op}: ${name}[${index}] ${tensor.describe()} must match params[${index}] ${param.describe()}`,
        );
    }
    if (lists.ms[index].dtype !== 'f32' || lists.vs[index].dtype !== 'f32') {
      throw new DTypeError(
        `${op}: moments must be f32, got ms[${index}] ${lists.ms[index].describe()}, vs[${index}] ${lists.vs[index].describe()}`,
      );
    }
  }
  const dtypes = [...lists.params, ...lists.grads].map((tensor) => tensor.dtype);
  const kernelOptions: AdamWMultiParams = {
    lr: options.lr,
    beta1: options.beta1,
    beta2: options.beta2,
    eps: options.eps,
    step: options.step,
    weightDecays: [...decays],
    gradientScale: typeof scale === 'number' ? scale : scale.ref(),
    ...(options.skipIfNonFinite ? { skipIfNonFinite: options.skipIfNonFinite.ref() } : {}),
    ...(deviceScalars ? { deviceScalars: deviceScalars.ref() } : {}),
  };
  const refs = (list: Tensor[]): TensorRef[] => list.map((tensor) => tensor.ref());
  const nativeForm = !deviceScalars || backend.capabilities.adamwMultiDeviceScalars === true;
  multiKernel(backend, 'adamwMulti', dtypes, nativeForm)(
    refs(lists.params),
    refs(lists.grads),
    refs(lists.ms),
    refs(lists.vs),
    kernelOptions,
  );
}

/** A one-element f32 tensor. */
function checkDeviceScalar(op: string, name: string, value: unknown): Tensor {
  const tensor = checkTensor(op, name, value);
  if (tensor.size !== 1 || tensor.dtype !== 'f32') {
    throw new InvalidArgumentError(
      `${op}: ${name} must be a number or a one-element f32 tensor, got ${tensor.describe()}`,
      { hint: 'Reshape or cast it: cast(reshape(x, []), "f32").' },
    );
  }
  return tensor;
}

/** An f32 tensor of `length` elements (adamwUpdateMulti's deviceScalars). */
function checkDeviceScalarList(op: string, value: unknown, length: number): Tensor {
  const tensor = checkTensor(op, 'options.deviceScalars', value);
  if (tensor.size !== length || tensor.dtype !== 'f32') {
    throw new InvalidArgumentError(
      `${op}: options.deviceScalars must be an f32 tensor of ${length} elements (2 + one per param), got ${tensor.describe()}`,
      {
        hint: 'Fill it with adamwDeviceScalars({ lr, beta1, beta2, step, weightDecays }).',
      },
    );
  }
  return tensor;
}

/** The backend's multi-tensor kernel when it runs every dtype involved (and the options' form, `nativeForm`) natively, else core's composition. */
function multiKernel<K extends 'sumOfSquaresMulti' | 'adamwMulti'>(
  backend: KernelBackend,
  name: K,
  dtypes: readonly DType[],
  nativeForm = true,
): NonNullable<KernelBackend[K]> {
  const native =
    nativeForm &&
    typeof backend[name] === 'function' &&
    dtypes.every((dtype) => backend.capabilities.supports(name, dtype));
  return native ? fusedKernel(backend, name) : composedKernel(backend, name);
}
