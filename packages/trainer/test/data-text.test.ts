import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DataError } from '@kiln/core';
import { decodeBytes, encodeBytes } from '../src/data/byte-tokens.js';
import { loadData } from '../src/data/load-data.js';
import { listDataFiles } from '../src/data/data-files.js';
import { readTextTokens } from '../src/data/text-tokens.js';
import { byteTokenizer } from '../src/tokenizer/byte-tokenizer.js';

describe('byte-level text and code', () => {
  let root: string;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'kiln-data-text-'));
    const tree: Record<string, string | Uint8Array> = {
      'b.txt': 'bee\n',
      'a.ts': 'export const a = 1;\n',
      'sub/z.md': '# zed\n',
      'sub/c.txt': 'sea\n',
      'A-upper.txt': 'upper\n',
      'node_modules/dep/index.js': 'skipped\n',
      '.git/HEAD': 'ref: skipped\n',
      'dist/out.js': 'ignored\n',
      'sub/dist/built.js': 'ignored\n',
      '.gitignore': 'dist/\n*.log\n',
      'debug.log': 'ignored\n',
      'sub/.gitignore': 'c.txt\n',
      'sub/keep.log': 'ignored by the root .gitignore\n',
      'sub/image.bin': new Uint8Array([0x89, 0x50, 0x00, 0x47]),
    };
    for (const [path, content] of Object.entries(tree)) {
      await mkdir(join(root, path, '..'), { recursive: true });
      await writeFile(join(root, path), content);
    }
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('round-trips UTF-8 text through byte tokens', () => {
    const text = 'héllo → 世界 🙂\n';
    const ids = encodeBytes(text);
    expect(ids.length).toBe(new TextEncoder().encode(text).length);
    expect(Math.max(...ids)).toBeLessThan(256);
    expect(decodeBytes(ids)).toBe(text);
  });

  it('decodes invalid UTF-8 and out-of-range ids with replacement characters, never throwing', () => {
    expect(decodeBytes([0x61, 0xff, 0x62])).toBe('a\uFFFDb');
    expect(decodeBytes([0xe4, 0xb8])).toBe('\uFFFD');
    expect(decodeBytes([0x63, 0xc3])).toBe('c\uFFFD');
    expect(decodeBytes([0x61, 300, -1, 0x62])).toBe('a\uFFFD\uFFFDb');
    expect(decodeBytes(new Int32Array([0xed, 0xa0, 0x80]))).toMatch(/^\uFFFD+$/);
  });

  it('walks a directory in sorted order, honouring .gitignore files and skipping node_modules and .git', async () => {
    const text = await readTextTokens(root, byteTokenizer);
    const relative = text.files.map((file) => file.slice(root.length + 1));
    expect(relative).toEqual(['.gitignore', 'A-upper.txt', 'a.ts', 'b.txt', 'sub/.gitignore', 'sub/z.md']);
    expect(new TextDecoder().decode(text.tokens)).toBe('dist/\n*.log\nupper\nexport const a = 1;\nbee\nc.txt\n# zed\n');
    expect(text.tokens).toBeInstanceOf(Uint8Array);
    expect((await listDataFiles(root)).gitignored).toBe(5);
    expect(text.summary).toBe(
      `data: 6 files from ${root} (2 .gitignore, 2 .txt, 1 .md, 1 .ts), 5 files ignored by .gitignore: 54 bytes, 54 tokens (tokenizer byte)`,
    );
  });

  it('include and exclude globs choose files; .gitignore can be turned off', async () => {
    const included = await listDataFiles(root, { include: ['**/*.txt'], exclude: ['A-*'] });
    expect(included.files.map((file) => file.path.slice(root.length + 1))).toEqual(['b.txt']);
    const everything = await listDataFiles(root, { gitignore: false, exclude: ['**/*.bin'] });
    expect(everything.files.map((file) => file.path.slice(root.length + 1))).toContain('dist/out.js');
    expect(everything.files.map((file) => file.path.slice(root.length + 1))).not.toContain('node_modules/dep/index.js');
    await expect(listDataFiles(root, { include: ['**/*.rs'] })).rejects.toThrow(
      /no files to read under .* \(include \*\*\/\*\.rs\)/,
    );
  });

  it('skips a binary file by its content and lists it in the notes', async () => {
    const text = await readTextTokens(root, byteTokenizer);
    expect(text.notes).toEqual([`${join(root, 'sub/image.bin')}: skipped, a binary file`]);
    const data = await loadData(
      { path: root, validationFraction: 0.2, minSequenceLength: 2 },
      { vocabSize: 256, contextLength: 4 },
    );
    expect(data.warnings).toEqual([text.summary, ...text.notes]);
    expect(data.train.tokenCount + data.validation.tokenCount).toBe(text.tokens.length);
  });

  it('reads a gitignored directory when it is the path given', async () => {
    expect((await listDataFiles(join(root, 'dist'))).files.map((file) => file.path)).toEqual([
      join(root, 'dist', 'out.js'),
    ]);
  });

  it('reads a single file', async () => {
    const data = await loadData(
      { path: join(root, 'a.ts'), validationFraction: 0.25, minSequenceLength: 2 },
      { vocabSize: 256, contextLength: 2 },
    );
    expect(data.train.tokenCount + data.validation.tokenCount).toBe('export const a = 1;\n'.length);
    expect(data.train.description).toBe(join(root, 'a.ts'));
  });

  it('names a missing path, an empty tree and a vocabulary below 256', async () => {
    const options = { vocabSize: 256, contextLength: 4 };
    const config = { validationFraction: 0.1, minSequenceLength: 2 };
    await expect(loadData({ ...config, path: join(root, 'nope') }, options)).rejects.toThrow(/nope does not exist/);
    await mkdir(join(root, 'empty'), { recursive: true });
    await expect(loadData({ ...config, path: join(root, 'empty') }, options)).rejects.toThrow(
      /no files to read under .*empty/,
    );
    await expect(loadData({ ...config, path: root }, { vocabSize: 100, contextLength: 4 })).rejects.toThrow(
      /model\.vocabSize is 100/,
    );
  });

  it('uses the embedded corpus when no source is set, and fails with a hint when there is none', async () => {
    const corpus = { text: 'abcdefghij'.repeat(10), description: 'embedded corpus' };
    const data = await loadData(
      { validationFraction: 0.1, minSequenceLength: 2 },
      { vocabSize: 256, contextLength: 4, corpus },
    );
    expect(data.train.tokenCount).toBe(90);
    expect(data.validation.tokenCount).toBe(10);
    expect(data.train.description).toBe('embedded corpus');
    const missing = loadData({ validationFraction: 0.1, minSequenceLength: 2 }, { vocabSize: 256, contextLength: 4 });
    await expect(missing).rejects.toBeInstanceOf(DataError);
    await expect(missing).rejects.toThrow(/no training data[\s\S]*hint: Pass --data/);
  });

  it('refuses two sources at once', async () => {
    const both = loadData(
      { path: root, sequences: 'x.json', validationFraction: 0.1, minSequenceLength: 2 },
      { vocabSize: 256, contextLength: 4 },
    );
    await expect(both).rejects.toThrow(/both data\.sequences .* and data\.path/);
  });
});
