/**
 * The Hugging Face reference fixtures (fixtures/hf/, made by transformers and PEFT, see its
 * README) for the tests: their directory, and `@kiln/trainer/testing`'s measurement bound to it.
 * Shared by the trainer's CPU test and the backends' simulator tests, so every backend is held to
 * the same ground truth.
 */
import { fileURLToPath } from 'node:url';
import type { KernelBackend } from '@kiln/core';
import { measureHfFixture as measureInDirectory, type FixtureMeasurement, type HfFixtureName } from '../src/testing/index.js';

export { HF_MODEL_FIXTURES, type FixtureMeasurement } from '../src/testing/index.js';

/** The fixture directory. */
export const HF_FIXTURES = fileURLToPath(new URL('./fixtures/hf/', import.meta.url));

/** Loads fixture `name` on `backend` and measures kiln against its reference. */
export function measureHfFixture(name: HfFixtureName, backend: KernelBackend, attention: 'flash' | 'naive' = 'naive'): Promise<FixtureMeasurement> {
  return measureInDirectory(HF_FIXTURES, name, backend, { attention });
}
