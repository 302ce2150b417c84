/**
 * Clipping and AdamW without a host round trip, for backends that capture device graphs: the clip
 * coefficient is computed on the device from the squared gradient norm (same formula and eps as
 * the host path: norm = √Σg² / lossScale, coef = norm > maxNorm ? maxNorm / (norm + 1e-6) : 1),
 * the update is guarded on the device (a non-finite loss or norm changes nothing), and the
 * per-step scalars (learning rate, bias corrections, decay factors) are read from a small f32
 * tensor the host rewrites before each step (adamwDeviceScalars). The same ops run eagerly and
 * inside the captured step, so the two give the same bits.
 */
import {
  adamwDeviceScalars,
  adamwUpdateMulti,
  add,
  div,
  greater,
  InvalidArgumentError,
  mul,
  noGrad,
  sqrt,
  tidy,
  where,
  zeros,
  type KernelBackend,
  type Tensor,
} from '@kiln/core';
import type { OptimizerConfig } from '../contracts.js';
import { adamwLists, appliesWeightDecay, type AdamWMoments } from './optimizer.js';

/** The clip epsilon of the trainer's global-norm clip (host and device paths). */
export const CLIP_EPSILON = 1e-6;

/** Whether the step's optimizer runs from device scalars: on backends that capture graphs, eagerly and graphed alike. */
export function usesDeviceOptimizer(backend: KernelBackend): boolean {
  return backend.capabilities.graphCapture === true;
}

/** See the file header: the persistent scalars tensor and the ops that read it. */
export class DeviceOptimizer {
  private scalars: Tensor | undefined;

  constructor(private readonly backend: KernelBackend) {}

  /** Writes this step's [stepSize, inverseRootCorrection, decays…] for every trainable parameter (before the step runs; never inside a capture). */
  stage(
    parameters: ReadonlyMap<string, Tensor>,
    moments: AdamWMoments,
    optimizer: OptimizerConfig,
    lr: number,
    step: number,
  ): void {
    const weightDecays = [...parameters]
      .filter(([name, parameter]) => parameter.requiresGrad && moments.has(name))
      .map(([, parameter]) => (appliesWeightDecay(parameter) ? optimizer.weightDecay : 0));
    const values = adamwDeviceScalars({ lr, beta1: optimizer.beta1, beta2: optimizer.beta2, step, weightDecays });
    if (this.scalars && this.scalars.size !== values.length) this.release();
    this.scalars ??= zeros([values.length], { dtype: 'f32', backend: this.backend });
    this.backend.upload(
      this.scalars.storage.buffer,
      new Uint8Array(values.buffer, values.byteOffset, values.byteLength),
      0,
    );
  }

  /**
   * Clips and applies AdamW to every parameter with a gradient, from the step's mean loss and
   * Σ‖grad‖² (device scalars); `lr` and `step` only satisfy validation (the kernel reads the staged scalars).
   */
  apply(
    parameters: ReadonlyMap<string, Tensor>,
    moments: AdamWMoments,
    options: {
      optimizer: OptimizerConfig;
      lossScale: number;
      lr: number;
      step: number;
      loss: Tensor;
      normSquared: Tensor;
    },
  ): void {
    const { optimizer, lossScale, loss, normSquared } = options;
    const { updated, gradients, firstMoments, secondMoments, weightDecays } = adamwLists(
      parameters,
      moments,
      optimizer,
    );
    if (!this.scalars || this.scalars.size !== 2 + updated.length) {
      throw new InvalidArgumentError(
        `DeviceOptimizer.apply: stage() wrote scalars for ${this.scalars ? this.scalars.size - 2 : 0} trainable parameters, but ${updated.length} have a gradient this step`,
        { hint: 'Every trainable parameter must take part in the loss (or be frozen: requiresGrad false).' },
      );
    }
    const scalars = this.scalars;
    noGrad(() =>
      tidy(() => {
        // loss·0 is NaN exactly when the loss is not finite: the guard is non-finite when either value is.
        const guard = add(mul(loss, 0), normSquared);
        adamwUpdateMulti(updated, gradients, firstMoments, secondMoments, {
          lr: options.lr,
          beta1: optimizer.beta1,
          beta2: optimizer.beta2,
          eps: optimizer.eps,
          step: options.step,
          weightDecays,
          gradientScale: clipScale(normSquared, optimizer.gradClip, lossScale),
          skipIfNonFinite: guard,
          deviceScalars: scalars,
        });
      }),
    );
  }

  /** Frees the scalars tensor. */
  release(): void {
    this.scalars?.dispose();
    this.scalars = undefined;
  }
}

/** The gradient multiplier (clip coefficient / loss scale) as a one-element f32 tensor, or a number when nothing is clipped. */
function clipScale(normSquared: Tensor, maxNorm: number, lossScale: number): Tensor | number {
  if (!(maxNorm > 0)) return 1 / lossScale;
  const norm = lossScale === 1 ? sqrt(normSquared) : div(sqrt(normSquared), lossScale);
  const coefficient = where(greater(norm, maxNorm), div(maxNorm, add(norm, CLIP_EPSILON)), 1);
  return lossScale === 1 ? coefficient : div(coefficient, lossScale);
}
