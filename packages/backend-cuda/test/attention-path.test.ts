// describeAttentionPath: the flash-attention kernels `kiln info` names for a CUDA device — the
// sm_90a wgmma + TMA kernels on compute capability 9.0 with sm_90a code (not under
// KILN_CUDA_HOPPER_KERNELS=0), FlashAttention-2 everywhere else — and a simulated backend's line.
import { describe, expect, it } from 'vitest';
import { describeAttentionPath } from '../src/attention-path.js';
import { createSimulatedCudaBackend } from '../src/simulator.js';
import { simulatorSkipReason } from './simulator-status.js';

describe('attention path description', () => {
  it('names the wgmma + TMA kernels on 9.0 with sm_90a code, FlashAttention-2 otherwise', () => {
    const hopper = describeAttentionPath(9, true, 128);
    expect(hopper).toMatch(/^wgmma \+ TMA \(sm_90a, .*\) for f16\/bf16 at head dims 64, 96, 128; FlashAttention-2 /);
    expect(hopper).toMatch(/head dims ≤ 128 \(larger: composed from matmuls\), deterministic backward$/);
    for (const [major, hopperKernels] of [
      [8, false],
      [8, true],
      [9, false],
      [12, true],
    ] as const) {
      const line = describeAttentionPath(major, hopperKernels, 128);
      expect(line, `${major}.x, hopperKernels ${hopperKernels}`).toMatch(/^FlashAttention-2 \(mma\.sync tensor cores/);
      expect(line).not.toContain('wgmma');
    }
    expect(describeAttentionPath(8, false, 96)).toContain('head dims ≤ 96');
  });

  it.skipIf(simulatorSkipReason() !== undefined)(
    "a simulated 9.0 backend reports the wgmma kernels (the simulator's default device)",
    () => {
      const backend = createSimulatedCudaBackend();
      try {
        expect(backend.attentionPath).toMatch(/^wgmma \+ TMA \(sm_90a/);
      } finally {
        backend.dispose();
      }
    },
  );
});
