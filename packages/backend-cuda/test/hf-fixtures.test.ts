// The Hugging Face reference fixtures (transformers/PEFT ground truth, in the trainer's
// test/fixtures/hf) on a real CUDA GPU: logits within 1e-5 relative, the loss within 1e-6, every
// parameter's gradient within 1e-4 relative and the same greedy tokens. The same fixtures run on
// both simulators in @kiln/native-host (test/hf-fixtures.test.ts).
import { describe, it } from 'vitest';
import { expectWithinHfBounds, HF_MODEL_FIXTURES, measureHfFixture } from '../../trainer/test/hf-fixtures.js';
import { cudaBackendPlugin } from '../src/index.js';

// The same ground truth on a real GPU: runs where probe() finds a usable device (the lead's GPU
// check: `pnpm --filter @kiln/backend-cuda exec vitest run test/hf-fixtures.test.ts`), and is
// reported skipped with probe()'s reason everywhere else.
const probe = cudaBackendPlugin.probe() as { available: boolean; reason?: string };

describe.skipIf(!probe.available)(
  `Hugging Face reference fixtures on a real CUDA GPU${probe.available ? '' : ` (${probe.reason})`}`,
  () => {
    for (const name of HF_MODEL_FIXTURES) {
      it(`${name}: logits, loss, gradients and greedy tokens match transformers`, async () => {
        const backend = await cudaBackendPlugin.create();
        try {
          const measured = await measureHfFixture(name, backend, 'flash');
          expectWithinHfBounds(measured, `cuda-gpu ${name}`);
        } finally {
          backend.dispose?.();
        }
      }, 120_000);
    }
  },
);
