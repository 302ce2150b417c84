/**
 * The Hugging Face reference fixtures (folders made by transformers and PEFT: `reference.safetensors`
 * with input_ids, logits and every trainable parameter's gradient, `reference.json` with the loss
 * and 8 greedy tokens) run through kiln on a given backend. Measures the logits, the causal-LM
 * loss, every parameter's gradient (the LoRA parameters only for an adapter) and the greedy tokens
 * against the reference, and checks them against the bounds every backend is held to. Shared by
 * the trainer's CPU test, the backends' simulator tests and the CUDA gpu-check.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  backward,
  crossEntropy,
  decodeHostValues,
  readSafetensorsFile,
  slice,
  tensor,
  tidy,
  type KernelBackend,
  type RawTensor,
} from '@kiln/core';
import type { LoraAdapter } from '../lora/index.js';
import { fromFileLayout } from '../model/families/file-layout.js';
import { generate, loadModelDirectory } from '../model/index.js';

/** The model fixtures and their adapters (an adapter folder is named `<base>-lora`). */
export const HF_MODEL_FIXTURES = ['llama-gqa', 'gpt2', 'bigcode-mqa', 'llama-gqa-lora'] as const;

/** One fixture's folder name. */
export type HfFixtureName = (typeof HF_MODEL_FIXTURES)[number];

/** The bounds every backend meets on the fixtures (issue 14). */
export const HF_FIXTURE_BOUNDS = {
  /** max |Δ logits| / max |reference logits|. */
  logitsRelative: 1e-5,
  /** |Δ loss|. */
  lossError: 1e-6,
  /** Per parameter: max |Δ gradient| / max |reference gradient|. */
  gradientRelative: 1e-4,
} as const;

/** What one fixture measured. */
export interface FixtureMeasurement {
  /** max |Δ logits| / max |reference logits|. */
  logitsRelative: number;
  /** |Δ loss|. */
  lossError: number;
  /** Per gradient name: max |Δ| / max |reference|. */
  gradientRelative: Map<string, number>;
  /** Reference gradients kiln had no parameter for, and kiln parameters without a reference gradient. */
  unmatchedGradients: string[];
  /** kiln's greedy tokens and the reference's (null for the adapter, whose fixture has none). */
  greedy: { kiln: number[]; reference: number[] | null };
}

/** How to run a fixture. */
export interface MeasureHfFixtureOptions {
  /** The attention kernel of the forward pass (default 'naive'). */
  attention?: 'flash' | 'naive';
}

function values(entry: RawTensor): Float32Array {
  return Float32Array.from(decodeHostValues(entry.data, entry.dtype));
}

function relative(actual: Float32Array, expected: Float32Array): number {
  let difference = 0;
  let scale = 0;
  for (let index = 0; index < expected.length; index++) {
    difference = Math.max(difference, Math.abs(actual[index] - expected[index]));
    scale = Math.max(scale, Math.abs(expected[index]));
  }
  return difference / Math.max(scale, 1e-30);
}

