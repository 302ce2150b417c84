// Determinism on the CUDA simulator (issue 15): the same short bf16 training run twice — micro-
// batches with gradient accumulation, precast compute weights, the embedding backward's
// scatterAdd, the multi-tensor gradient norm and AdamW — must end with the same weight bytes.
// The kernels' combine orders are fixed by the shapes and none uses float atomics, so the
// simulator (which runs the real kernel sources) gives the bits the GPU gives run after run;
// scripts/gpu-check/determinism.mjs runs the same check on a GPU.
import { describe, expect, it } from 'vitest';
import { checkDeterminism } from '../scripts/gpu-check/determinism.mjs';
import { createSimulatedCudaBackend } from '../src/simulator.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

describe.skipIf(skipReason !== undefined)(
  `determinism on the CUDA simulator${skipReason ? ` (skipped: ${skipReason})` : ''}`,
  () => {
    it('two bf16 training runs with accumulation end with identical weights, and the weights did change', async () => {
      const result = await checkDeterminism(() => createSimulatedCudaBackend(), {
        preset: 'tiny',
        computeDType: 'bf16',
        steps: 2,
        microBatchSize: 4,
      });
      expect(result.losses.flat().every(Number.isFinite)).toBe(true);
      expect(result.hashes[0]).not.toBe(result.initialHashes[0]);
      expect(result.initialHashes[1]).toBe(result.initialHashes[0]);
      expect(result.hashes[1]).toBe(result.hashes[0]);
      expect(result.identical).toBe(true);
    }, 600_000);

    it('capabilities say the backend is deterministic', () => {
      const backend = createSimulatedCudaBackend();
      try {
        expect(backend.capabilities.deterministic).toBe(true);
        expect(backend.capabilities.determinism).toMatch(/same GPU model/);
      } finally {
        backend.dispose();
      }
    });
  },
);
