/**
 * loadTrainConfig: defaults ← YAML file/text ← overrides (CLI flags), each layer validated on its
 * own so every message names where the bad value came from. The model starts from the defaults,
 * or from the last preset named, then takes every field a layer sets; mlpHidden and nKvHead are
 * derived (round_up(8·dModel/3, 32), nHead) unless a layer sets them, and so is warmupSteps
 * (defaultWarmupSteps, so a short run needs no warmup setting). steps/epochs and
 * sequences/path are alternatives: a layer that sets one drops the other from lower layers.
 */
import type { ModelConfig, TrainConfig } from '../contracts.js';
import { configError, schemaIssues, valueAt, type ConfigIssue } from './config-issues.js';
import { DEFAULT_WARMUP_STEPS, defaultTrainConfig, defaultWarmupSteps } from './defaults.js';
import { defaultMlpHidden } from '../model/config.js';
import { MODEL_PRESETS } from './presets.js';
import { partialTrainConfigSchema, type PartialTrainConfig } from './schema.js';
import { semanticIssues } from './semantic-checks.js';
import { parseYaml, readConfigFile } from './yaml-source.js';

/** Where loadTrainConfig reads from; all optional (nothing = the default run). */
export interface LoadTrainConfigOptions {
  /** YAML file to read (also the name used in messages when `text` is given). */
  file?: string;
  /** YAML text (instead of reading `file`). */
  text?: string;
  /** Values that win over the file, e.g. from CLI flags. */
  overrides?: PartialTrainConfig;
  /**
   * Called when the overrides set schedule.steps below the file's own warmupSteps: the warmup is
   * shortened to defaultWarmupSteps(steps) and this reports it (the CLI prints a note). Without
   * it, such a warmup is a config error.
   */
  onWarmupShortened?: (change: { from: number; to: number; steps: number; source: string }) => void;
}

interface Layer {
  source: string;
  raw: unknown;
  values: PartialTrainConfig;
}

/** Keys of which a layer may set only one; the highest layer setting any of them decides. */
const ALTERNATIVES: ReadonlyArray<readonly [section: 'schedule' | 'data', keys: readonly string[]]> = [
  ['schedule', ['steps', 'epochs']],
  ['data', ['sequences', 'path']],
];

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const SECTIONS: ReadonlySet<string> = new Set(['device', 'model', 'data', 'optimizer', 'schedule', 'checkpoint']);

/** Treats a known `section:` with nothing under it (YAML null) as an empty section. */
function withoutEmptySections(raw: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(raw).filter(([key, value]) => !(value === null && SECTIONS.has(key))));
}

function validateLayer(raw: unknown, source: string, issues: ConfigIssue[]): Layer | undefined {
  const document = raw === null || raw === undefined ? {} : raw;
  if (!isPlainObject(document)) {
    issues.push({
      source,
      path: '',
      message: `expected a mapping of sections (seed, device, model, …), got ${Array.isArray(document) ? 'a list' : JSON.stringify(document)}`,
    });
    return undefined;
  }
  const cleaned = withoutEmptySections(document);
  const result = partialTrainConfigSchema.safeParse(cleaned);
  if (!result.success) {
    issues.push(...schemaIssues(result.error, cleaned, source));
    return undefined;
  }
  for (const [section, keys] of ALTERNATIVES) {
    const set = keys.filter((key) => valueAt(result.data, [section, key]) !== undefined);
    if (set.length > 1) {
      issues.push({
        source,
        path: `${section}.${set[1]}`,
        message: `expected only one of ${keys.map((key) => `${section}.${key}`).join(' or ')}, got both`,
      });
    }
  }
  return { source, raw: cleaned, values: result.data };
}

function definedEntries(section: object): Record<string, unknown> {
  return Object.fromEntries(Object.entries(section).filter(([, value]) => value !== undefined));
}

/** Merges the non-model sections of the layers over the defaults. */
function mergeSections(layers: readonly Layer[]): TrainConfig {
  const merged = defaultTrainConfig() as unknown as Record<string, Record<string, unknown> | unknown>;
  for (const layer of layers) {
    for (const [section, keys] of ALTERNATIVES) {
      const values = (layer.values[section] ?? {}) as Record<string, unknown>;
      if (keys.some((key) => values[key] !== undefined)) {
        for (const key of keys) delete (merged[section] as Record<string, unknown>)[key];
      }
    }
    for (const [key, value] of Object.entries(layer.values)) {
      if (value === undefined || key === 'model') continue;
      merged[key] = isPlainObject(value) ? { ...(merged[key] as object), ...definedEntries(value) } : value;
    }
  }
  const config = merged as unknown as TrainConfig;
  if (config.schedule.epochs !== undefined) config.schedule.steps = 0;
  config.schedule.steps ??= 0;
  return config;
}

