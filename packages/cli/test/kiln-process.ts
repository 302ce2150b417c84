/** Test helper: runs the built `kiln` binary (bin/kiln.js → dist) as a child process. */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** packages/cli. */
export const PACKAGE_DIRECTORY = fileURLToPath(new URL('..', import.meta.url));
/** The binary under test. */
export const KILN_BIN = join(PACKAGE_DIRECTORY, 'bin', 'kiln.js');

/** What a finished run printed and how it ended. */
export interface KilnRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Throws unless dist/ is built (the turbo `test` task builds it first). */
export function requireBuild(): void {
  if (!existsSync(join(PACKAGE_DIRECTORY, 'dist', 'main.js'))) {
    throw new Error('packages/cli/dist is missing: run `pnpm turbo build --filter @kiln/cli...` before these tests');
  }
}

/** Spawns `node bin/kiln.js ...args` (not waited for). */
export function spawnKiln(args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): ChildProcess {
  return spawn(process.execPath, [KILN_BIN, ...args], {
    cwd: options.cwd ?? PACKAGE_DIRECTORY,
    env: { ...process.env, KILN_DEVICE: '', NO_COLOR: '1', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Runs `kiln ...args` to completion; with `killAfterMs`, a run still going then is killed (SIGKILL) and reported with that signal. */
export function runKiln(
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; killAfterMs?: number } = {},
): Promise<KilnRun> {
  const child = spawnKiln(args, options);
  if (options.killAfterMs === undefined) return finished(child);
  const timer = setTimeout(() => child.kill('SIGKILL'), options.killAfterMs);
  return finished(child).finally(() => clearTimeout(timer));
}

/** Collects a child's output until it exits. */
export function finished(child: ChildProcess): Promise<KilnRun> {
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

const created: string[] = [];

/** A fresh temporary directory (removed by removeTemporaryDirectories). */
export function temporaryDirectory(prefix: string): string {
  const directory = mkdtempSync(join(tmpdir(), `kiln-cli-${prefix}-`));
  created.push(directory);
  return directory;
}

/** Removes every directory temporaryDirectory made in this test file. */
export function removeTemporaryDirectories(): void {
  for (const directory of created.splice(0)) rmSync(directory, { recursive: true, force: true });
}

/** Some repetitive code-like text, enough for a tiny model to learn a little. */
export function writeTrainingText(directory: string): string {
  const lines: string[] = [];
  for (let index = 0; index < 200; index++) {
    lines.push(`export function add${index % 17}(a: number, b: number): number {\n  return a + b * ${index % 7};\n}\n`);
  }
  const path = join(directory, 'train.txt');
  writeFileSync(path, lines.join('\n'));
  return path;
}

/** A tiny training config (YAML) that writes into `outputDir` and reads `dataPath`. */
export function writeTinyConfig(
  directory: string,
  options: {
    dataPath: string;
    outputDir: string;
    steps?: number;
    interval?: number;
    dModel?: number;
    contextLength?: number;
    name?: string;
  },
): string {
  const yaml = [
    'seed: 7',
    'model:',
    '  vocabSize: 256',
    `  contextLength: ${options.contextLength ?? 32}`,
    `  dModel: ${options.dModel ?? 32}`,
    '  nLayer: 2',
    '  nHead: 2',
    'data:',
    `  path: ${JSON.stringify(options.dataPath)}`,
    '  validationFraction: 0.1',
    'optimizer:',
    '  lr: 0.003',
    'schedule:',
    `  steps: ${options.steps ?? 12}`,
    '  batchSize: 8',
    '  microBatchSize: 4',
    '  warmupSteps: 2',
    '  evalInterval: 4',
    '  evalBatches: 2',
    '  logInterval: 1',
    'checkpoint:',
    `  outputDir: ${JSON.stringify(options.outputDir)}`,
    `  interval: ${options.interval ?? 2}`,
    '  keepLast: 3',
    '',
  ].join('\n');
  const path = join(directory, options.name ?? 'tiny.yaml');
  writeFileSync(path, yaml);
  return path;
}
