// Metal's memory figure: the GPU's recommendedMaxWorkingSetSize is the total kiln reports and the
// buffer pool's default limit (beyond it macOS starts paging GPU memory). The pool itself is the
// shared host's, tested on both simulators in @kiln/native-host (test/allocator.test.ts).
import { OutOfMemoryError } from '@kiln/core';
import { afterEach, describe, expect, it } from 'vitest';
import { configureSimulator, createSimulatedMetalBackend } from '../src/simulator.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();
const MiB = 2 ** 20;

describe.skipIf(skipReason !== undefined)(`memory limit${skipReason ? ` (${skipReason})` : ''}`, () => {
  afterEach(() => configureSimulator({ memoryBytes: 4 * 2 ** 30, recommendedMaxWorkingSetSize: 3 * 2 ** 30 }));

  it('reports recommendedMaxWorkingSetSize as the total, and it is the default limit', () => {
    configureSimulator({ recommendedMaxWorkingSetSize: 64 * MiB });
    const backend = createSimulatedMetalBackend();
    expect(backend.memory()).toMatchObject({ totalBytes: 64 * MiB, limitBytes: 64 * MiB });
    expect(backend.capabilities.device.memoryTotalBytes).toBe(64 * MiB);
    expect(backend.capabilities.implementation).toBe(
      'MSL kernels, simdgroup-matrix matmul, run by the CPU simulator (tests only)',
    );
    expect(() => backend.alloc(65 * MiB)).toThrow(
      /within the memoryLimitBytes of 64\.00 MiB \(by default the GPU's recommendedMaxWorkingSetSize\)/,
    );
    expect(() => backend.alloc(65 * MiB)).toThrowError(OutOfMemoryError);
    backend.dispose();
  });
});
