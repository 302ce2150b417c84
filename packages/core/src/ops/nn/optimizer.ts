/** The fused AdamW update (in place on the parameter and its moments). */
import type { AdamWParams } from '../../backend/kernel-backend.js';
import { DTypeError, InvalidArgumentError, ShapeError } from '../../errors.js';
import { assertFloat, commonBackend } from '../../engine/dispatch.js';
import { shapesEqual } from '../../tensor/shape.js';
import type { Tensor } from '../../tensor/tensor.js';
import { castTo } from '../kernel-calls.js';
import { inDType, resolveFused } from './fused-call.js';
import { checkNumber, checkOptions, checkTensor, describeValue, type OptionCheck } from '../../validate.js';

const ADAMW_PARAMS: { readonly [K in keyof AdamWParams]-?: OptionCheck } = {
  lr: (op, name, value) => void checkNumber(op, name, value, { finite: true, min: 0 }),
  beta1: (op, name, value) => void checkNumber(op, name, value, { finite: true, min: 0, max: 0.9999999999999999 }),
  beta2: (op, name, value) => void checkNumber(op, name, value, { finite: true, min: 0, max: 0.9999999999999999 }),
  eps: (op, name, value) => void checkNumber(op, name, value, { finite: true, min: 0, exclusiveMin: true }),
  weightDecay: (op, name, value) => void checkNumber(op, name, value, { finite: true, min: 0 }),
  step: (op, name, value) => void checkNumber(op, name, value, { integer: true, min: 1, max: Number.MAX_SAFE_INTEGER }),
};

/** One AdamW step: updates `param`, `m` and `v` in place from `grad` (m and v are f32). */
export function adamwUpdate(param: Tensor, grad: Tensor, m: Tensor, v: Tensor, params: AdamWParams): void {
  checkTensor('adamwUpdate', 'param', param);
  checkTensor('adamwUpdate', 'grad', grad);
  checkTensor('adamwUpdate', 'm', m);
  checkTensor('adamwUpdate', 'v', v);
  if (typeof params !== 'object' || params === null) {
    throw new InvalidArgumentError(
      `adamwUpdate: params must be an object { lr, beta1, beta2, eps, weightDecay, step }, got ${describeValue(params)}`,
    );
  }
  checkOptions<AdamWParams>('adamwUpdate', 'params', params, ADAMW_PARAMS);
  for (const key of Object.keys(ADAMW_PARAMS) as (keyof AdamWParams)[]) {
    if (params[key] === undefined)
      throw new InvalidArgumentError(`adamwUpdate: params.${key} is missing`, {
        hint: 'Pass every AdamW hyper-parameter: lr, beta1, beta2, eps, weightDecay, step.',
      });
  }
  commonBackend('adamw', [param, grad, m, v]);
  assertFloat('adamw', param, 'parameter');
  assertFloat('adamw', grad, 'gradient');
  for (const [name, tensor] of [
    ['gradient', grad],
    ['m', m],
    ['v', v],
  ] as const) {
    if (!shapesEqual(tensor.shape, param.shape)) {
      throw new ShapeError(`adamw: ${name} ${tensor.describe()} must match parameter ${param.describe()}`);
    }
  }
  if (m.dtype !== 'f32' || v.dtype !== 'f32')
    throw new DTypeError(`adamw: moments must be f32, got m ${m.describe()}, v ${v.describe()}`);
  const checks: Array<[string, number, boolean]> = [
    ['lr', params.lr, params.lr >= 0],
    ['beta1', params.beta1, params.beta1 >= 0 && params.beta1 < 1],
    ['beta2', params.beta2, params.beta2 >= 0 && params.beta2 < 1],
    ['eps', params.eps, params.eps > 0],
    ['weightDecay', params.weightDecay, params.weightDecay >= 0],
    ['step', params.step, Number.isInteger(params.step) && params.step >= 1],
  ];
  for (const [name, value, valid] of checks) {
    if (!valid || !Number.isFinite(value)) throw new InvalidArgumentError(`adamw: ${name} = ${value} is out of range`);
  }
  if (param.size === 0) return;
  const { kernel, computeDType } = resolveFused(param.backend, 'adamw', param.dtype);
  if (computeDType === param.dtype) {
    const operands = inDType([grad], computeDType);
    kernel(param.ref(), operands.tensors[0].ref(), m.ref(), v.ref(), params);
    operands.release();
    return;
  }
  // The backend lacks this dtype: update an f32 copy and write it back into the parameter.
  const wide = castTo(param, 'f32');
  const operands = inDType([grad], 'f32');
  kernel(wide.ref(), operands.tensors[0].ref(), m.ref(), v.ref(), params);
  operands.release();
  param.backend.cast(wide.ref(), param.ref());
  wide.dispose();
}
