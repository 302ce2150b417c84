/** docs/kernel-backend.md is generated from src/backend/kernel-backend.ts: it must be current and name every member. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
// @ts-expect-error -- a plain .mjs script without declarations
import { DOC, renderKernelBackendReference } from '../scripts/kernel-backend-reference.mjs';

describe('docs/kernel-backend.md', () => {
  it('is what scripts/kernel-backend-reference.mjs generates from kernel-backend.ts (run it after changing the contract)', () => {
    expect(readFileSync(DOC as string, 'utf8')).toBe((renderKernelBackendReference as () => string)());
  });

  it('lists every method of KernelBackend with its signature', () => {
    const doc = readFileSync(DOC as string, 'utf8');
    for (const method of [
      'alloc',
      'free',
      'upload',
      'download',
      'downloadSync',
      'synchronize',
      'memory',
      'unary',
      'binary',
      'where',
      'reduce',
      'matmul',
      'copy',
      'gather',
      'scatterAdd',
      'cast',
      'fill',
      'softmax',
      'attention',
      'adamw',
      'probe',
      'create',
    ]) {
      expect(doc).toMatch(new RegExp('\\| `' + method + '`'));
    }
  });
});
