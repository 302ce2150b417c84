/**
 * docs/troubleshooting.md quotes kiln's messages word for word (`…` where the text depends on the
 * machine): every literal piece of every quoted line must still appear in kiln's sources, so the
 * page cannot describe a message kiln no longer prints.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPOSITORY } from './setup/workspace.js';

function sourceFiles(directory: string): string[] {
  return readdirSync(directory).flatMap((entry) => {
    const path = join(directory, entry);
    if (statSync(path).isDirectory())
      return entry === 'node_modules' || entry === 'dist' || entry === 'build' ? [] : sourceFiles(path);
    return /\.(ts|mjs|cc|cpp|h|hpp|cu|cuh)$/.test(entry) && !entry.endsWith('.d.ts') ? [path] : [];
  });
}

// Sources with string concatenations joined ('a' + 'b' across lines reads as 'ab').
const SOURCES = readdirSync(join(REPOSITORY, 'packages'))
  .flatMap((name) => ['src', 'native'].map((folder) => join(REPOSITORY, 'packages', name, folder)))
  .filter((directory) => {
    try {
      return statSync(directory).isDirectory();
    } catch {
      return false;
    }
  })
  .flatMap(sourceFiles)
  .map((file) => readFileSync(file, 'utf8').replace(/(['"`])\s*\+\s*(['"`])/g, ''))
  .join('\n');

const DOC = readFileSync(join(REPOSITORY, 'docs', 'troubleshooting.md'), 'utf8');
const QUOTED = [...DOC.matchAll(/^```text\n([\s\S]*?)^```/gm)].flatMap((match) =>
  match[1]
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean),
);

describe('docs/troubleshooting.md', () => {
  it('quotes the messages of every case the issue lists', () => {
    for (const heading of [
      'No GPU',
      'Driver too old',
      'Addon not built',
      'Fallback',
      'Out of memory',
      'A plugin that hangs',
    ])
      expect(DOC).toContain(`## ${heading}`);
    expect(QUOTED.length).toBeGreaterThan(12);
  });

  it.each(QUOTED.map((line) => [line]))('%s — is in the sources', (line) => {
    const pieces = line
      .replace(/^hint: /, '')
      .split('…')
      .map((piece) => piece.trim())
      .filter((piece) => piece.length >= 8);
    expect(pieces.length, 'a quoted line with no literal text').toBeGreaterThan(0);
    expect(pieces.filter((piece) => !SOURCES.includes(piece))).toEqual([]);
  });
});
