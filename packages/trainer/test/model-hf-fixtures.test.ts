/**
 * kiln against transformers/PEFT ground truth (fixtures/hf, see its README) on the CPU backend:
 * logits within 1e-5 relative, the loss within 1e-6, every parameter's gradient within 1e-4
 * relative (the LoRA parameters for the adapter) and the same 8 greedy tokens.
 */
import { setBackend } from '@kiln/core';
import { createCpuBackend } from '@kiln/backend-cpu';
import { beforeAll, describe, expect, it } from 'vitest';
import { HF_MODEL_FIXTURES, measureHfFixture } from './hf-fixtures.js';

const backend = createCpuBackend();
beforeAll(() => setBackend(backend));

describe('Hugging Face reference fixtures on the CPU backend', () => {
  for (const name of HF_MODEL_FIXTURES) {
    for (const attention of ['naive', 'flash'] as const) {
      it(`${name} (${attention} attention): logits, loss, gradients and greedy tokens match`, async () => {
        const measured = await measureHfFixture(name, backend, attention);
        expect(measured.unmatchedGradients).toEqual([]);
        expect(measured.gradientRelative.size).toBeGreaterThan(0);
        expect(measured.logitsRelative).toBeLessThan(1e-5);
        expect(measured.lossError).toBeLessThan(1e-6);
        for (const [parameter, error] of measured.gradientRelative) expect(error, parameter).toBeLessThan(1e-4);
        if (measured.greedy.reference !== null) expect(measured.greedy.kiln).toEqual(measured.greedy.reference);
        expect(measured.greedy.kiln).toHaveLength(8);
      });
    }
  }
});
