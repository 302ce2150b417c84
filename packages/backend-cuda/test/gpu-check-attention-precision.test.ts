// scripts/gpu-check-attention-precision.mjs without a GPU: on the simulator, with torch missing,
// it reports kiln's f32 gradient error against the float64 reference backend (no ratio, no verdict).
import { fileURLToPath } from 'node:url';
import { createReferenceBackend } from '@kiln/testing';
import { describe, expect, it } from 'vitest';
import { checkAttentionPrecision, relativeL2 } from '../scripts/gpu-check-attention-precision.mjs';
import { createSimulatedCudaBackend } from '../src/simulator.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

describe('gpu-check attention precision', () => {
  it('measures relative L2 error', () => {
    expect(relativeL2([1, 2, 2], [1, 2, 3])).toBeCloseTo(1 / Math.sqrt(14), 12);
    expect(relativeL2([3, 4], [3, 4])).toBe(0);
  });

  it.skipIf(skipReason !== undefined)(
    `reports kiln's error from float64 when torch cannot run${skipReason ? ` (${skipReason})` : ''}`,
    async () => {
      const backend = createSimulatedCudaBackend();
      const reference = createReferenceBackend();
      const lines: string[] = [];
      try {
        const missing = fileURLToPath(new URL('../scripts/no-such-script.py', import.meta.url));
        const result = await checkAttentionPrecision(backend, reference, {
          log: (line: string) => lines.push(line),
          pythonCommand: ['python3', missing],
        });
        expect(result.torch).toBeUndefined();
        expect(result.ratio).toBeNull();
        expect(result.passed).toBeNull();
        for (const name of ['dq', 'dk', 'dv'] as const) {
          expect(result.kiln[name]).toBeGreaterThan(0);
          expect(result.kiln[name]).toBeLessThan(1e-5);
        }
        expect(lines.join('\n')).toMatch(/kiln dq \d\.\d\de-\d+, dk .*torch not run/);
        expect(backend.memory().bufferCount).toBe(0);
      } finally {
        backend.dispose();
      }
    },
  );
});
