/** docs/cli.md is generated from the commander definitions: it must match the CLI exactly. */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { renderCliReference } from '../src/cli-reference.js';

const doc = fileURLToPath(new URL('../../../docs/cli.md', import.meta.url));

describe('docs/cli.md', () => {
  it('is the reference rendered from the CLI definitions (regenerate: pnpm --filter @kiln/cli docs)', () => {
    expect(readFileSync(doc, 'utf8')).toBe(renderCliReference());
  });

  it('lists every command and option with its default', () => {
    const text = renderCliReference();
    for (const command of ['info', 'doctor', 'train', 'generate', 'bench', 'tokenize', 'eval'])
      expect(text).toContain(`## kiln ${command}`);
    expect(text).toMatch(/\| `--max-tokens <n>` \| `200` \| tokens to generate \|/);
    expect(text).toMatch(/\| `KILN_PROBE_TIMEOUT_MS` \|/);
  });
});
