/**
 * The one projection every family's every linear layer goes through: y = x·Wᵀ (+ b) in the
 * compute dtype, W [out, in] (kiln's layout whatever the file's). Two hooks live here and only
 * here: `computeWeights` (a precast compute-dtype copy of an f32 master weight or adapter matrix,
 * made once per optimizer step — or, for a frozen base, once per run — used instead of casting),
 * and LoRA adapters by module path (y += scale·B·A·dropout(x), A [r, in], B [out, r], PEFT's
 * definition).
 */
import { add, cast, greaterEqual, matmul, mul, randomUniform, type DType, type Tensor } from '@kiln/core';

/** A LoRA adapter on one linear module. */
export interface LinearAdapter {
  /** lora_A [r, in]. */
  a: Tensor;
  /** lora_B [out, r]. */
  b: Tensor;
  /** lora_alpha / r. */
  scale: number;
  /** Dropout probability on the adapter's input (training only). */
  dropout: number;
  /** Position of the module among the adapter's modules (keeps dropout streams apart). */
  index: number;
}

/** A linear module: its path, weight [out, in] and optional bias [out]. */
export interface LinearWeights {
  /** Hugging Face module path, e.g. 'model.layers.0.self_attn.q_proj'. */
  module: string;
  /** Weight [out, in] (f32 master). */
  weight: Tensor;
  /** Bias [out], if the module has one. */
  bias?: Tensor;
}

/** What a linear needs to know about the forward it is part of. */
export interface LinearContext {
  /** Dtype of the matmul. */
  computeDType: DType;
  /** Precast compute-dtype copies by master weight (ForwardOptions.computeWeights). */
  computeWeights?: ReadonlyMap<Tensor, Tensor>;
  /** LoRA adapters by module path. */
  adapters?: ReadonlyMap<string, LinearAdapter>;
  /** Seed of the dropout masks; undefined turns dropout off. */
  dropoutSeed?: number;
}

/** Philox offsets between the dropout streams of two modules (room for 2³⁶ elements each). */
const DROPOUT_STREAM_STRIDE = 2 ** 36;

/** x in `dtype` (no copy when it already is). */
export function toDType(x: Tensor, dtype: DType): Tensor {
  return x.dtype === dtype ? x : cast(x, dtype);
}

function computeCopy(weight: Tensor, context: LinearContext): Tensor {
  return context.computeWeights?.get(weight) ?? toDType(weight, context.computeDType);
}

/** Inverted dropout of x: each element kept with probability 1 − p (Philox stream of the seed and module), scaled by 1/(1 − p). */
function dropout(x: Tensor, probability: number, seed: number, index: number): Tensor {
  const draws = randomUniform(x.shape, {
    seed,
    offset: index * DROPOUT_STREAM_STRIDE,
    dtype: x.dtype,
    backend: x.backend,
  });
  return mul(mul(x, greaterEqual(draws, probability)), 1 / (1 - probability));
}

/** x·Wᵀ (+ b) (+ the module's LoRA term) for a Hugging Face Linear, in the compute dtype. */
export function linear(x: Tensor, layer: LinearWeights, context: LinearContext): Tensor {
  let y = matmul(x, computeCopy(layer.weight, context), { transposeB: true });
  if (layer.bias !== undefined) y = add(y, computeCopy(layer.bias, context));
  const adapter = context.adapters?.get(layer.module);
  if (adapter === undefined) return y;
  const input =
    adapter.dropout > 0 && context.dropoutSeed !== undefined
      ? dropout(x, adapter.dropout, context.dropoutSeed, adapter.index)
      : x;
  const low = matmul(input, computeCopy(adapter.a, context), { transposeB: true });
  return add(y, mul(matmul(low, computeCopy(adapter.b, context), { transposeB: true }), adapter.scale));
}
