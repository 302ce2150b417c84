/**
 * Clipping and AdamW without a host round trip, for backends that capture device graphs: the clip
 * coefficient is computed on the device from the squared gradient norm (same formula and eps as
 * the host path: norm = √Σg² / lossScale, coef = norm > maxNorm ? maxNorm / (norm + 1e-6) : 1),
 * the update is guarded on the device (a non-finite loss or norm changes nothing), and the
 * per-step scalars (learning rate, bias corrections, decay factors) are read from a small f32
 * tensor the host rewrites before each step (adamwDeviceScalars). The same ops run eagerly and
 * inside the captured step, so the two give the same bits.
 *
 * Deferred reads: each step also writes its [loss, Σ‖grad‖²] into a device record — a ring of the
 * last MAX_DEFERRED_STEPS steps plus the count of updates the device applied since the host last
 * read it — so the host reads the values only when it needs them (read(): one download for every
 * unread step). The bias corrections depend on that count (a skipped step does not advance AdamW's
 * t), which the host does not know between reads: stage() writes one row of [step size,
 * 1/√(1−β2^t)] per possible t (t0 + 0 … t0 + unread), and the device picks the row at its count
 * (a one-hot product and sum: the picked values' bits unchanged), so the weights are the same bits
 * whether the host reads every step or every N steps.
 */
