import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeTemporaryDirectories, requireBuild, runKiln, temporaryDirectory } from './kiln-process.js';

beforeAll(requireBuild);
afterAll(removeTemporaryDirectories);

const gpt2Tokenizer = fileURLToPath(
  new URL('../../trainer/test/fixtures/hf/tokenizers/gpt2-tokenizer.json', import.meta.url),
);

describe('kiln tokenize', () => {
  const directory = temporaryDirectory('tokenize');
  const project = join(directory, 'project');
  beforeAll(() => {
    const files: Record<string, string> = {
      'src/a.ts': 'export const a = 1;\n',
      'src/b.ts': 'export const b = 2;\n',
      'src/c.d.ts': 'export declare const c: number;\n',
      'README.md': '# project\n',
      'dist/out.js': 'built\n',
      '.gitignore': 'dist/\n',
      'logo.png': '\u0089PNG\r\n\u001a\n\u0000\u0000\u0000\rIHDR\u0000\u0000',
    };
    for (const [path, content] of Object.entries(files)) {
      mkdirSync(join(project, path, '..'), { recursive: true });
      writeFileSync(join(project, path), content, path.endsWith('.png') ? 'latin1' : 'utf8');
    }
  });

  it('writes <input>.kiln-tokens by default, honouring .gitignore and skipping binary files', async () => {
    const run = await runKiln(['tokenize', project, '--json']);
    expect(run.code, run.stderr).toBe(0);
    const summary = JSON.parse(run.stdout) as Record<string, unknown>;
    expect(summary.output).toBe(`${project}.kiln-tokens`);
    expect(existsSync(`${project}.kiln-tokens`)).toBe(true);
    expect(summary.extensions).toEqual({ '.gitignore': 1, '.md': 1, '.ts': 3 });
    expect(summary.bytesPerToken).toBe(1);
    expect(summary.tokenizer).toEqual({ name: 'byte', hash: 'byte' });
    expect(summary.notes).toEqual([`${join(project, 'logo.png')}: skipped, a binary file`]);
    const text = ['.gitignore', 'README.md', 'src/a.ts', 'src/b.ts', 'src/c.d.ts']
      .map((file) => readFileSync(join(project, file), 'utf8'))
      .join('');
    expect(summary.tokens).toBe(Buffer.byteLength(text));
    expect(readFileSync(`${project}.kiln-tokens`).subarray(-Buffer.byteLength(text)).toString('utf8')).toBe(text);
  });

  it('include/exclude globs, an HF tokenizer, and a summary by extension', async () => {
    const output = join(directory, 'ts.kiln-tokens');
    const run = await runKiln([
      'tokenize',
      project,
      '--include',
      '**/*.ts',
      '--exclude',
      '**/*.d.ts',
      '--tokenizer',
      gpt2Tokenizer,
      '--output',
      output,
    ]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^read 2 files from .*project \(2 \.ts; \d+ B\)$/m);
    expect(run.stdout).toMatch(
      /^wrote \d+ tokens \(tokenizer gpt2-tokenizer, vocab 50,257, 2 bytes\/token\) to .*ts\.kiln-tokens/m,
    );
    expect(run.stderr).toMatch(/note: the tokenizer gpt2-tokenizer names no eos token/);
    // A byte-level model refuses the GPT-2 token file by name, before training.
    const train = await runKiln(['train', '--data', output, '--steps', '1', '--output', join(directory, 'run')]);
    expect(train.code).toBe(2);
    expect(train.stderr).toMatch(
      /^error: .*ts\.kiln-tokens was made by the tokenizer gpt2-tokenizer \(hash [0-9a-f]{12}\), but the model uses byte \(hash byte\)$/m,
    );
  });

  it('names a missing input without talking about --data, and refuses a FIFO at once', async () => {
    const missing = await runKiln(['tokenize', join(directory, 'nonexist')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^error: .*nonexist does not exist\n {2}hint: Check the input of `kiln tokenize`/);
    expect(missing.stderr).not.toMatch(/data\.path|--data/);
    const fifo = join(directory, 'pipe');
    execFileSync('mkfifo', [fifo]);
    const piped = await runKiln(['tokenize', fifo], { killAfterMs: 20_000 });
    expect(piped.code).toBe(2);
    expect(piped.stderr).toMatch(
      /^error: .*pipe is a named pipe \(FIFO\): kiln reads data from regular files and directories only/,
    );
  });

  it('kiln train --data <dir> --include/--exclude reads only those files and says what it read', async () => {
    const code = join(directory, 'code');
    mkdirSync(join(code, 'src'), { recursive: true });
    const line = 'export function add(a: number, b: number): number { return a + b; }\n';
    writeFileSync(join(code, 'src', 'one.ts'), line.repeat(20));
    writeFileSync(join(code, 'src', 'two.ts'), line.repeat(20));
    writeFileSync(join(code, 'src', 'three.d.ts'), line.repeat(20));
    writeFileSync(join(code, 'notes.md'), '# notes\n'.repeat(50));
    const run = await runKiln([
      'train',
      '--data',
      code,
      '--include',
      '**/*.ts',
      '--exclude',
      '**/*.d.ts',
      '--steps',
      '1',
      '--output',
      join(directory, 'run-code'),
      '--json',
    ]);
    expect(run.code, run.stderr).toBe(0);
    const events = run.stdout
      .trim()
      .split('\n')
      .map((text) => JSON.parse(text) as { type: string; message?: string });
    const bytes = 2 * Buffer.byteLength(line.repeat(20));
    expect(
      events
        .filter((event) => event.type === 'notice' && event.message?.startsWith('data:'))
        .map((event) => event.message),
    ).toEqual([`data: 2 files from ${code} (2 .ts): ${bytes} bytes, ${bytes} tokens (tokenizer byte)`]);
  });

  it('--help gives the default output and a bad tokenizer directory is a typed error', async () => {
    const help = await runKiln(['tokenize', '--help']);
    expect(help.stdout).toMatch(
      /--output <file>\s+the token file to write, \*\.kiln-tokens \(default:\s+<first input>\.kiln-tokens\)/,
    );
    const noTokenizer = await runKiln([
      'tokenize',
      project,
      '--tokenizer',
      project,
      '--output',
      join(directory, 'x.kiln-tokens'),
    ]);
    expect(noTokenizer.code).toBe(2);
    expect(noTokenizer.stderr).toMatch(/^error: .*project has no tokenizer\.json\n/);
    expect(noTokenizer.stderr).toContain('--tokenizer <model dir|tokenizer.json|byte>');
  });
});