/** The model: defaults or the last preset named, then every field set by a layer, then derived sizes. */
function resolveModel(layers: readonly Layer[]): ModelConfig {
  const preset = layers
    .map((layer) => layer.values.model?.preset)
    .filter((name) => name !== undefined)
    .pop();
  const model: ModelConfig = { ...(preset === undefined ? defaultTrainConfig().model : MODEL_PRESETS[preset].model) };
  const explicit = new Set<string>();
  for (const layer of layers) {
    const { preset: _preset, ...fields } = layer.values.model ?? {};
    const defined = definedEntries(fields);
    Object.assign(model, defined);
    for (const key of Object.keys(defined)) explicit.add(key);
  }
  if (!explicit.has('mlpHidden')) model.mlpHidden = defaultMlpHidden(model.dModel);
  if (!explicit.has('nKvHead')) model.nKvHead = model.nHead;
  return model;
}

/** Source of the highest layer that set any of `paths` (model fields also count a preset). */
function originFinder(layers: readonly Layer[]): (...paths: string[]) => string {
  return (...paths) => {
    for (let index = layers.length - 1; index >= 0; index--) {
      for (const path of paths) {
        const segments = path.split('.');
        if (valueAt(layers[index].raw, segments) !== undefined) return layers[index].source;
        if (segments[0] === 'model' && valueAt(layers[index].raw, ['model', 'preset']) !== undefined)
          return layers[index].source;
      }
    }
    return 'defaults';
  };
}

/** A warmup from the file that a later layer's shorter schedule.steps cut below: shortened when the caller allows it. */
function shortenWarmup(config: TrainConfig, layers: readonly Layer[], options: LoadTrainConfigOptions): void {
  const { steps, warmupSteps, epochs } = config.schedule;
  if (options.onWarmupShortened === undefined || epochs !== undefined || warmupSteps <= steps) return;
  const lastSetting = (key: 'warmupSteps' | 'steps'): number => {
    for (let index = layers.length - 1; index >= 0; index--)
      if (layers[index].values.schedule?.[key] !== undefined) return index;
    return -1;
  };
  const warmupLayer = lastSetting('warmupSteps');
  const stepsLayer = lastSetting('steps');
  if (warmupLayer < 0 || stepsLayer <= warmupLayer) return;
  const shortened = defaultWarmupSteps(steps);
  config.schedule.warmupSteps = shortened;
  options.onWarmupShortened({ from: warmupSteps, to: shortened, steps, source: layers[warmupLayer].source });
}

/** Loads and validates a training config: defaults ← file/text ← overrides. */
export function loadTrainConfig(options: LoadTrainConfigOptions = {}): TrainConfig {
  const issues: ConfigIssue[] = [];
  const layers: Layer[] = [];
  if (options.file !== undefined || options.text !== undefined) {
    const source = options.file ?? '<config>';
    const text = options.text ?? readConfigFile(source);
    const layer = validateLayer(parseYaml(text, source), source, issues);
    if (layer) layers.push(layer);
  }
  if (options.overrides !== undefined) {
    const layer = validateLayer(options.overrides, 'overrides', issues);
    if (layer) layers.push(layer);
  }
  if (issues.length > 0) throw configError(issues);

  const config = mergeSections(layers);
  config.model = resolveModel(layers);
  const warmupSet = layers.some((layer) => layer.values.schedule?.warmupSteps !== undefined);
  if (!warmupSet) {
    // With epochs the step count is known only in resolveSteps, which shrinks this cap to fit.
    config.schedule.warmupSteps =
      config.schedule.epochs === undefined ? defaultWarmupSteps(config.schedule.steps) : DEFAULT_WARMUP_STEPS;
  }
  shortenWarmup(config, layers, options);
  const semantic = semanticIssues(config, originFinder(layers));
  if (semantic.length > 0) throw configError(semantic);
  return config;
}
