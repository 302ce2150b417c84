/**
 * `kiln train --profile`: times every kernel of a few steps of the real run (after a couple of
 * warm-up steps, so allocation and first-launch costs stay out) and keeps the profile for the
 * report. Steps are delimited by the trainer's 'step' events; an evaluation or checkpoint that
 * falls inside the window is counted in the wall time.
 */
import type { KernelBackend } from '@kiln/core';
import type { TrainEvent } from '@kiln/trainer';
import { kernelTimer, timingProfile, type KernelProfile } from './kernel-profile.js';

/** Steps left untimed first. */
export const PROFILE_WARMUP_STEPS = 2;
/** Steps timed. */
export const PROFILE_STEPS = 3;

/** A profiler following a training run's events. */
export interface TrainProfiler {
  /** The backend to train on (a timing proxy where the device cannot time its kernels). */
  backend: KernelBackend;
  /** Feed every trainer event through this. */
  handle(event: TrainEvent): void;
  /** The profile once the timed steps are done (or the run ended after at least one timed step), else undefined. */
  result(): KernelProfile | undefined;
}

/** Starts following a run on `backend`: untimed until step start + warmup, then `steps` timed steps. */
export function createTrainProfiler(
  backend: KernelBackend,
  options: { warmup?: number; steps?: number } = {},
): TrainProfiler {
  const timer = kernelTimer(backend);
  const warmup = options.warmup ?? PROFILE_WARMUP_STEPS;
  const wanted = options.steps ?? PROFILE_STEPS;
  let seen = 0;
  let timed = 0;
  let startedAt: number | undefined;
  let profile: KernelProfile | undefined;
  const finish = (): void => {
    if (startedAt === undefined || profile !== undefined || timed === 0) return;
    const wallMs = performance.now() - startedAt;
    profile = timingProfile(timer.stop(), {
      model: null,
      backend: backend.name,
      timing: timer.timing,
      threads: null,
      steps: timed,
      wallMs,
    });
  };
  return {
    backend: timer.backend,
    handle(event) {
      if (event.type === 'end') finish();
      if (event.type !== 'step' || profile !== undefined) return;
      seen++;
      if (startedAt !== undefined) timed++;
      if (timed >= wanted) finish();
      else if (seen === warmup && startedAt === undefined) {
        timer.start();
        startedAt = performance.now();
      }
    },
    result: () => profile,
  };
}
