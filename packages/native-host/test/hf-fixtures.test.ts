// The Hugging Face reference fixtures (transformers/PEFT ground truth, in the trainer's
// test/fixtures/hf) on both simulated GPU backends — native fused kernels (attention, norms, rope)
// running in gpu-sim: logits within 1e-5 relative, the loss within 1e-6, every parameter's
// gradient within 1e-4 relative (the LoRA parameters for the adapter) and the same greedy tokens,
// the bounds the trainer's CPU test holds (packages/trainer/test/model-hf-fixtures.test.ts).
import { afterAll, describe, it } from 'vitest';
import { expectWithinHfBounds, HF_MODEL_FIXTURES, measureHfFixture } from '../../trainer/test/hf-fixtures.js';
import { SIMULATED_BACKENDS, title } from './support/backends.js';

describe.each(SIMULATED_BACKENDS)('Hugging Face reference fixtures on the $name simulator', (target) => {
  describe.skipIf(target.skipReason !== undefined)(title(target), () => {
    const backend = target.skipReason === undefined ? target.create() : undefined;
    afterAll(() => backend?.dispose());
    for (const name of HF_MODEL_FIXTURES) {
      it(`${name}: logits, loss, gradients and greedy tokens match transformers`, async () => {
        const measured = await measureHfFixture(name, backend!, 'flash');
        expectWithinHfBounds(measured, `${target.name}-sim ${name}`);
      }, 120_000);
    }
  });
});
