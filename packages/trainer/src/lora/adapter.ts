/**
 * A LoRA adapter on a model: for each target linear W [out, in], A [r, in] and B [out, r], so the
 * layer computes x·Wᵀ + (alpha/r)·(dropout(x)·Aᵀ)·Bᵀ (PEFT's definition). The base stays frozen;
 * the adapter's parameters (f32, requireGrad) are named as PEFT names them,
 * `base_model.model.<module path>.lora_A.weight` / `.lora_B.weight`. A new adapter starts as PEFT's
 * does — A kaiming-uniform (bound 1/√in, from kiln's Philox stream), B zero — so it changes nothing
 * until trained.
 */
import { add, keep, matmul, mul, noGrad, randomUniform, tidy, zeros, type Tensor } from '@kiln/core';
import { DecoderModel as DecoderModelClass, type DecoderModel, type ModelAdapter } from '../model/decoder.js';
import type { LinearAdapter } from '../model/linear.js';
import { checkLoraConfig, targetModulePaths, type LoraConfig } from './lora-config.js';

/** PEFT's key of a module's A or B matrix. */
export function peftKey(module: string, matrix: 'A' | 'B'): string {
  return `base_model.model.${module}.lora_${matrix}.weight`;
}

/** A LoRA adapter: its config, per-module matrices, and its parameters by PEFT name. */
export class LoraAdapter implements ModelAdapter, Disposable {
  /** Rank, alpha, dropout, targets. */
  readonly config: LoraConfig;
  /** Per target module path: A, B, scale, dropout. */
  readonly modules: Map<string, LinearAdapter>;
  /** Every A and B by PEFT name (the trainable parameters), in module order. */
  readonly parameters: Map<string, Tensor>;

  /** Wraps A/B tensors by module path (the adapter takes ownership). */
  constructor(config: LoraConfig, matrices: Map<string, { a: Tensor; b: Tensor }>) {
    this.config = config;
    this.modules = new Map();
    this.parameters = new Map();
    let index = 0;
    for (const [module, { a, b }] of matrices) {
      this.modules.set(module, { a, b, scale: config.alpha / config.rank, dropout: config.dropout, index: index++ });
      this.parameters.set(peftKey(module, 'A'), a);
      this.parameters.set(peftKey(module, 'B'), b);
    }
  }

  /** Frees every A and B. */
  dispose(): void {
    for (const parameter of this.parameters.values()) parameter.dispose();
  }

  /** `using` support. */
  [Symbol.dispose](): void {
    this.dispose();
  }
}

/** A fresh adapter for `model` (A from the Philox stream of `seed`, B zero), not yet attached. */
export function createLoraAdapter(model: DecoderModel, config: LoraConfig, seed: number): LoraAdapter {
  checkLoraConfig(config, 'lora');
  const matrices = new Map<string, { a: Tensor; b: Tensor }>();
  let offset = 0;
  for (const module of targetModulePaths(model.family, model.config.nLayer, config.targets, 'lora.targets')) {
    const [out, input] = model.parameters.get(`${module}.weight`)!.shape;
    const bound = 1 / Math.sqrt(input);
    const a = keep(
      randomUniform([config.rank, input], { seed, offset, low: -bound, high: bound, backend: model.backend }),
    ).requireGrad();
    offset += config.rank * input;
    matrices.set(module, { a, b: keep(zeros([out, config.rank], { backend: model.backend })).requireGrad() });
  }
  return new LoraAdapter(config, matrices);
}

/**
 * The base model with the adapter folded in: W ← W + (alpha/r)·B·A for every target, so it
 * computes what `model` computes with the adapter on the fly. It takes over `model`'s tensors
 * (the replaced base weights are freed): use only the returned model afterwards. The adapter is
 * left as it was.
 */
export function mergeLoraAdapter(model: DecoderModel, adapter: LoraAdapter): DecoderModel {
  const parameters = new Map(model.parameters);
  noGrad(() => {
    for (const [module, { a, b, scale }] of adapter.modules) {
      const name = `${module}.weight`;
      const weight = parameters.get(name)!;
      parameters.set(name, keep(tidy(() => add(weight, mul(matmul(b, a), scale)))).requireGrad());
      weight.dispose();
    }
  });
  return new DecoderModelClass(model.config, parameters);
}