import {
  adamwDeviceScalars,
  adamwUpdateMulti,
  add,
  concat,
  div,
  equal,
  greater,
  InvalidArgumentError,
  KilnError,
  mul,
  noGrad,
  reshape,
  slice,
  sqrt,
  sum,
  tensor,
  tidy,
  where,
  writeSlice,
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

/** The most steps whose loss and gradient norm stay on the device unread (the record's ring length). */
export const MAX_DEFERRED_STEPS = 64;

/** What read() returns: the unread steps, oldest first, and the updates the device applied in them. */
export interface DeferredValues {
  /** Each unread step's number (StepBatch.step) and its [loss, Σ‖grad‖²]. */
  steps: { step: number; loss: number; normSquared: number }[];
  /** How many of them the device applied (finite loss and norm). */
  applied: number;
}

/** See the file header: the persistent scalars and record tensors and the ops that read and write them. */
export class DeviceOptimizer {
  /** f32 [2·MAX_DEFERRED_STEPS + trainable params]: the rows of [stepSize, inverseRootCorrection] per applied-update count, then the decays. */
  private scalars: Tensor | undefined;
  /** The host copy of `scalars` (rewritten and uploaded by stage()). */
  private hostScalars = new Float32Array(0);
  /** f32 [2·MAX_DEFERRED_STEPS + 1]: the ring of [loss, normSquared] (newest last), then the applied-update count since the last read. */
  private record: Tensor | undefined;
  /** f32 [MAX_DEFERRED_STEPS]: 0, 1, … (the row numbers the count is compared with). */
  private positions: Tensor | undefined;
  /** The numbers of the steps recorded since the last read, oldest first. */
  private unreadSteps: number[] = [];

  constructor(private readonly backend: KernelBackend) {}

  /** Steps whose values are on the device, not yet read. */
  get unread(): number {
    return this.unreadSteps.length;
  }

  /**
   * Writes this step's scalars for every trainable parameter (before the step runs; never inside a
   * capture): the bias-correction rows for AdamW steps nextStep … nextStep + unread (the device
   * applied between 0 and `unread` updates since the host last read its count), and the decays of `lr`.
   */
  stage(
    parameters: ReadonlyMap<string, Tensor>,
    moments: AdamWMoments,
    optimizer: OptimizerConfig,
    lr: number,
    nextStep: number,
  ): void {
    const weightDecays = [...parameters]
      .filter(([name, parameter]) => parameter.requiresGrad && moments.has(name))
      .map(([, parameter]) => (appliesWeightDecay(parameter) ? optimizer.weightDecay : 0));
    const length = 2 * MAX_DEFERRED_STEPS + weightDecays.length;
    if (this.scalars && this.scalars.size !== length) this.releaseScalars();
    if (!this.scalars) {
      this.scalars = zeros([length], { dtype: 'f32', backend: this.backend });
      this.hostScalars = new Float32Array(length);
    }
    this.record ??= zeros([2 * MAX_DEFERRED_STEPS + 1], { dtype: 'f32', backend: this.backend });
    this.positions ??= tensor(
      Float32Array.from({ length: MAX_DEFERRED_STEPS }, (_, index) => index),
      [MAX_DEFERRED_STEPS],
      { dtype: 'f32', backend: this.backend },
    );
    const { beta1, beta2 } = optimizer;
    // Row 0 and the decays from core (which validates the inputs), the later rows by its formula.
    const first = adamwDeviceScalars({ lr, beta1, beta2, step: nextStep, weightDecays });
    this.hostScalars.set(first.subarray(0, 2), 0);
    this.hostScalars.set(first.subarray(2), 2 * MAX_DEFERRED_STEPS);
    for (let row = 1; row <= this.unread; row++) {
      const [stepSize, inverseRootCorrection] = adamwStepScalars(lr, beta1, beta2, nextStep + row);
      this.hostScalars[2 * row] = stepSize;
      this.hostScalars[2 * row + 1] = inverseRootCorrection;
    }
    const values = this.hostScalars;
    this.backend.upload(
      this.scalars.storage.buffer,
      new Uint8Array(values.buffer, values.byteOffset, values.byteLength),
      0,
    );
  }

  /** Notes that step `step` ran apply() (its values are in the record, unread). */
  recorded(step: number): void {
    this.unreadSteps.push(step);
  }

  /** Reads the record (waits for the device): the unread steps' values, oldest first, and the applied count; then zeroes the count. */
  async read(): Promise<DeferredValues> {
    if (!this.record || this.unread === 0) return { steps: [], applied: 0 };
    const values = await this.record.data();
    const ring = 2 * MAX_DEFERRED_STEPS;
    const first = ring - 2 * this.unread;
    const steps = this.unreadSteps.map((step, index) => ({
      step,
      loss: values[first + 2 * index],
      normSquared: values[first + 2 * index + 1],
    }));
    const applied = values[ring];
    this.unreadSteps = [];
    const zero = new Float32Array(1);
    this.backend.upload(this.record.storage.buffer, new Uint8Array(zero.buffer), ring * 4);
    return { steps, applied };
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
    const rows = 2 * MAX_DEFERRED_STEPS;
    if (!this.scalars || !this.record || !this.positions || this.scalars.size !== rows + updated.length) {
      throw new InvalidArgumentError(
        `DeviceOptimizer.apply: stage() wrote scalars for ${this.scalars ? this.scalars.size - rows : 0} trainable parameters, but ${updated.length} have a gradient this step`,
        { hint: 'Every trainable parameter must take part in the loss (or be frozen: requiresGrad false).' },
      );
    }
    if (this.unread >= MAX_DEFERRED_STEPS) {
      throw new KilnError(
        `DeviceOptimizer.apply: ${this.unread} steps are unread; the record holds ${MAX_DEFERRED_STEPS}`,
        'KILN_ERROR',
        { hint: 'Read the record (read()) before running another step.' },
      );
    }
    const { scalars: staged, record, positions } = this;
    noGrad(() =>
      tidy(() => {
        // loss·0 is NaN exactly when the loss is not finite: the guard is non-finite when either value is.
        const guard = add(mul(loss, 0), normSquared);
        const count = slice(record, [rows], [1]);
        // The row of the device's applied-update count: a one-hot mask times the rows, summed (x·1 + 0 + … = x exactly).
        const pick = reshape(equal(positions, count), [MAX_DEFERRED_STEPS, 1]);
        const stepScalars = sum(mul(reshape(slice(staged, [0], [rows]), [MAX_DEFERRED_STEPS, 2]), pick), 0);
        const scalars = concat([stepScalars, slice(staged, [rows], [updated.length])], 0);
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
        // The record: drop the oldest pair, append this step's, count the update when the guard let it run.
        const applied = equal(mul(guard, 0), 0);
        const next = concat(
          [slice(record, [2], [rows - 2]), reshape(loss, [1]), reshape(normSquared, [1]), add(count, applied)],
          0,
        );
        writeSlice(record, next, [0]);
      }),
    );
  }

  /** Frees the scalars, the record (unread values are lost) and the positions. */
  release(): void {
    this.releaseScalars();
    this.record?.dispose();
    this.record = undefined;
    this.positions?.dispose();
    this.positions = undefined;
    this.unreadSteps = [];
  }

  private releaseScalars(): void {
    this.scalars?.dispose();
    this.scalars = undefined;
  }
}

/**
 * adamwDeviceScalars' first two values for step `step` without its argument checks (stage() calls
 * it up to MAX_DEFERRED_STEPS times a step on inputs core has just checked): the same f64
 * expressions, so the same f32 bits (device-optimizer.test.ts compares them).
 */
export function adamwStepScalars(lr: number, beta1: number, beta2: number, step: number): [number, number] {
  return [Math.fround(lr / (1 - beta1 ** step)), Math.fround(1 / Math.sqrt(1 - beta2 ** step))];
}

/** The gradient multiplier (clip coefficient / loss scale) as a one-element f32 tensor, or a number when nothing is clipped. */
function clipScale(normSquared: Tensor, maxNorm: number, lossScale: number): Tensor | number {
  if (!(maxNorm > 0)) return 1 / lossScale;
  const norm = lossScale === 1 ? sqrt(normSquared) : div(sqrt(normSquared), lossScale);
  const coefficient = where(greater(norm, maxNorm), div(maxNorm, add(norm, CLIP_EPSILON)), 1);
  return lossScale === 1 ? coefficient : div(coefficient, lossScale);
}
