/**
 * Generation throughput of a reference model on one backend: tokens per second of KV-cached
 * decoding (greedy, f32, the attention the backend's train step uses) with a short prompt and
 * with one that fills the context. Each measurement generates `tokens + 1` tokens after a prompt
 * of P random bytes and times the gaps between consecutive tokens (one decode step each: the
 * forward at positions P … P + tokens − 1, the logits download and the sampling; the prefill is
 * not timed). The full-context prompt is contextLength − tokens long, so the last step decodes
 * at the last position of the context (past it, generation would rebuild the window). With the
 * cache preallocated and written in place, the two rates differ only by attention's own cost.
 */
import { setBackend, type KernelBackend } from '@kiln/core';
import { createLlamaModel, forwardOptionsFor, generate, type ModelPresetName } from '@kiln/trainer';
import { median } from './timing.js';
import { benchConfig } from './train-throughput.js';

/** The short prompt's length. */
export const SHORT_PROMPT_TOKENS = 16;

/** Decoding speed with one prompt length. */
export interface DecodeRate {
  /** Prompt tokens before the timed steps (the cache length at the first one). */
  promptLength: number;
  /** Median milliseconds per decoded token. */
  msPerToken: number;
  /** 1000 / msPerToken. */
  tokensPerSecond: number;
}

/** One model's generation throughput on one backend. */
export interface GenerationThroughput {
  /** Preset name. */
  model: string;
  /** The model's context length. */
  contextLength: number;
  /** Decode steps timed per run. */
  tokens: number;
  /** Timed runs per prompt length. */
  runs: number;
  /** Attention implementation used. */
  attention: string;
  /** With a 16-token prompt. */
  short: DecodeRate;
  /** With a prompt that fills the context (contextLength − tokens). */
  full: DecodeRate;
  /** short.tokensPerSecond / full.tokensPerSecond. */
  ratio: number;
}

/** Deterministic prompt bytes (xorshift32). */
function promptOf(length: number, seed: number, vocabSize: number): number[] {
  let state = seed >>> 0 || 1;
  return Array.from({ length }, () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) % vocabSize;
  });
}

/** Times `runs` generations (after `warmup` untimed ones) with each prompt length. */
export async function measureGeneration(
  preset: ModelPresetName,
  backend: KernelBackend,
  options: { runs: number; warmup: number },
): Promise<GenerationThroughput> {
  setBackend(backend);
  const config = benchConfig(preset, backend);
  const { contextLength, vocabSize } = config.model;
  const tokens = Math.max(1, Math.min(16, Math.floor(contextLength / 4)));
  const forwardOptions = forwardOptionsFor(config);
  const model = createLlamaModel(config.model, { backend, seed: config.seed });
  /** Gaps between consecutive tokens of one generation after a prompt of `promptLength` bytes. */
  const gapsOf = async (promptLength: number, seed: number): Promise<number[]> => {
    const times: number[] = [];
    await generate(model, promptOf(promptLength, seed, vocabSize), {
      maxTokens: tokens + 1,
      temperature: 0,
      computeDType: forwardOptions.computeDType,
      attention: forwardOptions.attention,
      onToken: () => {
        times.push(performance.now());
      },
    });
    return times.slice(1).map((time, index) => time - times[index]);
  };
  const lengths = [Math.min(SHORT_PROMPT_TOKENS, contextLength - tokens), contextLength - tokens];
  const gaps: number[][] = lengths.map(() => []);
  try {
    // Interleaved, so that a busy machine slows both prompt lengths alike.
    for (let run = 0; run < options.warmup + options.runs; run++) {
      for (const [index, length] of lengths.entries()) {
        const measured = await gapsOf(length, run + 1);
        if (run >= options.warmup) gaps[index].push(...measured);
      }
    }
    const [short, full] = lengths.map((promptLength, index): DecodeRate => {
      const msPerToken = median(gaps[index]);
      return { promptLength, msPerToken, tokensPerSecond: 1000 / msPerToken };
    });
    return {
      model: preset,
      contextLength,
      tokens,
      runs: options.runs,
      attention: forwardOptions.attention,
      short,
      full,
      ratio: short.tokensPerSecond / full.tokensPerSecond,
    };
  } finally {
    model.dispose();
  }
}
