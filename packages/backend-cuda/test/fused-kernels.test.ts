// CUDA's own fused kernels where the conformance kit cannot look: crossEntropyBackward over zero
// classes, and the live matmul path in capabilities. The checks shared with Metal (target errors,
// dWeight determinism, typed errors) run on both simulators in @kiln/native-host
// (test/fused-kernels.test.ts).
import { afterAll, describe, expect, it } from 'vitest';
import { createSimulatedCudaBackend } from '../src/simulator.js';
import { put } from '../../native-host/test/support/tensors.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

describe.skipIf(skipReason !== undefined)(
  `fused kernels on the simulator${skipReason ? ` (${skipReason})` : ''}`,
  () => {
    const backend = createSimulatedCudaBackend({ matmul: 'kiln' });
    afterAll(() => backend.dispose());

    it('crossEntropyBackward with 0 classes: a target that is not ignoreIndex is out of range, and the next synchronize rejects', async () => {
      const targets = put(backend, [2], [0, -1], 'i32');
      const logits = { buffer: backend.alloc(4), shape: [2, 0], dtype: 'f32' as const };
      const dLogits = { buffer: backend.alloc(4), shape: [2, 0], dtype: 'f32' as const };
      backend.crossEntropyBackward(logits, targets, dLogits, 2, 0, -1, 1);
      await expect(backend.synchronize()).rejects.toThrow(
        /crossEntropyBackward: target 0 of row 0 is out of range \[0, 0\)/,
      );
      await backend.synchronize();
      for (const ref of [targets, logits, dLogits]) backend.free(ref.buffer);
    });

    it('capabilities say which matmul path is live: kiln SIMT f32 and wgmma + TMA / pipelined mma.sync f16/bf16 on simulated tensor cores (the simulated device is cc 9.0 with sm_90a code)', () => {
      const { matmul } = backend.capabilities;
      expect(Number.parseFloat(backend.capabilities.device.computeCapability ?? 'missing')).toBeGreaterThanOrEqual(8);
      expect(matmul.path).toBe('kiln');
      expect(matmul.f16).toMatch(
        /^kiln warp-specialised wgmma \+ TMA kernel \(sm_90a.*pipelined mma\.sync tensor-core kernel .*\(simulated: gpu-sim warp-collective fragments\)/,
      );
      expect(matmul.bf16).toBe(matmul.f16);
      expect(matmul.f32).toMatch(/register-tiled SIMT/);
      expect(backend.matmulPath).toMatch(/^kiln kernels: .*matmul: 'kiln'/);
      expect(backend.capabilities.supports('rmsNormBackward', 'bf16')).toBe(true);
      expect(backend.capabilities.supports('attention', 'f32') && backend.capabilities.flashAttention).toBe(true);
    });
  },
);
