/** The short sample `kiln train` prints at the end of a run. */
import { getBackend } from '@kiln/core';
import { generate } from '@kiln/trainer';
import { loadModelFrom } from './model-loading.js';
import { TokenTextStream, promptTokens } from './output/byte-stream.js';

const BYTE_VOCABULARY = 256;

/** The prompt of the end-of-run sample (the default corpus is TypeScript). */
export const SAMPLE_PROMPT = 'export function ';

/** Generates from the model in `directory`, trained on byte-level text, on the default backend and returns the new text (ids past the 256 bytes of a larger fine-tuned vocabulary are never sampled). */
export async function sampleText(
  directory: string,
  options: { prompt: string; maxTokens: number; temperature: number; seed: number },
): Promise<string> {
  const { model } = await loadModelFrom(directory, getBackend());
  try {
    const stream = new TokenTextStream(BYTE_VOCABULARY);
    const tokens = await generate(model, promptTokens(options.prompt, BYTE_VOCABULARY), {
      vocabularyLimit: BYTE_VOCABULARY,
      maxTokens: options.maxTokens,
      temperature: options.temperature,
      seed: options.seed,
    });
    return tokens.map((id) => stream.push(id)).join('') + stream.flush();
  } finally {
    model.dispose();
  }
}
