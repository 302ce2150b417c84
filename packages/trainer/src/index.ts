/**
 * @kiln/trainer — Hugging Face model families (Llama, GPT-2, GPTBigCode) and LoRA, data loading,
 * the training loop, atomic checkpoints and generation. It talks only to @kiln/core, so it runs
 * unchanged on any backend the registry resolves.
 */
export type * from './contracts.js';
export * from './model/index.js';
export * from './lora/index.js';
export * from './data/index.js';
export * from './tokenizer/index.js';
export * from './config/index.js';
export * from './train/index.js';
export * from './checkpoint/index.js';
