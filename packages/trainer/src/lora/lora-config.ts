/**
 * LoRA settings: rank, alpha, dropout and the target modules (the family's Hugging Face module
 * names, or 'all-linear'), parsed from the CLI's `r=8,alpha=16,dropout=0.05,targets=q_proj,v_proj`
 * form and checked against a model: a target the family does not have is refused by name.
 */
import { ConfigError } from '@kiln/core';
import type { ModelFamily } from '../model/families/family.js';

/** A LoRA configuration (PEFT's r, lora_alpha, lora_dropout, target_modules). */
export interface LoraConfig {
  /** Rank r of A [r, in] and B [out, r]. */
  rank: number;
  /** lora_alpha: the update is scaled by alpha / r. */
  alpha: number;
  /** Dropout probability on each adapter's input while training, in [0, 1). */
  dropout: number;
  /** Module names to adapt (e.g. q_proj, v_proj; c_attn for GPT-2), or 'all-linear' (every linear of the blocks). */
  targets: string[] | 'all-linear';
  /** Dtype the frozen base's weight matrices are held in on the device (default 'f32'; 'bf16'/'f16' halve their memory, the adapter stays f32). */
  baseDType?: LoraBaseDType;
}

/** Dtypes a LoRA base may be held in. */
export type LoraBaseDType = 'f32' | 'bf16' | 'f16';

/** Every LoraBaseDType. */
export const LORA_BASE_DTYPES: readonly LoraBaseDType[] = ['f32', 'bf16', 'f16'];

const KEYS = ['r', 'alpha', 'dropout', 'base-dtype', 'targets'] as const;

/** Parses `r=8,alpha=16,dropout=0.05,targets=q_proj,v_proj` (targets last: the commas after it list modules). */
export function parseLoraOption(text: string): LoraConfig {
  const fail = (problem: string): never => {
    throw new ConfigError(`--lora ${JSON.stringify(text)}: ${problem}`, {
      hint: 'Write --lora r=8,alpha=16,dropout=0.05,targets=q_proj,v_proj (targets may be all-linear).',
    });
  };
  const values = new Map<string, string>();
  let key: string | undefined;
  for (const part of text.split(',')) {
    const equals = part.indexOf('=');
    if (equals < 0) {
      if (key !== 'targets') fail(`"${part}" is not key=value`);
      values.set('targets', `${values.get('targets')},${part}`);
      continue;
    }
    key = part.slice(0, equals).trim();
    if (!KEYS.includes(key as (typeof KEYS)[number])) fail(`unknown key "${key}"; the keys are ${KEYS.join(', ')}`);
    values.set(key, part.slice(equals + 1).trim());
  }
  const number = (name: string, fallback: number): number => {
    const raw = values.get(name);
    const value = raw === undefined ? fallback : Number(raw);
    if (!Number.isFinite(value)) fail(`${name} must be a number, got "${raw}"`);
    return value;
  };
  const targets = values.get('targets');
  const config: LoraConfig = {
    rank: number('r', 8),
    alpha: number('alpha', 16),
    dropout: number('dropout', 0),
    targets:
      targets === undefined
        ? fail('targets is missing')
        : targets === 'all-linear'
          ? 'all-linear'
          : targets.split(',').map((name) => name.trim()),
  };
  const baseDType = values.get('base-dtype');
  if (baseDType !== undefined) config.baseDType = baseDType as LoraBaseDType;
  checkLoraConfig(config, '--lora');
  return config;
}

/** Throws ConfigError naming the field when the numbers are out of range. */
export function checkLoraConfig(config: LoraConfig, where: string): void {
  const fail = (field: string, problem: string, hint: string): never => {
    throw new ConfigError(`${where}: ${field} ${problem}`, { hint });
  };
  if (!Number.isSafeInteger(config.rank) || config.rank < 1)
    fail('r', `must be an integer ≥ 1, got ${config.rank}`, 'Typical ranks are 4 to 64.');
  if (!(config.alpha > 0)) fail('alpha', `must be > 0, got ${config.alpha}`, 'Typical alpha is twice the rank.');
  if (!(config.dropout >= 0 && config.dropout < 1))
    fail('dropout', `must be in [0, 1), got ${config.dropout}`, 'Use 0 to 0.1.');
  if (config.baseDType !== undefined && !LORA_BASE_DTYPES.includes(config.baseDType)) {
    fail(
      'base-dtype',
      `must be one of ${LORA_BASE_DTYPES.join(', ')}, got ${JSON.stringify(config.baseDType)}`,
      "Use bf16 to halve the frozen base's memory, or f32 (the default).",
    );
  }
  if (config.targets !== 'all-linear' && config.targets.length === 0)
    fail('targets', 'is empty', 'List module names such as q_proj,v_proj, or all-linear.');
}

/** The module paths of `family`'s blocks that `targets` selects, in layout order; refuses names the family lacks. */
export function targetModulePaths(
  family: ModelFamily,
  layerCount: number,
  targets: LoraConfig['targets'],
  where: string,
): string[] {
  const wanted = targets === 'all-linear' ? family.linearModuleNames : targets;
  for (const name of wanted) {
    if (!family.linearModuleNames.includes(name)) {
      throw new ConfigError(`${where}: target "${name}" is not a linear module of ${family.modelType} models`, {
        hint: `The ${family.modelType} linear modules are ${family.linearModuleNames.join(', ')} (or use all-linear).`,
      });
    }
  }
  const paths: string[] = [];
  for (let layer = 0; layer < layerCount; layer++) {
    const modules = family.layerModules(layer);
    const all = [
      ...('fused' in modules.attention
        ? [modules.attention.fused]
        : [modules.attention.query, modules.attention.key, modules.attention.value]),
      modules.output,
      ...('gate' in modules.mlp
        ? [modules.mlp.gate, modules.mlp.up, modules.mlp.down]
        : [modules.mlp.fc, modules.mlp.proj]),
    ];
    paths.push(...all.filter((path) => wanted.some((name) => path.endsWith(`.${name}`))));
  }
  return paths;
}
