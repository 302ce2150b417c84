import { execFileSync } from 'node:child_process';
import { copyFile, chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DataError } from '@kiln/core';
import { listDataFiles } from '../src/data/data-files.js';
import { fileSystemError } from '../src/data/file-errors.js';
import { loadData } from '../src/data/load-data.js';
import { readFileChunks } from '../src/data/read-chunks.js';
import { readTextTokens } from '../src/data/text-tokens.js';
import { tokenizeFiles, type TokenizeProgress } from '../src/data/tokenize-files.js';
import { byteTokenizer } from '../src/tokenizer/byte-tokenizer.js';
import { loadTokenizer } from '../src/tokenizer/load.js';
import type { Tokenizer } from '../src/tokenizer/types.js';

const gpt2Path = fileURLToPath(new URL('./fixtures/hf/tokenizers/gpt2-tokenizer.json', import.meta.url));
const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
const config = { validationFraction: 0.1, minSequenceLength: 2 };

/** A source file of `lines` lines of code-like text, some indented, some blank. */
function codeText(lines: number): string {
  const out: string[] = [];
  for (let index = 0; index < lines; index++) {
    out.push(
      index % 7 === 0
        ? ''
        : index % 3 === 0
          ? `    return value_${index} * ${index}; // café ✓`
          : `function f${index}(x) {`,
    );
  }
  return `${out.join('\n')}\n`;
}

let directory: string;
let gpt2: Tokenizer;
beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'kiln-data-files-'));
  const model = join(directory, 'gpt2-model');
  await mkdir(model);
  await copyFile(gpt2Path, join(model, 'tokenizer.json'));
  await writeFile(
    join(model, 'tokenizer_config.json'),
    JSON.stringify({ eos_token: '<|endoftext|>', bos_token: '<|endoftext|>', add_bos_token: false }),
  );
  gpt2 = await loadTokenizer(model);
});
afterAll(async () => {
  await rm(directory, { recursive: true, force: true });
});

describe('data paths that are not regular files or directories', () => {
  it('refuses a FIFO at once instead of blocking on it (train and tokenize share this path)', async () => {
    const fifo = join(directory, 'pipe');
    execFileSync('mkfifo', [fifo]);
    const load = loadData({ ...config, path: fifo }, { vocabSize: 256, contextLength: 4 });
    await expect(load).rejects.toBeInstanceOf(DataError);
    await expect(load).rejects.toThrow(
      /pipe is a named pipe \(FIFO\): kiln reads data from regular files and directories only/,
    );
    await expect(listDataFiles(fifo)).rejects.toThrow(/named pipe/);
  });

  it('refuses /dev/zero (a character device) instead of reading forever', async () => {
    await expect(loadData({ ...config, path: '/dev/zero' }, { vocabSize: 256, contextLength: 4 })).rejects.toThrow(
      /\/dev\/zero is a character device/,
    );
    await expect(
      loadData({ ...config, path: '/dev/zero.kiln-tokens' }, { vocabSize: 256, contextLength: 4 }),
    ).rejects.toThrow(/does not exist/);
  });

  it('never opens a FIFO inside a data directory', async () => {
    const tree = join(directory, 'with-fifo');
    await mkdir(tree);
    await writeFile(join(tree, 'a.txt'), 'some text\n');
    execFileSync('mkfifo', [join(tree, 'b.pipe')]);
    const list = await listDataFiles(tree);
    expect(list.files.map((file) => file.path)).toEqual([join(tree, 'a.txt')]);
    expect((await readTextTokens(tree, byteTokenizer)).files).toEqual([join(tree, 'a.txt')]);
  });
});

