/** The short sample `kiln train` prints at the end of a run. */
import { getBackend } from '@kiln/core';
import { generate } from '@kiln/trainer';
import { loadModelFrom } from './model-loading.js';
import { TokenTextStream, promptTokens } from './output/byte-stream.js';

/** The prompt of the end-of-run sample (the default corpus is TypeScript). */
export const SAMPLE_PROMPT = 'export function ';

/** Generates from the model in `directory` on the default backend and returns the new text. */
export async function sampleText(directory: string, options: { prompt: string; maxTokens: number; temperature: number; seed: number }): Promise<string> {
  const { model } = await loadModelFrom(directory, getBackend());
  try {
    const stream = new TokenTextStream(model.config.vocabSize);
    const tokens = await generate(model, promptTokens(options.prompt, model.config.vocabSize), {
      maxTokens: options.maxTokens,
      temperature: options.temperature,
      seed: options.seed,
    });
    return tokens.map((id) => stream.push(id)).join('') + stream.flush();
  } finally {
    model.dispose();
  }
}
