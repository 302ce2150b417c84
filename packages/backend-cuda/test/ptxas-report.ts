// Shared by the kernel register tests (f32-matmul-registers, wmma-matmul-registers): ptxas's verdict
// on a kernel file, compiled as the addon's release build compiles it. Needs nvcc on PATH.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect } from 'vitest';

const packageRoot = join(import.meta.dirname, '..');
const kernels = join(packageRoot, 'native', 'kernels');
const nativeHostInclude = [
  join(packageRoot, '..', 'native-host', 'include'),
  join(packageRoot, 'native-host', 'include'),
].find((directory) => existsSync(directory));
const nvcc = spawnSync('sh', ['-c', 'command -v nvcc'], { encoding: 'utf8' }).stdout.trim() || undefined;

/** Why ptxasReport cannot run here, or undefined when it can. */
export const ptxasSkipReason = !nvcc
  ? 'nvcc is not on PATH (the CUDA toolkit compiles these kernels)'
  : !nativeHostInclude
    ? "@kiln/native-host's include directory is missing"
    : undefined;

/** One kernel entry as ptxas compiled it: its mangled name, registers and spilled bytes (stores + loads). */
export interface PtxasEntry {
  kernel: string;
  registers: number;
  spilled: number;
}

let scratch: string | undefined;
afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/** Per kernel entry ptxas compiled from native/kernels/`file` for `arch` (e.g. '80', '90a'). */
export function ptxasReport(file: string, arch: string): PtxasEntry[] {
  scratch ??= mkdtempSync(join(tmpdir(), 'kiln-ptxas-'));
  const result = spawnSync(
    nvcc!,
    [
      '-std=c++17',
      '-O3',
      '-DNDEBUG',
      '-cubin',
      '-gencode',
      `arch=compute_${arch},code=sm_${arch}`,
      '-Xptxas',
      '-v',
      '-I',
      kernels,
      '-I',
      join(packageRoot, 'native'),
      '-I',
      nativeHostInclude!,
      join(kernels, file),
      '-o',
      join(scratch, `${file}.${arch}.cubin`),
    ],
    { encoding: 'utf8', timeout: 300_000 },
  );
  expect(result.status, result.stderr).toBe(0);
  const entries: PtxasEntry[] = [];
  let current: PtxasEntry | undefined;
  for (const line of result.stderr.split('\n')) {
    const entry = /Compiling entry function '([^']+)'/.exec(line);
    if (entry) entries.push((current = { kernel: entry[1], registers: 0, spilled: 0 }));
    const spill = /(\d+) bytes spill stores, (\d+) bytes spill loads/.exec(line);
    if (spill && current) current.spilled = Number(spill[1]) + Number(spill[2]);
    const used = /Used (\d+) registers/.exec(line);
    if (used && current) current.registers = Number(used[1]);
  }
  return entries;
}
