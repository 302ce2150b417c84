// ptxas's verdict on the f32 matmul kernels (kernels/matmul.cu, matmul_f32_async.cu,
// matmul_f32_tf32.cu) for sm_80 and sm_90a, compiled as the addon's release build compiles them:
// none spills to local memory, but for one known case. They run at the register budget their
// launch bounds allow (128 or 255 a thread), where a small source change tips them into spilling
// inside the k loop — a refactor in session 32 made the 8×16 kernel load 600 bytes a thread from
// local memory — and no functional test sees it. The known case: on sm_80 the 8×8 register-fed
// kernel keeps a few work-item constants in local memory (stored before the k loop, reloaded by
// the epilogue only: no local access inside the loop, by its SASS in session 32); it may spill no
// more than it did then (its interior instantiation spills less). Needs nvcc (the CUDA toolkit); it compiles, it runs nothing.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const packageRoot = join(import.meta.dirname, '..');
const kernels = join(packageRoot, 'native', 'kernels');
const nativeHostInclude = [
  join(packageRoot, '..', 'native-host', 'include'),
  join(packageRoot, 'native-host', 'include'),
].find((directory) => existsSync(directory));
const nvcc = spawnSync('sh', ['-c', 'command -v nvcc'], { encoding: 'utf8' }).stdout.trim() || undefined;
const skipReason = !nvcc
  ? 'nvcc is not on PATH (the CUDA toolkit compiles these kernels)'
  : !nativeHostInclude
    ? "@kiln/native-host's include directory is missing"
    : undefined;
const scratch = mkdtempSync(join(tmpdir(), 'kiln-f32-registers-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Per kernel entry ptxas compiled from `file` for `arch`: its registers and spilled bytes (stores + loads). */
function ptxasReport(file: string, arch: string): { kernel: string; registers: number; spilled: number }[] {
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
  const entries: { kernel: string; registers: number; spilled: number }[] = [];
  let current: { kernel: string; registers: number; spilled: number } | undefined;
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

describe.skipIf(skipReason !== undefined)(
  `f32 matmul kernels under ptxas${skipReason ? ` (skipped: ${skipReason})` : ''}`,
  () => {
    for (const arch of ['80', '90a']) {
      it(`sm_${arch}: no f32 matmul kernel spills`, { timeout: 600_000 }, () => {
        const entries = ['matmul.cu', 'matmul_f32_async.cu', 'matmul_f32_tf32.cu'].flatMap((file) =>
          ptxasReport(file, arch).filter((entry) => /matmul_f32_(async_)?kernel/.test(entry.kernel)),
        );
        // matmul.cu: the 8×16 and 8×8 register-fed kernels; the cp.async ring in k8 and k16 slices;
        // TF32 — the register-fed ones and TF32 each bounds-checked and interior (kInterior), the
        // interior ones of 8×16 and TF32 once per layout (kInteriorPerLayout): 2 + 5 + 5 + 2.
        expect(entries.length, entries.map((entry) => entry.kernel).join('\n')).toBe(14);
        const allowed = (kernel: string) => (arch === '80' && kernel.includes('SimtMathILi2E') ? 356 : 0);
        const spilling = entries.filter((entry) => entry.spilled > allowed(entry.kernel));
        expect(
          spilling.map((entry) => `${entry.kernel}: ${entry.registers} registers, ${entry.spilled} bytes spilled`),
        ).toEqual([]);
      });
    }
  },
);
