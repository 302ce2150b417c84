/** docs/configuration.md documents every config key with the default kiln really uses. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { defaultTrainConfig, partialTrainConfigSchema } from '@kiln/trainer';
import { describe, expect, it } from 'vitest';
import { REPOSITORY } from './setup/workspace.js';

const DOC = readFileSync(join(REPOSITORY, 'docs', 'configuration.md'), 'utf8');
/** `path` → default cell, from the doc's tables. */
const ROWS = new Map([...DOC.matchAll(/^\| `([\w.]+)` \| ([^|]*) \|/gm)].map((match) => [match[1], match[2].trim()]));

interface ZodLike {
  def?: { type?: string; innerType?: ZodLike; shape?: Record<string, ZodLike> };
  shape?: Record<string, ZodLike>;
}

/** Every leaf key path of the config schema. */
function keyPaths(schema: ZodLike, prefix = ''): string[] {
  const inner = schema.def?.type === 'optional' ? schema.def.innerType! : schema;
  const shape = inner.shape ?? inner.def?.shape;
  if (inner.def?.type !== 'object' || shape === undefined) return [prefix];
  return Object.entries(shape).flatMap(([key, value]) => keyPaths(value, prefix === '' ? key : `${prefix}.${key}`));
}

function valueAt(path: string): unknown {
  return path
    .split('.')
    .reduce<unknown>((value, key) => (value as Record<string, unknown> | undefined)?.[key], defaultTrainConfig());
}

describe('docs/configuration.md', () => {
  const paths = keyPaths(partialTrainConfigSchema as unknown as ZodLike);

  it('has a row for every key of the config schema, and no other', () => {
    expect(paths.length).toBeGreaterThan(30);
    expect(paths.filter((path) => !ROWS.has(path))).toEqual([]);
    expect([...ROWS.keys()].filter((path) => !paths.includes(path))).toEqual([]);
  });

  it('gives the default defaultTrainConfig() really has (— where there is none)', () => {
    const wrong = paths.flatMap((path) => {
      const value = valueAt(path);
      const expected = value === undefined ? '—' : `\`${JSON.stringify(value)}\``;
      const documented = ROWS.get(path);
      return documented === expected ? [] : [`${path}: documented ${documented}, really ${expected}`];
    });
    expect(wrong).toEqual([]);
  });
});
