/**
 * Reference multi-tensor kernels. sumOfSquaresMulti: Σ over tensors of Σ x² in float64, rounded
 * once to f32. adamwMulti: per tensor, g = grad · scale in float64 (scale: the number, or the
 * device scalar's f32 value), then the reference AdamW update with that tensor's weight decay;
 * nothing changes when skipIfNonFinite holds NaN or ±Inf. With deviceScalars the step size, the
 * inverse root bias correction and each decay factor are that tensor's (f32) values, in the fused
 * kernels' form p·decay − stepSize·m' / (√v'·inverseRootCorrection + eps), in float64.
 */
import type { AdamWMultiParams, TensorRef } from '@kiln/core';
import { adamwValues } from './adamw.js';
import type { ReferenceMemory } from './memory.js';

/** out = Σ_t Σ_i tensors[t][i]². */
export function referenceSumOfSquaresMulti(
  memory: ReferenceMemory,
  tensors: readonly TensorRef[],
  out: TensorRef,
): void {
  let total = 0;
  for (const tensor of tensors) for (const value of memory.read(tensor)) total += value * value;
  memory.write(out, new Float64Array([total]));
}

/** One AdamW step on every (param, grad, m, v). */
export function referenceAdamwMulti(
  memory: ReferenceMemory,
  params: readonly TensorRef[],
  grads: readonly TensorRef[],
  ms: readonly TensorRef[],
  vs: readonly TensorRef[],
  options: AdamWMultiParams,
): void {
  if (options.skipIfNonFinite && !Number.isFinite(memory.read(options.skipIfNonFinite)[0])) return;
  const scale =
    typeof options.gradientScale === 'number' ? options.gradientScale : memory.read(options.gradientScale)[0];
  params.forEach((param, index) => {
    const parameters = memory.read(param);
    const first = memory.read(ms[index]);
    const second = memory.read(vs[index]);
    const gradient = memory.read(grads[index]).map((value) => value * scale);
    const { lr, beta1, beta2, eps, step } = options;
    if (options.deviceScalars) {
      deviceScalarAdamwValues(parameters, gradient, first, second, options, memory.read(options.deviceScalars), index);
    } else {
      adamwValues(parameters, gradient, first, second, {
        lr,
        beta1,
        beta2,
        eps,
        step,
        weightDecay: options.weightDecays[index],
      });
    }
    memory.write(param, parameters);
    memory.write(ms[index], first);
    memory.write(vs[index], second);
  });
}

/** The AdamW update of one tensor with stepSize, inverseRootCorrection and decay from the device scalars (in place, float64). */
function deviceScalarAdamwValues(
  parameters: Float64Array,
  gradient: Float64Array,
  first: Float64Array,
  second: Float64Array,
  options: AdamWMultiParams,
  scalars: Float64Array,
  index: number,
): void {
  const [stepSize, inverseRootCorrection] = scalars;
  const decay = scalars[2 + index];
  for (let i = 0; i < parameters.length; i++) {
    first[i] = options.beta1 * first[i] + (1 - options.beta1) * gradient[i];
    second[i] = options.beta2 * second[i] + (1 - options.beta2) * gradient[i] * gradient[i];
    parameters[i] =
      parameters[i] * decay - (stepSize * first[i]) / (Math.sqrt(second[i]) * inverseRootCorrection + options.eps);
  }
}
