/** docs/support-matrix.md is what the kit reports for each backend (regenerate: node scripts/support-matrix.mjs). */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
// @ts-expect-error -- a plain .mjs script without declarations
import { DOC, renderSupportMatrixDoc } from '../scripts/support-matrix.mjs';

describe('docs/support-matrix.md', () => {
  it('is the matrix the backends report today', () => {
    expect(readFileSync(DOC as string, 'utf8')).toBe((renderSupportMatrixDoc as () => string)());
  });
});
