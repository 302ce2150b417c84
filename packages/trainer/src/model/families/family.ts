/**
 * The contract of one model family (a Hugging Face `model_type`): how its config.json maps to
 * kiln's ModelConfig and back, and the module names of its layout. Everything else — the
 * parameter list, weight lookup, the forward pass — is built from these names by shared code,
 * so a family is a small declarative file.
 */
import type { ModelConfig, ModelFamilyName } from '../../contracts.js';
import type { HfConfigFields } from './hf-fields.js';

/** How a weight is stored in the family's safetensors file, when it differs from kiln's [out, in]. */
export type FileLayout =
  /** GPT-2's Conv1D: the file holds Wᵀ [in, out]. */
  | 'transposed'
  /** GPTBigCode multi-head c_attn: the file's output rows are per head (q, k, v of head 0, then head 1…), kiln's are q of every head, then k, then v. */
  | 'per-head-qkv';

/** The module paths (without `.weight` / `.bias`) of one decoder block. */
export interface LayerModules {
  /** Norm before attention. */
  inputNorm: string;
  /** Norm before the MLP. */
  postNorm: string;
  /** Separate q/k/v projections, or one fused projection whose output is [q; k; v]. */
  attention: { query: string; key: string; value: string } | { fused: string };
  /** Attention output projection. */
  output: string;
  /** Gated MLP (down(act(gate)·up)) or plain MLP (proj(act(fc))). */
  mlp: { gate: string; up: string; down: string } | { fc: string; proj: string };
}

/** The module paths outside the blocks. */
export interface ModelModules {
  /** Token embedding [vocab, d]. */
  tokenEmbedding: string;
  /** Learned position embedding [contextLength, d], absent for rope families. */
  positionEmbedding?: string;
  /** Final norm. */
  finalNorm: string;
  /** LM head (when not tied to the token embedding). */
  head: string;
}

/** What the generated support table in docs/fine-tuning.md says about a family. */
export interface FamilyDocumentation {
  /** Checkpoints of the family, e.g. 'SmolLM2, TinyLlama, Llama 3'. */
  examples: string;
  /** Each config.json option kiln reads, with what it does with it (implemented values, refused values). */
  options: ReadonlyArray<readonly [key: string, support: string]>;
}

/** One supported family. */
export interface ModelFamily {
  /** The family's row of the support table (docs/fine-tuning.md). */
  readonly documentation: FamilyDocumentation;
  /** Its `model_type`. */
  readonly modelType: ModelFamilyName;
  /** The transformers class written in `architectures`. */
  readonly architectureClass: string;
  /** Norm kind: RMSNorm (weight only) or LayerNorm (weight and bias). */
  readonly norm: 'rms' | 'layer';
  /** Names of the linear modules LoRA may target (the HF module names, e.g. q_proj or c_attn). */
  readonly linearModuleNames: readonly string[];
  /** Reads config.json into a ModelConfig with `architecture` set, refusing options kiln lacks. */
  fromHfConfig(fields: HfConfigFields): ModelConfig;
  /** The config.json of a model (the family's own keys). */
  toHfConfig(config: ModelConfig): Record<string, unknown>;
  /** Module paths outside the blocks. */
  modelModules(config: ModelConfig): ModelModules;
  /** Module paths of block `layer`. */
  layerModules(layer: number): LayerModules;
  /** How a weight (by full tensor name) is stored in the file, when not [out, in]. */
  fileLayout(name: string, config: ModelConfig): FileLayout | undefined;
  /** Tensors a saved file may hold that are not parameters (rotary buffers, causal-mask buffers). */
  isBuffer(name: string): boolean;
}
