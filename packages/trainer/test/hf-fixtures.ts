/**
 * The Hugging Face reference fixtures (fixtures/hf/, made by transformers and PEFT, see its
 * README) run through kiln on a given backend: the logits, the causal-LM loss, every parameter's
 * gradient (LoRA parameters only for the adapter) and 8 greedy tokens, with the measured errors
 * returned for the caller to bound. Shared by the trainer's CPU test and the backends' simulator
 * tests, so every backend is held to the same ground truth.
 */
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { backward, crossEntropy, decodeHostValues, readSafetensorsFile, slice, tensor, tidy, type KernelBackend, type RawTensor, type Tensor } from '@kiln/core';
import { readFile } from 'node:fs/promises';
import { generate, loadModelDirectory, type LoraAdapter } from '../src/index.js';
import { fromFileLayout } from '../src/model/families/file-layout.js';

/** The fixture directory. */
export const HF_FIXTURES = fileURLToPath(new URL('./fixtures/hf/', import.meta.url));

/** The model fixtures and their adapters. */
export const HF_MODEL_FIXTURES = ['llama-gqa', 'gpt2', 'bigcode-mqa', 'llama-gqa-lora'] as const;

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

/** Loads fixture `name` on `backend` and measures kiln against its reference. */
export async function measureHfFixture(name: (typeof HF_MODEL_FIXTURES)[number], backend: KernelBackend, attention: 'flash' | 'naive' = 'naive'): Promise<FixtureMeasurement> {
  const isAdapter = name.endsWith('-lora');
  const directory = join(HF_FIXTURES, name);
  const modelDirectory = isAdapter ? join(HF_FIXTURES, name.replace(/-lora$/, '')) : directory;
  const reference = (await readSafetensorsFile(join(directory, 'reference.safetensors'))).tensors;
  const referenceJson = JSON.parse(await readFile(join(directory, 'reference.json'), 'utf8')) as { loss: number };
  const baseJson = JSON.parse(await readFile(join(modelDirectory, 'reference.json'), 'utf8')) as { generate_prompt: number[]; generate_greedy_8: number[] };
  const model = await loadModelDirectory(modelDirectory, { backend, adapter: isAdapter ? directory : undefined });
  try {
    const idsEntry = reference.get('input_ids')!;
    const [batch, length] = idsEntry.shape;
    const ids = tensor(new Int32Array(idsEntry.data.buffer.slice(idsEntry.data.byteOffset, idsEntry.data.byteOffset + idsEntry.data.byteLength)), [batch, length], { dtype: 'i32', backend });
    const vocab = model.config.vocabSize;
    const logits = model.forward(ids, { attention, checkpointActivations: false, computeDType: 'f32' });
    const loss = tidy(() => crossEntropy(slice(logits, [0, 0, 0], [batch, length - 1, vocab]), slice(ids, [0, 1], [batch, length - 1])));
    const kilnLogits = (await logits.data()) as Float32Array;
    const kilnLoss = (await loss.data())[0];
    backward(loss);
    const trainable = isAdapter ? (model.adapter as LoraAdapter).parameters : model.parameters;
    const gradientRelative = new Map<string, number>();
    const unmatchedGradients: string[] = [];
    const referenceNames = new Set([...reference.keys()].filter((key) => key.startsWith('grad.')).map((key) => key.slice(5)));
    for (const [parameterName, parameter] of trainable) {
      // PEFT's module tree names adapter parameters with the adapter name ("default"), which the saved file drops.
      const referenceName = [...referenceNames].find((candidate) => candidate === parameterName || candidate.replace('.default.', '.') === parameterName);
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
