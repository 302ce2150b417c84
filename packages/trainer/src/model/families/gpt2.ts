/**
 * The `gpt2` family (GPT2LMHeadModel): learned positions, LayerNorm with bias, the fused c_attn
 * (q, k, v of every head, in that order), GELU MLP, tied head. Its Linear layers are Conv1D,
 * stored [in, out] in the file and transposed at load/save, so the forward sees kiln's [out, in].
 * `scale_attn_weights` and `scale_attn_by_inverse_layer_idx` are implemented;
 * `reorder_and_upcast_attn` (a precision trick) is refused.
 */
import type { ModelConfig } from '../../contracts.js';
import type { ModelFamily } from './family.js';
import {
  GPT_LINEAR_MODULES,
  GPT_OPTIONS,
  gptLayerModules,
  gptModelModules,
  isGptBuffer,
  readGptConfig,
  writeGptConfig,
} from './gpt-layout.js';
import type { HfConfigFields } from './hf-fields.js';

export const gpt2Family: ModelFamily = {
  modelType: 'gpt2',
  architectureClass: 'GPT2LMHeadModel',
  norm: 'layer',
  linearModuleNames: GPT_LINEAR_MODULES,
  documentation: {
    examples: 'gpt2, distilgpt2, GPT-2-layout models',
    options: [
      ...GPT_OPTIONS,
      ['scale_attn_by_inverse_layer_idx', 'true or false'],
      ['reorder_and_upcast_attn', '`false` only; true refused'],
    ],
  },

  fromHfConfig(fields: HfConfigFields): ModelConfig {
    fields.refuse(
      'reorder_and_upcast_attn',
      [false],
      'kiln does not implement the reordered, upcast attention of reorder_and_upcast_attn; set it to false (the result differs only in rounding).',
    );
    const config = readGptConfig(fields, 'gpt2', (nHead) => nHead);
    config.architecture!.scaleAttentionByInverseLayer = fields.boolean('scale_attn_by_inverse_layer_idx', false);
    return config;
  },

  toHfConfig(config: ModelConfig): Record<string, unknown> {
    return {
      ...writeGptConfig(config, 'GPT2LMHeadModel', 'gpt2'),
      scale_attn_by_inverse_layer_idx: config.architecture!.scaleAttentionByInverseLayer,
      reorder_and_upcast_attn: false,
    };
  },

  modelModules: gptModelModules,
  layerModules: gptLayerModules,
  // Every Conv1D weight (c_attn, c_proj, c_fc) is [in, out]; biases, norms and embeddings are as kiln has them.
  fileLayout: (name: string) => (/\.(c_attn|c_proj|c_fc)\.weight$/.test(name) ? 'transposed' : undefined),
  isBuffer: isGptBuffer,
};