/** Loads fixture `name` from `fixturesDirectory` on `backend` (in f32) and measures kiln against its reference. */
export async function measureHfFixture(
  fixturesDirectory: string,
  name: HfFixtureName,
  backend: KernelBackend,
  options: MeasureHfFixtureOptions = {},
): Promise<FixtureMeasurement> {
  const attention = options.attention ?? 'naive';
  const isAdapter = name.endsWith('-lora');
  const directory = join(fixturesDirectory, name);
  const modelDirectory = isAdapter ? join(fixturesDirectory, name.replace(/-lora$/, '')) : directory;
  const reference = (await readSafetensorsFile(join(directory, 'reference.safetensors'))).tensors;
  const referenceJson = JSON.parse(await readFile(join(directory, 'reference.json'), 'utf8')) as { loss: number };
  const baseJson = JSON.parse(await readFile(join(modelDirectory, 'reference.json'), 'utf8')) as {
    generate_prompt: number[];
    generate_greedy_8: number[];
  };
  const model = await loadModelDirectory(modelDirectory, { backend, adapter: isAdapter ? directory : undefined });
  try {
    const idsEntry = reference.get('input_ids')!;
    const [batch, length] = idsEntry.shape;
    const ids = tensor(
      new Int32Array(
        idsEntry.data.buffer.slice(idsEntry.data.byteOffset, idsEntry.data.byteOffset + idsEntry.data.byteLength),
      ),
      [batch, length],
      { dtype: 'i32', backend },
    );
    const vocab = model.config.vocabSize;
    const logits = model.forward(ids, { attention, checkpointActivations: false, computeDType: 'f32' });
    const loss = tidy(() =>
      crossEntropy(slice(logits, [0, 0, 0], [batch, length - 1, vocab]), slice(ids, [0, 1], [batch, length - 1])),
    );
    const kilnLogits = (await logits.data()) as Float32Array;
    const kilnLoss = (await loss.data())[0];
    backward(loss);
    const trainable = isAdapter ? (model.adapter as LoraAdapter).parameters : model.parameters;
    const gradientRelative = new Map<string, number>();
    const unmatchedGradients: string[] = [];
    const referenceNames = new Set(
      [...reference.keys()].filter((key) => key.startsWith('grad.')).map((key) => key.slice(5)),
    );
    for (const [parameterName, parameter] of trainable) {
      // PEFT's module tree names adapter parameters with the adapter name ("default"), which the saved file drops.
      const referenceName = [...referenceNames].find(
        (candidate) => candidate === parameterName || candidate.replace('.default.', '.') === parameterName,
      );
      if (referenceName === undefined || parameter.grad === null || parameter.grad === undefined) {
        unmatchedGradients.push(parameterName);
        continue;
      }
      referenceNames.delete(referenceName);
      const entry = reference.get(`grad.${referenceName}`)!;
      const layout = isAdapter ? undefined : model.family.fileLayout(parameterName, model.config);
      const expected = fromFileLayout(values(entry), entry.shape, layout, model.config);
      gradientRelative.set(parameterName, relative((await parameter.grad.data()) as Float32Array, expected));
    }
    unmatchedGradients.push(...referenceNames);
    const kiln = await generate(model, baseJson.generate_prompt, { maxTokens: 8, temperature: 0 });
    const result: FixtureMeasurement = {
      logitsRelative: relative(kilnLogits, values(reference.get('logits')!)),
      lossError: Math.abs(kilnLoss - referenceJson.loss),
      gradientRelative,
      unmatchedGradients,
      greedy: { kiln, reference: isAdapter ? null : baseJson.generate_greedy_8 },
    };
    logits.dispose();
    ids.dispose();
    return result;
  } finally {
    model.dispose();
  }
}

/** What a measurement misses of HF_FIXTURE_BOUNDS, one line per miss (empty when it passes). */
export function hfFixtureFailures(measured: FixtureMeasurement): string[] {
  const failures: string[] = [];
  if (measured.unmatchedGradients.length > 0)
    failures.push(`gradients without a counterpart: ${measured.unmatchedGradients.join(', ')}`);
  if (measured.gradientRelative.size === 0) failures.push('no gradient was compared');
  if (!(measured.logitsRelative < HF_FIXTURE_BOUNDS.logitsRelative))
    failures.push(`logits ${measured.logitsRelative.toExponential(2)} relative ≥ ${HF_FIXTURE_BOUNDS.logitsRelative}`);
  if (!(measured.lossError < HF_FIXTURE_BOUNDS.lossError))
    failures.push(`loss off by ${measured.lossError.toExponential(2)} ≥ ${HF_FIXTURE_BOUNDS.lossError}`);
  for (const [parameter, error] of measured.gradientRelative) {
    if (!(error < HF_FIXTURE_BOUNDS.gradientRelative))
      failures.push(
        `gradient of ${parameter} ${error.toExponential(2)} relative ≥ ${HF_FIXTURE_BOUNDS.gradientRelative}`,
      );
  }
  if (measured.greedy.kiln.length !== 8) failures.push(`${measured.greedy.kiln.length} greedy tokens instead of 8`);
  if (measured.greedy.reference !== null && measured.greedy.kiln.join(',') !== measured.greedy.reference.join(',')) {
    failures.push(
      `greedy tokens [${measured.greedy.kiln.join(', ')}] instead of [${measured.greedy.reference.join(', ')}]`,
    );
  }
  return failures;
}
