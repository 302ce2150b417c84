/**
 * The Hugging Face reference fixtures (fixtures/hf/, made by transformers and PEFT, see its
 * README) for the tests: their directory, and `@kiln/trainer/testing`'s measurement bound to it.
 * Shared by the trainer's CPU test and the backends' simulator tests, so every backend is held to
 * the same ground truth.
 */
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import type { KernelBackend } from '@kiln/core';
import {
  measureHfFixture as measureInDirectory,
  type FixtureMeasurement,
  type HfFixtureName,
} from '../src/testing/index.js';

export { HF_MODEL_FIXTURES, type FixtureMeasurement } from '../src/testing/index.js';

/** The fixture directory. */
export const HF_FIXTURES = fileURLToPath(new URL('./fixtures/hf/', import.meta.url));

/** Loads fixture `name` on `backend` and measures kiln against its reference. */
export function measureHfFixture(
  name: HfFixtureName,
  backend: KernelBackend,
  attention: 'flash' | 'naive' = 'naive',
): Promise<FixtureMeasurement> {
  return measureInDirectory(HF_FIXTURES, name, backend, { attention });
}

/** Asserts issue 14's bounds on a measurement (logits 1e-5 relative, loss 1e-6, gradients 1e-4 relative, greedy tokens) and logs its figures under `label`. */
export function expectWithinHfBounds(measured: FixtureMeasurement, label: string): void {
  expect(measured.unmatchedGradients).toEqual([]);
  expect(measured.logitsRelative).toBeLessThan(1e-5);
  expect(measured.lossError).toBeLessThan(1e-6);
  for (const [parameter, error] of measured.gradientRelative) expect(error, parameter).toBeLessThan(1e-4);
  if (measured.greedy.reference !== null) expect(measured.greedy.kiln).toEqual(measured.greedy.reference);
  console.log(
    `${label}: logits ${measured.logitsRelative.toExponential(2)}, loss ${measured.lossError.toExponential(2)}, worst gradient ${Math.max(...measured.gradientRelative.values()).toExponential(2)}`,
  );
}
