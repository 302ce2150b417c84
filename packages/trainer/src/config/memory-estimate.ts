/**
 * A deliberately simple estimate of the memory one training step needs, used to pick a
 * micro-batch that fits before the first step (the trainer still handles a real out-of-memory).
 *
 * With P parameters, b sequences per micro-batch, T = contextLength, d = dModel, h = mlpHidden,
 * kv = nKvHead · headDim, H = nHead, V = vocabSize, L = nLayer and c = bytes of the compute dtype:
 *   weights    = 4P (f32 master) + 2P more when computing in f16/bf16 (a low-precision copy)
 *   gradients  = 4P;  optimizer = 8P (AdamW m and v, f32)
 *   per block  = b·T·(8d + 2kv + 3h)·c  (norm inputs/outputs, q/k/v, attention and MLP outputs,
 *                gate/up/swiglu kept for backward)  +  attention scores: naive b·H·T·T·2·4
 *                (scores and probabilities), flash b·H·T·4 (the row log-sum-exp)
 *   activations = L · block, or with activation checkpointing L·b·T·d·c (block inputs) + one block
 *   head       = b·T·V·4·2 (logits and their gradient) + b·T·d·c·2 (final norm)
 * A plan fits when the total is ≤ 90% of the device's free memory (or total when free is unknown).
 * On the host, each optimizer step holds its token windows: 2·4·B·T bytes (inputs and targets,
 * i32) for the whole batch B = batchSize, whatever the micro-batch.
 *
 * Generation (batch b, a window of W tokens = the context length):
 *   weights    = 4P (+ 2P for a low-precision copy, as in training)
 *   KV cache   = L · 2 · b · kv · W · c  (+ a W-float mask row)
 *   activations = the largest forward, a W-token prefill: one block's W·(8d + 4kv + 3h)·c (the
 *                 block's tensors and the copied cache prefix) + scores (naive b·H·W·W·2·4,
 *                 flash b·H·W·4) + the head's W·V·(4 + c) + W·d·4·2 (residual stream)
 */
import { DTYPE_BYTES, type DType } from '@kiln/core';
import type { ForwardOptions, ModelConfig } from '../contracts.js';
import { parameterCount } from '../model/config.js';

/** Share of the device memory a plan may use; the rest is headroom for temporaries. */
export const MEMORY_HEADROOM = 0.9;

/** Bytes one training step is estimated to need, by part. */
export interface MemoryEstimate {
  /** Master weights (and the low-precision copy). */
  weightBytes: number;
  /** Gradients and AdamW state. */
  optimizerBytes: number;
  /** Activations kept for backward, logits included. */
  activationBytes: number;
  /** Sum of the parts. */
  totalBytes: number;
}

/** The memory estimate of one step with `microBatchSize` sequences (see the file header for the formula). */
export function estimateTrainingMemory(
  model: ModelConfig,
  microBatchSize: number,
  forward: ForwardOptions,
  window = model.contextLength,
): MemoryEstimate {
  const parameters = parameterCount(model);
  const computeBytes = DTYPE_BYTES[forward.computeDType];
  const weightBytes = 4 * parameters + (computeBytes < 4 ? 2 * parameters : 0);
  const optimizerBytes = 4 * parameters + 8 * parameters;
  const tokens = microBatchSize * window;
  const headDim = model.dModel / model.nHead;
  const kv = model.nKvHead * headDim;
  const scores =
    forward.attention === 'naive' ? microBatchSize * model.nHead * window * window * 2 * 4 : tokens * model.nHead * 4;
  const block = tokens * (8 * model.dModel + 2 * kv + 3 * model.mlpHidden) * computeBytes + scores;
  const blocks = forward.checkpointActivations
    ? model.nLayer * tokens * model.dModel * computeBytes + block
    : model.nLayer * block;
  const head = tokens * model.vocabSize * 4 * 2 + tokens * model.dModel * computeBytes * 2;
  const activationBytes = blocks + head;
  return { weightBytes, optimizerBytes, activationBytes, totalBytes: weightBytes + optimizerBytes + activationBytes };
}

/** Bytes of the token windows one optimizer step holds on the host (inputs and targets, i32). */
export function estimateHostBatchBytes(batchSize: number, contextLength: number): number {
  return 2 * 4 * batchSize * contextLength;
}

/** Bytes generation is estimated to need on the device, by part. */
export interface GenerationMemoryEstimate {
  /** f32 weights (and a low-precision copy). */
  weightBytes: number;
  /** Keys and values of every layer for the whole window. */
  cacheBytes: number;
  /** The largest forward pass: a prefill of the whole window. */
  activationBytes: number;
  /** Sum of the parts. */
  totalBytes: number;
}

/** How a generation runs, for estimateGenerationMemory. */
export interface GenerationPlan {
  /** Tokens the cache holds at most (the context length for a full window). */
  windowTokens: number;
  /** Dtype of the matmuls and of the cache. */
  computeDType: DType;
  /** Attention implementation. */
  attention: 'flash' | 'naive';
  /** Sequences generated at once (default 1). */
  batch?: number;
}

/** The memory estimate of generating with `model` (see the file header for the formula). */
export function estimateGenerationMemory(model: ModelConfig, plan: GenerationPlan): GenerationMemoryEstimate {
  const parameters = parameterCount(model);
  const computeBytes = DTYPE_BYTES[plan.computeDType];
  const batch = plan.batch ?? 1;
  const window = plan.windowTokens;
  const kv = model.nKvHead * (model.dModel / model.nHead);
  const weightBytes = 4 * parameters + (computeBytes < 4 ? 2 * parameters : 0);
  const cacheBytes = model.nLayer * 2 * batch * kv * window * computeBytes + window * 4;
  const tokens = batch * window;
  const scores = plan.attention === 'naive' ? batch * model.nHead * window * window * 2 * 4 : tokens * model.nHead * 4;
  const block = tokens * (8 * model.dModel + 4 * kv + 3 * model.mlpHidden) * computeBytes + scores;
  const head = tokens * model.vocabSize * (4 + computeBytes) + tokens * model.dModel * 4 * 2;
  const activationBytes = block + head;
  return { weightBytes, cacheBytes, activationBytes, totalBytes: weightBytes + cacheBytes + activationBytes };
}

/** Human-readable bytes (KiB/MiB/GiB). */
export function formatBytes(bytes: number): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${Math.round(value)} bytes` : `${value.toFixed(1)} ${units[unit]}`;
}
