/**
 * AdamW over the model's parameters: f32 first and second moments per parameter, global
 * gradient norm, and the update — both through core's multi-tensor ops (`sumOfSquaresMulti`,
 * `adamwUpdateMulti`: one or a few launches for every parameter where the backend fuses them,
 * core's per-tensor composition elsewhere).
 */
import {
  adamwUpdateMulti,
  InvalidArgumentError,
  noGrad,
  sumOfSquaresMulti,
  zeros,
  type KernelBackend,
  type Tensor,
} from '@kiln/core';
import type { OptimizerConfig } from '../contracts.js';

/** First (`m`, exp_avg) and second (`v`, exp_avg_sq) moments by parameter name. */
export type AdamWMoments = Map<string, { m: Tensor; v: Tensor }>;

/** Zero moments for every parameter, on the parameter's backend. */
export function createMoments(parameters: ReadonlyMap<string, Tensor>): AdamWMoments {
  const moments: AdamWMoments = new Map();
  for (const [name, parameter] of parameters) {
    moments.set(name, {
      m: zeros(parameter.shape, { dtype: 'f32', backend: parameter.backend }),
      v: zeros(parameter.shape, { dtype: 'f32', backend: parameter.backend }),
    });
  }
  return moments;
}

/** Frees every moment tensor. */
export function disposeMoments(moments: AdamWMoments): void {
  for (const { m, v } of moments.values()) {
    m.dispose();
    v.dispose();
  }
  moments.clear();
}

/**
 * Weight decay applies to matrices (projections, embeddings) only: decaying RMSNorm gains
 * (1-D) toward zero would fight the normalization, as in GPT-2/Llama recipes.
 */
export function appliesWeightDecay(parameter: Tensor): boolean {
  return parameter.rank >= 2;
}

/** Σ‖grad‖² over every parameter that has a gradient, as a device scalar (f32). */
export function gradientNormSquared(parameters: ReadonlyMap<string, Tensor>): Tensor {
  const gradients = [...parameters.values()].flatMap((parameter) => (parameter.grad ? [parameter.grad] : []));
  if (gradients.length === 0) return zeros([], { dtype: 'f32', backend: firstBackend(parameters) });
  return noGrad(() => sumOfSquaresMulti(gradients));
}

/** Frees and clears every parameter's gradient. */
export function clearGradients(parameters: ReadonlyMap<string, Tensor>): void {
  for (const parameter of parameters.values()) {
    parameter.grad?.dispose();
    parameter.grad = null;
  }
}

/** What one AdamW update needs besides the tensors. */
export interface AdamWStepOptions {
  /** Learning rate of this step. */
  lr: number;
  /** Betas, eps and weight decay. */
  optimizer: OptimizerConfig;
  /** 1-based count of updates applied so far, this one included (bias correction). */
  step: number;
  /** Multiplier of every gradient before the update (loss-scale undo × clipping factor). */
  gradientScale: number;
}

/** The parallel lists one multi-tensor AdamW call takes: every parameter with a gradient and moments, in map order. */
export interface AdamWLists {
  /** The parameters updated. */
  updated: Tensor[];
  /** Their gradients. */
  gradients: Tensor[];
  /** Their first moments (m). */
  firstMoments: Tensor[];
  /** Their second moments (v). */
  secondMoments: Tensor[];
  /** Their weight decays (0 where appliesWeightDecay says no). */
  weightDecays: number[];
}

/** Collects the AdamW lists (see AdamWLists) of the parameters that have a gradient this step. */
export function adamwLists(
  parameters: ReadonlyMap<string, Tensor>,
  moments: AdamWMoments,
  optimizer: OptimizerConfig,
): AdamWLists {
  const lists: AdamWLists = { updated: [], gradients: [], firstMoments: [], secondMoments: [], weightDecays: [] };
  for (const [name, parameter] of parameters) {
    const state = moments.get(name);
    if (!parameter.grad || !state) continue;
    lists.updated.push(parameter);
    lists.gradients.push(parameter.grad);
    lists.firstMoments.push(state.m);
    lists.secondMoments.push(state.v);
    lists.weightDecays.push(appliesWeightDecay(parameter) ? optimizer.weightDecay : 0);
  }
  return lists;
}

/** Applies one AdamW update to every parameter that has a gradient (one multi-tensor call). */
export function adamwStep(
  parameters: ReadonlyMap<string, Tensor>,
  moments: AdamWMoments,
  options: AdamWStepOptions,
): void {
  const { lr, optimizer, step, gradientScale } = options;
  const { updated, gradients, firstMoments, secondMoments, weightDecays } = adamwLists(parameters, moments, optimizer);
  noGrad(() =>
    adamwUpdateMulti(updated, gradients, firstMoments, secondMoments, {
      lr,
      beta1: optimizer.beta1,
      beta2: optimizer.beta2,
      eps: optimizer.eps,
      step,
      weightDecays,
      gradientScale,
    }),
  );
}

function firstBackend(parameters: ReadonlyMap<string, Tensor>): KernelBackend {
  const first = parameters.values().next().value;
  if (!first)
    throw new InvalidArgumentError('gradientNormSquared: the model has no parameters', {
      hint: 'Check the model config.',
    });
  return first.backend;
}
