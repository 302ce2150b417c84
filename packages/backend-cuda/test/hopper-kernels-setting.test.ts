// KILN_CUDA_HOPPER_KERNELS=0 keeps the sm_90a kernels off on a compute capability 9.0 device (the
// simulator's default): a half matmul sized for the wgmma kernel runs mma.sync and the attention
// at D 64 runs FlashAttention-2, both still matching their references, and matmulInfo() reports
// no Hopper kernels; any value but '0' or '1' is refused by name when a backend is created.
// The setting is read when the kernel choice is first made (configureSimulator clears that choice).
import { ConfigError } from '@kiln/core';
import { createReferenceBackend } from '@kiln/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkHopperKernelsSetting, type CudaBackend } from '../src/cuda-backend.js';
import { configureSimulator, createSimulatedCudaBackend } from '../src/simulator.js';
import {
  HALF_RELATIVE_LIMIT,
  makeInputs,
  maxAbs,
  maxAbsError,
  runAttention,
  runAttentionForward,
} from './attention-support.js';
import { expectHalfMatmulMatchesReference } from './half-matmul-check.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();
const WGMMA_SIZED_MATMUL = { batch: 1, m: 328, n: 264, k: 40, transposeA: false, transposeB: false };

describe('KILN_CUDA_HOPPER_KERNELS values', () => {
  it("accepts unset, '0' and '1' and refuses anything else, naming the value", () => {
    for (const good of [undefined, '0', '1']) expect(() => checkHopperKernelsSetting(good)).not.toThrow();
    for (const bad of ['off', 'false', '', '2'])
      expect(() => checkHopperKernelsSetting(bad), JSON.stringify(bad)).toThrow(ConfigError);
    expect(() => checkHopperKernelsSetting('off')).toThrow(/KILN_CUDA_HOPPER_KERNELS must be '0'.*got "off"/);
  });
});

describe.skipIf(skipReason !== undefined)(
  `KILN_CUDA_HOPPER_KERNELS=0 on a simulated 9.0 device${skipReason ? ` (skipped: ${skipReason})` : ''}`,
  () => {
    let backend: CudaBackend;
    const reference = createReferenceBackend();
    beforeAll(() => {
      process.env.KILN_CUDA_HOPPER_KERNELS = '0';
      configureSimulator({ computeCapability: '9.0' });
      backend = createSimulatedCudaBackend({ matmul: 'kiln' });
    });
    afterAll(() => {
      backend?.dispose();
      reference.dispose?.();
      delete process.env.KILN_CUDA_HOPPER_KERNELS;
      configureSimulator({ computeCapability: '9.0' });
    });

    it('reports no Hopper kernels and runs mma.sync for a wgmma-sized bf16 matmul', async () => {
      expect(backend.capabilities.matmul.summary).not.toMatch(/wgmma/);
      const before = backend.hopperMatmulLaunches;
      await expectHalfMatmulMatchesReference(backend, 'bf16', WGMMA_SIZED_MATMUL);
      expect(backend.hopperMatmulLaunches - before, 'wgmma matmul launches').toBe(0);
    });

    it('runs FlashAttention-2 for bf16 D=64 attention, matching the float64 reference', async () => {
      const geometry = { batch: 1, headsQ: 2, headsKV: 1, lengthQ: 70, lengthK: 90, headDim: 64, causal: true };
      const inputs = makeInputs(geometry, 'bf16', 9100);
      const expected = await runAttention(reference, 'f32', geometry, inputs);
      const before = backend.hopperAttentionLaunches;
      const forward = await runAttentionForward(backend, 'bf16', geometry, inputs, 'heads-major');
      expect(backend.hopperAttentionLaunches - before, 'Hopper attention launches').toBe(0);
      const limit = HALF_RELATIVE_LIMIT.bf16! * Math.max(maxAbs(expected.out), 1);
      expect(maxAbsError(forward.out, expected.out)).toBeLessThanOrEqual(limit);
    });

    it('takes the Hopper kernels again once the setting is gone and the kernel choice is cleared', async () => {
      delete process.env.KILN_CUDA_HOPPER_KERNELS;
      configureSimulator({ computeCapability: '9.0' });
      const before = backend.hopperMatmulLaunches;
      await expectHalfMatmulMatchesReference(backend, 'bf16', WGMMA_SIZED_MATMUL);
      expect(backend.hopperMatmulLaunches - before, 'wgmma matmul launches').toBe(1);
    });
  },
);
