// The Hugging Face reference fixtures (transformers/PEFT ground truth, in the trainer's
// test/fixtures/hf) on the simulated Metal backend — native fused kernels (attention, norms, rope)
// running in gpu-sim: logits within 1e-5 relative, the loss within 1e-6, every parameter's
// gradient within 1e-4 relative (the LoRA parameters for the adapter) and the same greedy tokens,
// the bounds the trainer's CPU test holds (packages/trainer/test/model-hf-fixtures.test.ts).
import { afterAll, describe, it } from 'vitest';
import { expectWithinHfBounds, HF_MODEL_FIXTURES, measureHfFixture } from '../../trainer/test/hf-fixtures.js';
import { createSimulatedMetalBackend } from '../src/simulator.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

describe.skipIf(skipReason !== undefined)(`Hugging Face reference fixtures on the simulated Metal backend${skipReason ? ` (${skipReason})` : ''}`, () => {
  const backend = createSimulatedMetalBackend();
  afterAll(() => backend.dispose());
  for (const name of HF_MODEL_FIXTURES) {
    it(`${name}: logits, loss, gradients and greedy tokens match transformers`, async () => {
      const measured = await measureHfFixture(name, backend, 'flash');
      expectWithinHfBounds(measured, `metal-sim ${name}`);
    }, 120_000);
  }
});
