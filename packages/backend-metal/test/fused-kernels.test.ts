// Metal's own fused MSL kernels where the conformance kit cannot look: every one native in every
// float dtype, and rope's host-computed tables (f64, MSL has none) leaving no scratch behind with
// inverse undoing forward at long offsets. The checks shared with CUDA (target errors, dWeight
// determinism, typed errors) run on both simulators in @kiln/native-host (test/fused-kernels.test.ts).
import { createReferenceBackend } from '@kiln/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { createSimulatedMetalBackend } from '../src/simulator.js';
import { blank, put, read, series } from '../../native-host/test/support/tensors.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

describe.skipIf(skipReason !== undefined)(`fused MSL kernels${skipReason ? ` (${skipReason})` : ''}`, () => {
  const backend = createSimulatedMetalBackend();
  const reference = createReferenceBackend();
  afterAll(() => {
    backend.dispose();
    reference.dispose?.();
  });

  it('declares checksIndices and runs every fused kernel natively in every float dtype', () => {
    expect(backend.capabilities.checksIndices).toBe(true);
    for (const dtype of ['f32', 'f16', 'bf16'] as const) {
      for (const kernel of ['softmax', 'rmsNormBackward', 'rope', 'crossEntropyBackward', 'adamw'] as const)
        expect(backend.capabilities.supports(kernel, dtype)).toBe(true);
      expect(backend.capabilities.supports('attention', dtype)).toBe(true);
    }
    expect(backend.capabilities.supports('softmax', 'i32')).toBe(false);
  });

  it('rope: matches the reference at a long offset, inverse undoes forward, and the table scratch is returned to the pool', async () => {
    const shape = [1, 2, 6, 16];
    const count = 2 * 6 * 16;
    const data = series(count, 9);
    const x = put(backend, shape, data);
    const [rotated, restored] = [blank(backend, shape), blank(backend, shape)];
    const before = backend.memory().bufferCount;
    backend.rope(x, rotated, 4000, 500000, false);
    backend.rope(rotated, restored, 4000, 500000, true);
    expect(backend.memory().bufferCount).toBe(before);
    const onReference = { x: put(reference, shape, data), out: blank(reference, shape) };
    reference.rope!(onReference.x, onReference.out, 4000, 500000, false);
    const [got, want, back] = [
      await read(backend, rotated),
      await read(reference, onReference.out),
      await read(backend, restored),
    ];
    for (let i = 0; i < count; i++) {
      expect(Math.abs(got[i] - want[i])).toBeLessThan(1e-6);
      expect(Math.abs(back[i] - data[i])).toBeLessThan(1e-5);
    }
    for (const ref of [x, rotated, restored]) backend.free(ref.buffer);
    for (const ref of Object.values(onReference)) reference.free(ref.buffer);
  });
});
