/**
 * kiln against transformers/PEFT ground truth (fixtures/hf, see its README) on the CPU backend:
 * logits within 1e-5 relative, the loss within 1e-6, every parameter's gradient within 1e-4
 * relative (the LoRA parameters for the adapter) and the same 8 greedy tokens.
 */
import { setBackend } from '@kiln/core';
import { createCpuBackend } from '@kiln/backend-cpu';
import { beforeAll, describe, expect, it } from 'vitest';
import { HF_FIXTURE_BOUNDS, hfFixtureFailures } from '../src/testing/index.js';
import { HF_MODEL_FIXTURES, measureHfFixture, type FixtureMeasurement } from './hf-fixtures.js';

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

describe('hfFixtureFailures (the bounds the backends and gpu-check share)', () => {
  const passing = (): FixtureMeasurement => ({
    logitsRelative: 3e-7,
    lossError: 5e-7,
    gradientRelative: new Map([['lm_head.weight', 8e-7]]),
    unmatchedGradients: [],
    greedy: { kiln: [1, 2, 3, 4, 5, 6, 7, 8], reference: [1, 2, 3, 4, 5, 6, 7, 8] },
  });

  it('passes a measurement within every bound and names each miss', () => {
    expect(hfFixtureFailures(passing())).toEqual([]);
    expect(HF_FIXTURE_BOUNDS).toEqual({ logitsRelative: 1e-5, lossError: 1e-6, gradientRelative: 1e-4 });
    const missing = {
      ...passing(),
      logitsRelative: 2e-5,
      lossError: Number.NaN,
      gradientRelative: new Map([['lm_head.weight', 3e-4]]),
      unmatchedGradients: ['model.norm.weight'],
      greedy: { kiln: [1, 2, 3, 4, 5, 6, 7, 9], reference: [1, 2, 3, 4, 5, 6, 7, 8] },
    };
    expect(hfFixtureFailures(missing)).toEqual([
      'gradients without a counterpart: model.norm.weight',
      'logits 2.00e-5 relative ≥ 0.00001',
      'loss off by NaN ≥ 0.000001',
      'gradient of lm_head.weight 3.00e-4 relative ≥ 0.0001',
      'greedy tokens [1, 2, 3, 4, 5, 6, 7, 9] instead of [1, 2, 3, 4, 5, 6, 7, 8]',
    ]);
    expect(
      hfFixtureFailures({ ...passing(), gradientRelative: new Map(), greedy: { kiln: [1, 2], reference: null } }),
    ).toEqual(['no gradient was compared', '2 greedy tokens instead of 8']);
  });
});