describe('unreadable files and directories', () => {
  it('maps EACCES and EPERM to a DataError naming the path and the fix', () => {
    const denied = Object.assign(new Error("EACCES: permission denied, open '/data/secret.txt'"), { code: 'EACCES' });
    const error = fileSystemError('/data/secret.txt', denied);
    expect(error).toBeInstanceOf(DataError);
    expect(error.message).toMatch(
      /^permission denied: cannot read \/data\/secret\.txt\n {2}hint: Give your user read permission \(e\.g\. `chmod u\+r \/data\/secret\.txt`/,
    );
    expect(
      fileSystemError('/x', Object.assign(new Error('x'), { code: 'EPERM' }), { action: 'list the directory' }).message,
    ).toMatch(/^permission denied: cannot list the directory \/x/);
    expect(
      fileSystemError('/big', Object.assign(new RangeError('too large'), { code: 'ERR_FS_FILE_TOO_LARGE' })).message,
    ).toMatch(/^\/big is too large to read at once/);
  });

  // chmod 000 does not stop root (CI runs tests as root): there the mapping above is what is tested.
  it.skipIf(isRoot)('a file and a directory without read permission give a typed error, not a raw EACCES', async () => {
    const locked = join(directory, 'locked');
    await mkdir(locked);
    await writeFile(join(locked, 'a.txt'), 'text\n');
    await chmod(join(locked, 'a.txt'), 0o000);
    await expect(
      loadData({ ...config, path: join(locked, 'a.txt') }, { vocabSize: 256, contextLength: 2 }),
    ).rejects.toThrow(/permission denied: cannot read .*a\.txt/);
    await chmod(join(locked, 'a.txt'), 0o644);
    await chmod(locked, 0o000);
    await expect(loadData({ ...config, path: locked }, { vocabSize: 256, contextLength: 2 })).rejects.toBeInstanceOf(
      DataError,
    );
    await chmod(locked, 0o755);
  });
});

describe('streaming reads with a bound', () => {
  it('reads a file in chunks no larger than the bound', async () => {
    const path = join(directory, 'chunks.txt');
    await writeFile(path, 'x'.repeat(10_000) + '\n');
    const { binary, chunks } = await readFileChunks(path, 4096);
    expect(binary).toBe(false);
    const lengths: number[] = [];
    for await (const chunk of chunks) lengths.push(chunk.length);
    expect(lengths).toEqual([4096, 4096, 1809]);
  });

  it('tokenizes a file much larger than the bound in pieces, with the ids of the whole text and never a long string', async () => {
    const path = join(directory, 'large.ts');
    const text = codeText(5000);
    await writeFile(path, text);
    expect(text.length).toBeGreaterThan(100_000);
    let longest = 0;
    const recording: Tokenizer = {
      ...gpt2,
      encode: (input, options) => {
        longest = Math.max(longest, input.length);
        return gpt2.encode(input, options);
      },
    };
    const ids: number[] = [];
    const progress: TokenizeProgress[] = [];
    const read = await tokenizeFiles(await listDataFiles(path), recording, (chunk) => void ids.push(...chunk), {
      chunkBytes: 2048,
      onProgress: (event) => progress.push(event),
    });
    expect(longest).toBeLessThanOrEqual(2 * 2048);
    expect(ids).toEqual([...gpt2.encode(text), gpt2.eosId]);
    expect(read.tokens).toBe(ids.length);
    expect(progress.length).toBeGreaterThan(50);
    expect(progress.at(-1)).toEqual({
      filesDone: 1,
      fileCount: 1,
      bytesRead: Buffer.byteLength(text),
      totalBytes: Buffer.byteLength(text),
      tokens: ids.length,
    });
  });

  it('cuts a line longer than four chunks anyway, so memory stays bounded', async () => {
    const path = join(directory, 'minified.js');
    await writeFile(path, 'a=1;'.repeat(5000));
    let longest = 0;
    const recording: Tokenizer = {
      ...gpt2,
      encode: (input, options) => ((longest = Math.max(longest, input.length)), gpt2.encode(input, options)),
    };
    await tokenizeFiles(await listDataFiles(path), recording, () => undefined, { chunkBytes: 1024 });
    expect(longest).toBeLessThanOrEqual(5 * 1024);
  });
});

describe('documents and tokenizers', () => {
  it('joins documents with eos for an HF tokenizer and concatenates bytes for the byte tokenizer', async () => {
    const tree = join(directory, 'docs');
    await mkdir(tree);
    await writeFile(join(tree, 'a.py'), 'def f():\n    return 1\n');
    await writeFile(join(tree, 'b.md'), '# hello\n');
    await writeFile(join(tree, 'empty.txt'), '');
    const text = await readTextTokens(tree, gpt2);
    expect(Array.from(text.tokens)).toEqual([
      ...gpt2.encode('def f():\n    return 1\n'),
      50256,
      ...gpt2.encode('# hello\n'),
      50256,
    ]);
    expect(text.tokens).toBeInstanceOf(Uint16Array);
    expect(text.summary).toMatch(
      /^data: 2 files from .*docs \(1 \.md, 1 \.py\): 30 bytes, \d+ tokens \(tokenizer gpt2-model\)$/,
    );
    const bytes = await readTextTokens(tree, byteTokenizer);
    expect(new TextDecoder().decode(bytes.tokens)).toBe('def f():\n    return 1\n# hello\n');
  });

  it('loadData tokenizes text with the model tokenizer, and data.tokenizer overrides it', async () => {
    const path = join(directory, 'train.txt');
    await writeFile(path, codeText(400));
    const options = { vocabSize: 50304, contextLength: 16 };
    const withModel = await loadData({ ...config, path }, { ...options, tokenizer: gpt2 });
    const total = gpt2.encode(await readFile(path, 'utf8')).length + 1;
    expect(withModel.train.tokenCount + withModel.validation.tokenCount).toBe(total);
    expect(withModel.warnings).toEqual([]);
    const fromDirectory = await loadData(
      { ...config, path: directory, include: ['train.txt'] },
      { ...options, tokenizer: gpt2 },
    );
    expect(fromDirectory.warnings).toEqual([
      `data: 1 file from ${directory} (1 .txt): ${(await readFile(path)).length} bytes, ${total} tokens (tokenizer gpt2-model)`,
    ]);
    const overridden = await loadData({ ...config, path, tokenizer: 'byte' }, { ...options, tokenizer: gpt2 });
    expect(overridden.train.tokenCount + overridden.validation.tokenCount).toBe(
      Buffer.byteLength(await readFile(path, 'utf8')),
    );
    await expect(
      loadData({ ...config, path }, { vocabSize: 1000, contextLength: 16, tokenizer: gpt2 }),
    ).rejects.toThrow(/the tokenizer gpt2-model \(.*tokenizer\.json\) has 50257 ids but model\.vocabSize is 1000/);
  });
});
