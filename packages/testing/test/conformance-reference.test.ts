import { describe, expect, it } from 'vitest';
import {
  createReferenceBackend,
  describeBackendConformance,
  formatSupportMatrix,
  supportMatrix,
} from '../src/index.js';

// The oracle against itself: every case must pass, which checks the kit's own plumbing.
describeBackendConformance('reference', { create: () => createReferenceBackend() });

// No fused kernels and asynchronous reads only: every fused case runs core's composed fallback.
describeBackendConformance('simulated-device', {
  create: () => createReferenceBackend({ fused: false, asyncOnly: true, name: 'simulated-device' }),
});

// An unavailable backend shows up as a skipped suite with its reason (never silently absent).
describeBackendConformance('absent-device', {
  create: () => {
    throw new Error('create() must not be called for an unavailable backend');
  },
  available: async () => false,
  unavailableReason: 'no absent-device on this machine',
});

describe('supportMatrix', () => {
  it('reports native, fallback and unsupported cells', () => {
    const rows = supportMatrix(createReferenceBackend({ fused: ['softmax'], unsupportedDTypes: { matmul: ['bf16'] } }));
    const status = (kernel: string, dtype: string) =>
      rows.find((row) => row.kernel === kernel && row.dtype === dtype)?.status;
    expect(status('matmul', 'f32')).toBe('native');
    expect(status('matmul', 'bf16')).toBe('fallback');
    expect(status('matmul', 'i32')).toBe('unsupported');
    expect(status('softmax', 'f16')).toBe('native');
    expect(status('attention', 'f32')).toBe('fallback');
    expect(status('gather', 'i32')).toBe('native');
    expect(rows).toHaveLength(28 * 4);
  });

  it('formats a kernel × dtype table', () => {
    const table = formatSupportMatrix(supportMatrix(createReferenceBackend({ fused: false })));
    const lines = table.split('\n');
    expect(lines[0]).toMatch(/^kernel\s+\| f32\s+\| f16\s+\| bf16\s+\| i32$/);
    expect(lines.find((line) => line.startsWith('matmul'))).toMatch(
      /^matmul\s+\| native\s+\| native\s+\| native\s+\| -$/,
    );
    expect(lines.find((line) => line.startsWith('attention '))).toMatch(/fallback\s+\| fallback\s+\| fallback\s+\| -$/);
    expect(lines).toHaveLength(2 + 28);
  });
});
