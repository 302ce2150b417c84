/**
 * The model the training loop sees when fine-tuning with LoRA: the frozen base model with the
 * adapter attached, whose `parameters` are only the adapter's A and B matrices — so the
 * optimizer, gradient clipping, checkpoints and their moments hold the adapter alone.
 */
import { cast, ConfigError, keep, noGrad, type DType, type KernelBackend, type Tensor } from '@kiln/core';
import type { ForwardOptions, LanguageModel, ModelConfig } from '../contracts.js';
import type { DecoderModel } from '../model/decoder.js';
import { loadModelDirectory } from '../model/hf-format.js';
import { createLoraAdapter, type LoraAdapter } from './adapter.js';
import { LORA_BASE_DTYPES, type LoraConfig } from './lora-config.js';
import { loadLoraAdapter } from './peft-format.js';

/** A frozen base model and the LoRA adapter being trained on it. */
export class LoraTrainingModel implements LanguageModel {
  /** The base model (frozen: its weights get no gradients). */
  readonly base: DecoderModel;
  /** The adapter, attached to the base. */
  readonly adapter: LoraAdapter;
  /** The base model's config. */
  readonly config: ModelConfig;
  /** The trainable parameters: the adapter's A and B matrices by PEFT name. */
  readonly parameters: Map<string, Tensor>;
  /** The directory the base was loaded from (base_model_name_or_path of saved adapters). */
  readonly baseDirectory: string;

  /** Attaches `adapter` to `base` (the training model owns both from now on). */
  constructor(base: DecoderModel, adapter: LoraAdapter, baseDirectory: string) {
    this.base = base;
    this.adapter = adapter;
    this.config = base.config;
    this.parameters = adapter.parameters;
    this.baseDirectory = baseDirectory;
    base.setAdapter(adapter, { owned: true });
  }

  /** Logits of the base with the adapter applied (dropout when options.dropoutSeed is set). */
  forward(ids: Tensor, options: ForwardOptions): Tensor {
    return this.base.forward(ids, options);
  }

  /** The base's hidden states with the adapter applied. */
  hiddenStates(ids: Tensor, options: ForwardOptions): Tensor {
    return this.base.hiddenStates(ids, options);
  }

  /** The base's LM head (with the adapter, if it targets the head). */
  headLogits(hidden: Tensor, options: ForwardOptions): Tensor {
    return this.base.headLogits(hidden, options);
  }

  /**
   * The base's float tensors in `dtype` (those held in another dtype), cast once and kept until the
   * dtype changes or the model is freed: the frozen weights never change, so the training step's
   * linears use these copies instead of casting the base at every forward (LanguageModel.frozenComputeWeights).
   */
  frozenComputeWeights(dtype: DType): ReadonlyMap<Tensor, Tensor> | undefined {
    if (this.frozenCopies?.dtype !== dtype) {
      this.disposeFrozenCopies();
      const copies = new Map<Tensor, Tensor>();
      try {
        noGrad(() => {
          for (const tensor of this.base.parameters.values())
            if (tensor.dtype !== dtype && tensor.dtype !== 'i32') copies.set(tensor, keep(cast(tensor, dtype)));
        });
      } catch (error) {
        for (const copy of copies.values()) copy.dispose();
        throw error;
      }
      this.frozenCopies = { dtype, copies };
    }
    return this.frozenCopies.copies.size > 0 ? this.frozenCopies.copies : undefined;
  }

  /** Frees the base, the adapter and the frozen compute copies. */
  dispose(): void {
    this.disposeFrozenCopies();
    this.base.dispose();
  }

  /** Compute copies of the frozen base (frozenComputeWeights), in one dtype at a time. */
  private frozenCopies: { dtype: DType; copies: Map<Tensor, Tensor> } | undefined;

  private disposeFrozenCopies(): void {
    for (const copy of this.frozenCopies?.copies.values() ?? []) copy.dispose();
    this.frozenCopies = undefined;
  }
}

/** True when `model` is a LoRA training model. */
export function isLoraTrainingModel(model: LanguageModel): model is LoraTrainingModel {
  return model instanceof LoraTrainingModel;
}

/** Where a LoRA training model comes from: the base directory, and a saved adapter (resume) or a fresh one (config + seed). */
export interface LoraTrainingSource {
  /** The base model directory (initFrom). */
  baseDirectory: string;
  /** A saved adapter directory to continue from; absent: a fresh adapter. */
  adapterDirectory?: string;
  /** Rank, alpha, dropout and targets (of a fresh adapter; a saved one's adapter_config.json must agree). */
  lora: LoraConfig;
  /** Seed of a fresh adapter's A matrices. */
  seed: number;
  /** Backend to load onto. */
  backend: KernelBackend;
  /** Load weights holding NaN or ±Infinity. */
  allowNonFinite?: boolean;
}

/** Loads the frozen base and a saved or fresh adapter as a LoraTrainingModel. */
export async function loadLoraTrainingModel(source: LoraTrainingSource): Promise<LoraTrainingModel> {
  const lora: LoraConfig = {
    rank: source.lora.rank,
    alpha: source.lora.alpha,
    dropout: source.lora.dropout ?? 0,
    targets: source.lora.targets,
  };
  const baseDType = source.lora.baseDType ?? 'f32';
  if (
    !source.backend.capabilities.supports('cast', baseDType) ||
    !source.backend.capabilities.supports('gather', baseDType)
  ) {
    throw new ConfigError(
      `lora.baseDType ${baseDType}: the ${source.backend.name} backend cannot hold or compute with ${baseDType} tensors`,
      {
        hint: `Use ${LORA_BASE_DTYPES.filter((dtype) => dtype !== baseDType && source.backend.capabilities.supports('cast', dtype)).join(' or ')} (f32 is the default).`,
      },
    );
  }
  const base = await loadModelDirectory(source.baseDirectory, {
    backend: source.backend,
    allowNonFinite: source.allowNonFinite,
    frozen: true,
  });
  try {
    base.holdMatricesIn(baseDType);
    const adapter =
      source.adapterDirectory === undefined
        ? createLoraAdapter(base, lora, source.seed)
        : await loadLoraAdapter(source.adapterDirectory, base);
    const saved = adapter.config;
    if (
      saved.rank !== lora.rank ||
      saved.alpha !== lora.alpha ||
      saved.dropout !== lora.dropout ||
      JSON.stringify(saved.targets) !== JSON.stringify(lora.targets)
    ) {
      adapter.dispose();
      throw new ConfigError(
        `the LoRA settings ${JSON.stringify(source.lora)} differ from the saved adapter's ${JSON.stringify(adapter.config)} (${source.adapterDirectory})`,
        {
          hint: 'Resume with the lora settings the run was started with.',
        },
      );
    }
    return new LoraTrainingModel(base, adapter, source.baseDirectory);
  } catch (error) {
    base.dispose();
    throw error;
  }
}
