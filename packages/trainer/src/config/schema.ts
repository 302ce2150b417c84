/**
 * The zod schema of one config layer (a YAML file or the CLI's overrides): every key optional,
 * unknown keys rejected, types and ranges checked. Cross-field rules (batch divisibility, head
 * sizes, warmup ≤ steps…) are in semantic-checks.ts, run on the merged config.
 */
import { z } from 'zod';
import { MODEL_PRESET_NAMES } from './presets.js';

/** Most validation batches per evaluation (10,000 batches of the default 16 × 64 tokens are 10M tokens). */
export const MAX_EVAL_BATCHES = 10_000;

const count = (minimum: number) => z.int().min(minimum);
const positive = () => z.number().positive();
const fraction = () => z.number().min(0).lt(1);
const path = () => z.string().min(1);

const deviceSchema = z.strictObject({
  device: z
    .string()
    .regex(/^[A-Za-z0-9_-]+(:\d+)?$/)
    .optional(),
  precision: z.enum(['auto', 'f32', 'bf16', 'f16']).optional(),
  attention: z.enum(['auto', 'flash', 'naive']).optional(),
  fallback: z.enum(['error', 'warn', 'allow']).optional(),
  allowDeviceFallback: z.boolean().optional(),
  checkpointActivations: z.boolean().optional(),
  cudaGraph: z.enum(['auto', 'off']).optional(),
});

const modelSchema = z.strictObject({
  preset: z.enum(MODEL_PRESET_NAMES).optional(),
  vocabSize: count(2).optional(),
  contextLength: count(1).optional(),
  dModel: count(1).optional(),
  nLayer: count(1).optional(),
  nHead: count(1).optional(),
  nKvHead: count(1).optional(),
  mlpHidden: count(1).optional(),
  tieEmbeddings: z.boolean().optional(),
  // Meaningful ranges, not just types (config-issues.ts RANGE_HINTS says why): a normEps of 1e300 trains nothing.
  ropeTheta: z.number().gt(1).max(1e9).optional(),
  normEps: positive().max(1e-2).optional(),
});

const dataSchema = z.strictObject({
  sequences: path().optional(),
  path: path().optional(),
  validationFraction: z.number().gt(0).lt(0.5).optional(),
  minSequenceLength: count(1).optional(),
  tokenizer: path().optional(),
  include: z.array(path()).optional(),
  exclude: z.array(path()).optional(),
});

const optimizerSchema = z.strictObject({
  lr: positive().lt(1).optional(),
  beta1: fraction().optional(),
  beta2: fraction().optional(),
  eps: positive().max(1e-2).optional(),
  weightDecay: z.number().min(0).optional(),
  gradClip: z.number().min(0).optional(),
});

const scheduleSchema = z.strictObject({
  steps: count(1).optional(),
  epochs: positive().optional(),
  sequenceLength: count(2).optional(),
  batchSize: count(1).optional(),
  microBatchSize: count(1).optional(),
  warmupSteps: count(0).optional(),
  minLrRatio: z.number().min(0).max(1).optional(),
  evalInterval: count(1).optional(),
  // Each evaluation runs evalBatches forward passes with no progress output: more than this is a typo, not a measurement.
  evalBatches: count(1).max(MAX_EVAL_BATCHES).optional(),
  logInterval: count(1).optional(),
  maxNonFiniteSteps: count(1).optional(),
});

const checkpointSchema = z.strictObject({
  outputDir: path().optional(),
  interval: count(0).optional(),
  keepLast: count(1).optional(),
});

// LoRA fine-tuning (see lora/lora-config.ts): rank, alpha, dropout, target module names or 'all-linear'.
const loraSchema = z.strictObject({
  rank: count(1),
  alpha: positive(),
  dropout: fraction().optional(),
  targets: z.union([z.literal('all-linear'), z.array(z.string().min(1)).min(1)]),
  baseDType: z.enum(['f32', 'bf16', 'f16']).optional(),
});

/** One config layer: every section and key optional, unknown keys rejected. */
export const partialTrainConfigSchema = z.strictObject({
  seed: z.int().min(0).optional(),
  device: deviceSchema.optional(),
  model: modelSchema.optional(),
  data: dataSchema.optional(),
  optimizer: optimizerSchema.optional(),
  schedule: scheduleSchema.optional(),
  checkpoint: checkpointSchema.optional(),
  initFrom: path().optional(),
  lora: loraSchema.optional(),
});

/** A config layer as written in YAML or given as CLI overrides (model may name a preset). */
export type PartialTrainConfig = z.infer<typeof partialTrainConfigSchema>;

function unwrap(schema: z.ZodType): z.ZodType {
  return schema instanceof z.ZodOptional ? (schema.unwrap() as z.ZodType) : schema;
}

/** The schema at a path of a config layer, or undefined past the schema's leaves. */
export function schemaAt(path: readonly PropertyKey[]): z.ZodType | undefined {
  let schema: z.ZodType = partialTrainConfigSchema;
  for (const segment of path) {
    const inner = unwrap(schema);
    if (!(inner instanceof z.ZodObject)) return undefined;
    const next = (inner.shape as Record<string, z.ZodType | undefined>)[String(segment)];
    if (next === undefined) return undefined;
    schema = next;
  }
  return unwrap(schema);
}

/** The keys allowed at a path ([] = top level); empty when it is not a section. */
export function knownKeysAt(path: readonly PropertyKey[]): string[] {
  const schema = schemaAt(path);
  return schema instanceof z.ZodObject ? Object.keys(schema.shape) : [];
}

/** True when the value at a path must be an integer. */
export function isIntegerAt(path: readonly PropertyKey[]): boolean {
  const schema = schemaAt(path);
  return schema instanceof z.ZodNumber && schema.isInt;
}
