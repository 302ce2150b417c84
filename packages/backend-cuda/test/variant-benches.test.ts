// The variant benches a GPU lease runs (bench/f32-kernels.mjs, bench/wgmma-widths.mjs, on
// bench/interleaved-variants.mjs) run end to end on the CUDA simulator with one tiny shape: every
// variant gets a rate, the chosen route is named, the JSON report holds what the table shows, and a
// malformed --shape is refused — so a lease never spends its minutes on a bench that does not run.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { simulatorSkipReason } from './simulator-status.js';

const packageRoot = join(import.meta.dirname, '..');
const scratch = mkdtempSync(join(tmpdir(), 'kiln-variant-benches-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const skipReason =
  simulatorSkipReason() ??
  (existsSync(join(packageRoot, 'dist', 'index.js')) ? undefined : 'dist/ is not built (run `pnpm turbo build`)');

/** Runs a bench script on the simulator; returns its exit status, output and JSON report. */
function runBench(script: string, shape: string) {
  const json = join(scratch, `${script}.json`);
  const child = spawnSync(
    process.execPath,
    [
      join(packageRoot, 'bench', script),
      '--simulator',
      '--shape',
      shape,
      '--rounds',
      '2',
      '--milliseconds',
      '0',
      '--json',
      json,
    ],
    {
      cwd: packageRoot,
      encoding: 'utf8',
      env: { ...process.env, KILN_CUDA_F32_KERNEL: undefined, KILN_CUDA_F32_SPLIT_K: undefined },
    },
  );
  return {
    status: child.status,
    output: `${child.stdout}${child.stderr}`,
    report: existsSync(json) ? JSON.parse(readFileSync(json, 'utf8')) : undefined,
  };
}

describe.skipIf(skipReason !== undefined)(
  `variant benches on the simulator${skipReason ? ` (skipped: ${skipReason})` : ''}`,
  () => {
    it('f32-kernels times the chosen kernel, all eight forced ones and split-K waves (cuBLAS absent)', () => {
      const { status, output, report } = runBench('f32-kernels.mjs', '136x132x40:nt');
      expect(status, output).toBe(0);
      expect(report.rows).toHaveLength(1);
      const [row] = report.rows;
      expect(row.shape).toBe('--shape (136×132×40 nt)');
      expect(row.chosenRoute).toBe('f32 SIMT');
      for (const kernel of [
        'chosen',
        '8x16',
        '8x16-k16',
        '8x16-per-layout',
        '8x8',
        '8x16-cp.async',
        '8x16-cp.async-k16',
        'KILN_CUDA_F32_SPLIT_K=waves',
      ])
        expect(row.tflops[kernel], kernel).toBeGreaterThan(0);
      // 136×132×40 has edge tiles: the interior variants run the default kernel, and the report says so.
      expect(row.routes['8x16-k16']).toBe('f32 SIMT');
      expect(row.routes['8x16-overlap']).toBe('f32 SIMT');
      expect(row.routes['8x16-cp.async-k16']).toBe('f32 SIMT cp.async k16');
      // k = 40 is too short to split: the waves setting runs the per-problem kernel whole.
      expect(row.routes['KILN_CUDA_F32_SPLIT_K=waves']).toBe('f32 SIMT');
      expect(output).toContain('8x16-k16 → f32 SIMT,');
      expect(row.tflops.cuBLAS).toBeUndefined();
      // Each forced kernel's result against the chosen kernel's, over the same operands: the same bits.
      expect(row.difference).toEqual({
        '8x16': 0,
        '8x16-k16': 0,
        '8x16-overlap': 0,
        '8x16-k16-overlap': 0,
        '8x16-per-layout': 0,
        '8x8': 0,
        '8x16-cp.async': 0,
        '8x16-cp.async-k16': 0,
        'KILN_CUDA_F32_SPLIT_K=waves': 0,
      });
      expect(output).toContain('(136×132×40 nt): every variant gives the same numbers as "chosen"');
      expect(output).toMatch(/fastest kernel per shape/);
      // Whichever forced kernel the simulator timed fastest (a random one: its timings are not the GPU's).
      expect(output).toMatch(/--shape \(136×132×40 nt\): (8x(8|16)(-[a-z0-9.-]+)?|KILN_CUDA_F32_SPLIT_K=waves) /);
    });

    it('f32-kernels on an interior shape runs the interior variants, with the same numbers', () => {
      const { status, output, report } = runBench('f32-kernels.mjs', '128x128x32:nn');
      expect(status, output).toBe(0);
      const [row] = report.rows;
      expect(row.routes['8x16-k16']).toBe('f32 SIMT k16');
      expect(row.routes['8x16-overlap']).toBe('f32 SIMT overlap');
      expect(row.routes['8x16-k16-overlap']).toBe('f32 SIMT k16 overlap');
      for (const variant of ['8x16-k16', '8x16-overlap', '8x16-k16-overlap']) expect(row.difference[variant]).toBe(0);
    });

    it('wgmma-widths times the chosen width and the three forced ones', () => {
      const { status, output, report } = runBench('wgmma-widths.mjs', '136x264x64');
      expect(status, output).toBe(0);
      const [row] = report.rows;
      expect(row.shape).toBe('--shape (136×264×64 nn)');
      for (const width of ['chosen', '128', '192', '256']) expect(row.tflops[width], width).toBeGreaterThan(0);
      expect(report.rounds).toBe(2);
    });

    it('refuses a malformed --shape, naming it', () => {
      const { status, output } = runBench('f32-kernels.mjs', '136x132');
      expect(status).not.toBe(0);
      expect(output).toContain('--shape must be MxNxK[:nn|nt|tn|tt], got "136x132"');
    });
  },
);
