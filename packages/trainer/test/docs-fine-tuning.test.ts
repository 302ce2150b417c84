/** docs/fine-tuning.md's family and option tables are the ones the registry renders. */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { renderFamilySupportTable, SUPPORT_TABLE_MARKERS, SUPPORTED_MODEL_TYPES } from '../src/index.js';

const DOC = fileURLToPath(new URL('../../../docs/fine-tuning.md', import.meta.url));

describe('docs/fine-tuning.md', () => {
  it('holds the generated family tables (regenerate: pnpm --filter @kiln/trainer build && pnpm --filter @kiln/trainer docs)', () => {
    const text = readFileSync(DOC, 'utf8');
    const [begin, end] = SUPPORT_TABLE_MARKERS;
    const section = text.slice(text.indexOf(begin) + begin.length, text.indexOf(end));
    expect(text.indexOf(begin)).toBeGreaterThan(0);
    expect(section).toBe(`\n${renderFamilySupportTable()}`);
    for (const modelType of SUPPORTED_MODEL_TYPES) expect(section).toContain(`| \`${modelType}\` |`);
  });
});
