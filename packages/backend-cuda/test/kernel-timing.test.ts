// Per-kernel device timing (runtime/kernel_profiler.h) on the simulated CUDA backend: every launch
// between startKernelTiming() and stopKernelTiming() is counted under its name (shapes dropped),
// with the bytes / flops its launcher declares and a non-negative time (the simulator's events
// read the host clock); launches outside the window are not counted; stopping twice gives nothing.
// A matmul on kiln's own kernels names the kernel family that ran, its split-K ranges and a folded
// batch (the simulator's 4 SMs and compute capability 9.0 pick the same way as a GPU's).
import { add, cast, matmul, randomNormal, setBackend, sum, tidy } from '@kiln/core';
import { kernelTimingSourceOf } from '@kiln/core/native-backend';
import { afterAll, describe, expect, it } from 'vitest';
import { createSimulatedCudaBackend } from '../src/simulator.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

describe.skipIf(skipReason !== undefined)(
  `kernel timing on the CUDA simulator${skipReason === undefined ? '' : ` (skipped: ${skipReason})`}`,
  () => {
    const backend = skipReason === undefined ? createSimulatedCudaBackend({ matmul: 'kiln' }) : undefined;
    afterAll(() => backend?.dispose());

    it('counts each launch under its kernel name with its bytes and flops', async () => {
      const cuda = backend!;
      setBackend(cuda);
      const timer = kernelTimingSourceOf(cuda);
      expect(timer).toBeDefined();
      const a = randomNormal([16, 24], { seed: 1, backend: cuda });
      const b = randomNormal([24, 8], { seed: 2, backend: cuda });
      tidy(() => add(a, a)); // before the window: not counted
      timer!.startKernelTiming();
      tidy(() => {
        matmul(a, b);
        matmul(a, b);
        add(a, a);
        add(a, a);
        add(a, a);
      });
      const timings = timer!.stopKernelTiming();
      const names = timings.map((timing) => timing.name);
      const addition = timings.find((timing) => timing.name === 'binary add f32');
      expect(addition, names.join(', ')).toBeDefined();
      expect(addition!.calls).toBe(3);
      expect(addition!.bytes).toBe(3 * 3 * 16 * 24 * 4);
      expect(addition!.milliseconds).toBeGreaterThanOrEqual(0);
      const product = timings.find((timing) => timing.name.startsWith('matmul f32'));
      expect(product, names.join(', ')).toBeDefined();
      expect(product!.calls).toBe(2);
      expect(product!.flops).toBe(2 * 2 * 16 * 8 * 24);
      expect(product!.name).not.toContain('[');
      for (let index = 1; index < timings.length; index++)
        expect(timings[index - 1].milliseconds).toBeGreaterThanOrEqual(timings[index].milliseconds);
      expect(timer!.stopKernelTiming()).toEqual([]);
      tidy(() => sum(a));
      a.dispose();
      b.dispose();
    });

    it("names which of kiln's matmul kernels ran, its split-K ranges and a folded batch", () => {
      const cuda = backend!;
      setBackend(cuda);
      const timer = kernelTimingSourceOf(cuda)!;
      timer.startKernelTiming();
      tidy(() => {
        // f32, one tile: unsplit SIMT.
        matmul(randomNormal([16, 24], { seed: 3 }), randomNormal([24, 8], { seed: 4 }));
        // f32, one partial tile and k = 1000: 4 SMs' worth of k ranges (matmul-split-k.test.ts).
        matmul(randomNormal([100, 1000], { seed: 5 }), randomNormal([1000, 72], { seed: 6 }));
        // bf16 x·Wᵀ over 4 stacked batches sharing W: one matmul of 256 rows, 2 × 3 tiles of 128×192 on wgmma.
        const x = cast(randomNormal([4, 64, 40], { seed: 7 }), 'bf16');
        const w = cast(randomNormal([520, 40], { seed: 8 }), 'bf16');
        matmul(x, w, { transposeB: true });
        // bf16, small: mma.sync.
        matmul(cast(randomNormal([16, 32], { seed: 9 }), 'bf16'), cast(randomNormal([32, 8], { seed: 10 }), 'bf16'));
      });
      const names = timer.stopKernelTiming().map((timing) => timing.name);
      const list = names.join('\n');
      expect(names, list).toContain('matmul f32 batch=1 m=16 n=8 k=24 (kiln f32 SIMT)');
      expect(names, list).toContain('matmul f32 batch=1 m=100 n=72 k=1000 (kiln f32 SIMT, split-K 3)');
      expect(names, list).toContain('matmul bf16 batch=4 m=64 n=520 k=40 transB (kiln wgmma 128x192, batch folded)');
      expect(names, list).toContain('matmul bf16 batch=1 m=16 n=8 k=32 (kiln mma.sync)');
    });
  },
);
