// Per-kernel device timing (runtime/kernel_profiler.h) on the simulated CUDA backend: every launch
// between startKernelTiming() and stopKernelTiming() is counted under its name (shapes dropped),
// with the bytes / flops its launcher declares and a non-negative time (the simulator's events
// read the host clock); launches outside the window are not counted; stopping twice gives nothing.
import { add, matmul, randomNormal, setBackend, sum, tidy } from '@kiln/core';
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
  },
);
