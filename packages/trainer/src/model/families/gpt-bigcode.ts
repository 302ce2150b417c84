/**
 * The `gpt_bigcode` family (GPTBigCodeForCausalLM: StarCoder, SantaCoder, tiny_starcoder): GPT-2's
 * layout with nn.Linear weights ([out, in], as kiln) and multi-query attention (`multi_query`: one
 * key/value head; c_attn's output is [q of every head; k; v]) or multi-head attention, whose c_attn
 * output the file orders per head (q, k, v of head 0, then head 1…): kiln reorders those rows at
 * load/save so the forward sees [q; k; v] for both. The fp32-softmax options change only
 * rounding in half precision; kiln's attention softmax is f32 whatever they say.
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

export const gptBigCodeFamily: ModelFamily = {
  modelType: 'gpt_bigcode',
  architectureClass: 'GPTBigCodeForCausalLM',
  norm: 'layer',
  linearModuleNames: GPT_LINEAR_MODULES,
  documentation: {
    examples: 'StarCoder, StarCoderBase, SantaCoder, tiny_starcoder_py',
    options: [
      ...GPT_OPTIONS,
      ['multi_query', 'true (one key/value head) or false (multi-head; c_attn reordered per head at load/save)'],
      [
        'attention_softmax_in_fp32, scale_attention_softmax_in_fp32',
        "read; kiln's attention softmax is f32 either way",
      ],
    ],
  },

  fromHfConfig(fields: HfConfigFields): ModelConfig {
    const multiQuery = fields.boolean('multi_query', true);
    const config = readGptConfig(fields, 'gpt_bigcode', (nHead) => (multiQuery ? 1 : nHead));
    const declared = fields.value('num_key_value_heads');
    if (declared !== undefined && declared !== config.nKvHead) {
      fields.fail(
        'num_key_value_heads',
        `is ${JSON.stringify(declared)} but multi_query ${multiQuery} means ${config.nKvHead}`,
        'GPTBigCode has one key/value head (multi_query true) or one per query head; fix the config.json.',
      );
    }
    return config;
  },

  toHfConfig(config: ModelConfig): Record<string, unknown> {
    const multiQuery = config.nKvHead === 1 && config.nHead > 1;
    return {
      ...writeGptConfig(config, 'GPTBigCodeForCausalLM', 'gpt_bigcode'),
      multi_query: multiQuery,
      num_key_value_heads: config.nKvHead,
      attention_softmax_in_fp32: true,
      scale_attention_softmax_in_fp32: true,
    };
  },

  modelModules: gptModelModules,
  layerModules: gptLayerModules,
  fileLayout: (name: string, config: ModelConfig) =>
    config.nKvHead === config.nHead && config.nHead > 1 && /\.attn\.c_attn\.(weight|bias)$/.test(name)
      ? 'per-head-qkv'
      : undefined,
  isBuffer: isGptBuffer,
};
