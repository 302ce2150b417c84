/** docs/ops.md lists every public op: a function exported from packages/core/src/ops that it does not name fails here. */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import * as ops from '../src/ops/index.js';

const doc = readFileSync(fileURLToPath(new URL('../../../docs/ops.md', import.meta.url)), 'utf8');

describe('docs/ops.md', () => {
  it('documents every exported op by name', () => {
    const names = Object.entries(ops)
      .filter(([, value]) => typeof value === 'function')
      .map(([name]) => name);
    expect(names.length).toBeGreaterThan(60);
    const missing = names.filter((name) => !new RegExp('`' + name + '(\\(|`)').test(doc));
    expect(missing).toEqual([]);
  });
});
