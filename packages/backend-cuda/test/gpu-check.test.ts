// scripts/gpu-check (one command on a GPU machine) without a GPU: argument parsing, the report's
// targets and table, a clear 'skipped' report when no GPU is usable, the whole flow on the
// simulator build (--simulator), and a self-contained bundle (gpu-check:pack) that runs with no
// workspace around it.
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { parseArguments, UsageError } from '../scripts/gpu-check/arguments.mjs';
import { kilnKernelOfTimings, matmulAgreementLimit, relativeL2 } from '../scripts/gpu-check/measure.mjs';
import {
  compareMatmulRows,
  createReport,
  evaluateTargets,
  formatReport,
  type GpuCheckReport,
  type MatmulRow,
  matmulBaseline,
} from '../scripts/gpu-check/report.mjs';
import { parseSanitizerOutput } from '../scripts/gpu-check/sanitizer.mjs';
import { buildFakeCublas } from './fake-cublas.js';
import { simulatorSkipReason } from './simulator-status.js';

const run = promisify(execFile);
const packageRoot = fileURLToPath(new URL('..', import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), 'kiln-gpu-check-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
/** --skip for running only the hf-fixtures section. */
const ALL_BUT_HF_FIXTURES = 'conformance,matmul,kernels,attention,train,gpt2s,graph,determinism,resume';
const built =
  existsSync(join(packageRoot, 'dist', 'index.js')) &&
  existsSync(join(packageRoot, '..', 'core', 'dist', 'index.js')) &&
  existsSync(join(packageRoot, '..', 'testing', 'dist', 'index.js')) &&
  existsSync(join(packageRoot, '..', 'trainer', 'dist', 'testing', 'index.js'));

/** A report row for a 4096³ nn matmul (label '4096³', f32, kiln at 0 TFLOP/s) with `fields` over it. */
function squareRow(fields: Partial<MatmulRow>): MatmulRow {
  const shape = { m: 4096, n: 4096, k: 4096, transposeA: false, transposeB: false };
  return { label: '4096³', dtype: 'f32', ...shape, kilnTflops: 0, ...fields };
}

describe('gpu-check arguments', () => {
  it('has defaults for a full run and parses every option', () => {
    const defaults = parseArguments([]);
    expect(defaults).toMatchObject({
      quick: false,
      simulator: false,
      json: 'gpu-check-report.json',
      model: 'medium',
      precision: 'bf16',
      steps: 20,
      warmup: 5,
      python: 'python3',
    });
    expect([...defaults.skip]).toEqual([]);
    const options = parseArguments([
      '--quick',
      '--json',
      'r.json',
      '--skip',
      'pytorch,train',
      '--model',
      'small',
      '--precision',
      'f32',
      '--steps',
      '3',
      '--warmup',
      '0',
      '--python',
      '/usr/bin/python3.12',
      '--cublas-path',
      '/opt/cublas',
    ]);
    expect(options).toMatchObject({
      quick: true,
      json: 'r.json',
      model: 'small',
      precision: 'f32',
      steps: 3,
      warmup: 0,
      python: '/usr/bin/python3.12',
      cublasPath: '/opt/cublas',
    });
    expect([...options.skip].sort()).toEqual(['pytorch', 'train']);
    expect(parseArguments(['--skip', 'kernels,attention']).skip).toEqual(new Set(['kernels', 'attention']));
    expect(parseArguments(['--simulator']).quick).toBe(true);
    expect(defaults).toMatchObject({ gpt2sBatches: [8, 32], gpt2sSteps: 10 });
    expect(
      parseArguments(['--gpt2s-batches', '4,16', '--gpt2s-steps', '5', '--skip', 'compile,determinism,resume,gpt2s']),
    ).toMatchObject({ gpt2sBatches: [4, 16], gpt2sSteps: 5 });
    expect(parseArguments(['--model', 'gpt2s']).model).toBe('gpt2s');
    expect(parseArguments(['--skip', 'hf-fixtures']).skip).toEqual(new Set(['hf-fixtures']));
    expect(defaults.matmulBaseline).toBeUndefined();
    expect(parseArguments(['--matmul-baseline', 'out/matmul.json']).matmulBaseline).toBe('out/matmul.json');
  });

  it('rejects what it does not know, naming it', () => {
    for (const [argv, message] of [
      [['--fast'], /unknown argument '--fast'/],
      [['--model', 'huge'], /--model huge/],
      [['--skip', 'flash'], /--skip flash: unknown part/],
      [['--steps', '-1'], /--steps must be a non-negative integer/],
      [['--json'], /--json needs a value/],
      [['--matmul-baseline'], /--matmul-baseline needs a value/],
      [['--precision', 'f16'], /use bf16 or f32/],
      [['--gpt2s-batches', '8,0'], /--gpt2s-batches needs batch sizes ≥ 1/],
      [['--gpt2s-batches', 'eight'], /--gpt2s-batches must be a non-negative integer/],
    ] as const) {
      expect(() => parseArguments([...argv])).toThrow(UsageError);
      expect(() => parseArguments([...argv])).toThrow(message);
    }
  });
});

describe("gpu-check's kiln-vs-cuBLAS agreement", () => {
  it("names the kiln kernel from the kernel timer's launch names", () => {
    const named = (name: string) => kilnKernelOfTimings([{ name: 'copy bf16' }, { name }]);
    expect(named('matmul f32 batch=1 m=2048 n=768 k=8192 transA (kiln f32 SIMT, split-K 3)')).toBe('SIMT split-K 3');
    expect(named('matmul bf16 batch=4 m=64 n=520 k=40 transB (kiln wgmma, batch folded)')).toBe('wgmma');
    expect(named('matmul bf16 batch=1 m=8192 n=768 k=50257 (kiln WMMA)')).toBe('WMMA');
    expect(named('matmul bf16 batch=1 m=4096 n=4096 k=4096 (kiln wgmma 128x256)')).toBe('wgmma 128x256');
    expect(named('matmul bf16 batch=1 m=768 n=768 k=8192 transA (kiln wgmma, split-K 3, batch folded)')).toBe(
      'wgmma split-K 3',
    );
    expect(named('matmul bf16 batch=1 m=8 n=8 k=8 (cuBLAS)')).toBeUndefined();
  });

  it('measures the relative L2 difference and calls any non-finite value a disagreement', () => {
    expect(relativeL2([1, 2, 3], [1, 2, 3])).toBe(0);
    expect(relativeL2([3, 4], [0, 5])).toBeCloseTo(Math.sqrt(9 + 1) / 5, 12);
    expect(relativeL2([1, Number.NaN], [1, 2])).toBe(Number.POSITIVE_INFINITY);
    expect(relativeL2([1, 2], [1, Number.POSITIVE_INFINITY])).toBe(Number.POSITIVE_INFINITY);
  });
  it('allows one output rounding for half dtypes, summation order for f32, input rounding for TF32', () => {
    expect(matmulAgreementLimit('bf16', false)).toBe(1e-2);
    expect(matmulAgreementLimit('f16', false)).toBe(2e-3);
    expect(matmulAgreementLimit('f32', false)).toBe(1e-5);
    expect(matmulAgreementLimit('f32', true)).toBe(5e-3);
  });
  it('prints each row’s difference and marks a disagreement', () => {
    const report = createReport(parseArguments([]), { node: 'v20' });
    const row = { dtype: 'bf16', m: 8, n: 8, k: 8, transposeA: false, transposeB: true, kernel: 'wgmma' };
    report.matmul.push(
      { ...row, label: 'fine', kilnTflops: 1, cublasTflops: 1, ratio: 1, relativeL2VsCublas: 0.0021, agrees: true },
      { ...row, label: 'broken', kilnTflops: 1, cublasTflops: 1, ratio: 1, relativeL2VsCublas: 0.9, agrees: false },
    );
    const text = formatReport(report);
    expect(text).toMatch(/fine .*2\.1e-3(?! DISAGREES)/);
    expect(text).toMatch(/broken .*9\.0e-1 DISAGREES/);
  });
});

describe("gpu-check's compute-sanitizer part", () => {
  it('reads the error count from the summary, else counts the error lines of a stopped run', () => {
    expect(parseSanitizerOutput('========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n')).toEqual({
      errors: 0,
      summary: true,
    });
    expect(parseSanitizerOutput('========= ERROR SUMMARY: 3 errors')).toEqual({ errors: 3, summary: true });
    // racecheck's own summary (seen on an H200): its error count, not the word "RACECHECK".
    expect(
      parseSanitizerOutput(
        '========= COMPUTE-SANITIZER\n========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n',
      ),
    ).toEqual({ errors: 0, summary: true });
    expect(parseSanitizerOutput('========= RACECHECK SUMMARY: 9 hazards displayed (9 errors, 0 warnings)')).toEqual({
      errors: 9,
      summary: true,
    });
    const stopped = [
      '========= COMPUTE-SANITIZER',
      '========= Invalid __global__ write of size 4 bytes',
      '=========     at kernel+0x10',
      '========= Error: Race reported between Write access at x',
      '=========     and Read access at y [256 hazards]',
      'sanitizer-target: Hopper-sized cases done',
    ].join('\n');
    expect(parseSanitizerOutput(stopped)).toEqual({ errors: 2, summary: false });
  });
  it.skipIf(simulatorSkipReason() !== undefined || !built)(
    'its target runs the Hopper-sized cases (each Hopper kernel launched) and the kit on the simulator',
    async () => {
      const { stdout } = await run(
        process.execPath,
        [join(packageRoot, 'scripts', 'gpu-check', 'sanitizer-target.mjs'), '--simulator'],
        { cwd: packageRoot, maxBuffer: 16 << 20 },
      );
      const result = JSON.parse(stdout.trim().split('\n').at(-1) ?? '');
      expect(result.kit.failed).toBe(0);
      expect(result.kit.passed).toBeGreaterThan(100);
      // Split-K launches: the wgmma tn case, then the register-fed f32 kernels' long-k interior case
      // (8x16, its three interior variants and 8x8, 4 layouts each).
      expect(result.hopper).toEqual({ matmul: 4, splitKMatmul: 1 + 5 * 4, attentionForward: 2, attentionBackward: 2 });
    },
  );
});

describe('gpu-check report', () => {
  function sample(): GpuCheckReport {
    const report = createReport(parseArguments([]), { node: 'v20' });
    report.probe = { available: true, devices: [{ name: 'NVIDIA H100 80GB HBM3', computeCapability: '9.0' }] };
    report.conformance.push({ name: 'full kit', passed: 1800, failed: 0, skipped: 90, seconds: 61.5, failures: [] });
    report.matmul.push(
      {
        label: '4096³',
        dtype: 'bf16',
        m: 4096,
        n: 4096,
        k: 4096,
        transposeA: false,
        transposeB: false,
        kernel: 'mma.sync',
        kilnTflops: 420,
        cublasTflops: 700,
        ratio: 0.6,
      },
      {
        label: 'medium gate/up x·Wᵀ',
        dtype: 'f32',
        m: 2048,
        n: 704,
        k: 256,
        transposeA: false,
        transposeB: true,
        kernel: 'SIMT',
        kilnTflops: 20,
        kilnSpread: 0.03,
        cublasTflops: 25,
        cublasSpread: 0.012,
        ratio: 0.8,
        kilnDeviceTflops: 30,
        cublasDeviceTflops: 40,
        deviceRatio: 0.75,
      },
    );
    report.trainStep = {
      model: 'medium',
      precision: 'bf16',
      kiln: { msPerStep: 20, tokensPerSecond: 102_400 },
      pytorch: { msPerStep: 25, tokensPerSecond: 81_920 },
      ratio: 1.25,
    };
    report.sections.push({
      title: 'attention vs SDPA',
      rows: [
        ['shape', 'ratio'],
        ['B8 H8 T256 D32', '0.9×'],
      ],
    });
    return report;
  }

  it('checks the targets from figures of the same run', () => {
    const targets = evaluateTargets(sample());
    expect(targets).toEqual([
      { name: 'kiln bf16 matmul at 4096³ ≥ 70% of cuBLAS', value: 0.6, target: 0.7, met: false },
      { name: 'kiln train step (medium, bf16) ≥ 1× PyTorch eager', value: 1.25, target: 1, met: true },
    ]);
    const empty = createReport(parseArguments([]), {});
    expect(evaluateTargets(empty).map((target) => target.met)).toEqual([null, null]);
  });

  it('prints one table per part, the ratios and the targets', () => {
    const report = sample();
    evaluateTargets(report);
    const text = formatReport(report);
    expect(text).toContain('device: NVIDIA H100 80GB HBM3 (compute capability 9.0)');
    expect(text).toMatch(/full kit\s+1800\s+0\s+90\s+61\.5/);
    expect(text).toMatch(/4096³\s+bf16\s+4096×4096×4096\s+nn\s+mma\.sync\s+420\.00\s+700\.00\s+60\.0%/);
    // The loops' spread (half of slowest − fastest over the median: kiln's, then cuBLAS's), then the device figures.
    expect(text).toMatch(
      /medium gate\/up x·Wᵀ\s+f32\s+2048×704×256\s+nt\s+SIMT\s+20\.00\s+25\.00\s+80\.0%\s+±1\.5%, ±0\.6%\s+30\.00\s+40\.00\s+75\.0%/,
    );
    // A row without spreads or device figures (a report from before they were kept) prints dashes.
    expect(text).toMatch(/4096³\s+bf16\s+4096×4096×4096\s+nn\s+mma\.sync\s+420\.00\s+700\.00\s+60\.0%\s+—\s+—\s+—\s+—/);
    expect(text).toMatch(/kiln bench\s+20\.00\s+102400/);
    expect(text).toContain('kiln / PyTorch: 1.25×');
    expect(text).toContain('attention vs SDPA:');
    expect(text).toContain('✗ kiln bf16 matmul at 4096³ ≥ 70% of cuBLAS: 60%');
    expect(text).toContain('✓ kiln train step (medium, bf16) ≥ 1× PyTorch eager: 1.25×');
  });

  it('checks f32 (TF32 off) at 4096³ against 90% of cuBLAS and labels the TF32 and split-K rows (issue 19)', () => {
    const report = sample();
    const row = (tf32: boolean, kernel: string, ratio: number) =>
      squareRow({ dtype: 'f32', ...(tf32 ? { tf32 } : {}), kernel, kilnTflops: ratio * 50, cublasTflops: 50, ratio });
    report.matmul.push(row(false, 'SIMT', 0.92), row(true, 'TF32 mma.sync', 0.5));
    report.matmul.push({
      label: 'gpt2s mlp dW = dYᵀ·X',
      dtype: 'f32',
      m: 2048,
      n: 768,
      k: 8192,
      transposeA: true,
      transposeB: false,
      kernel: 'SIMT split-K',
      kilnTflops: 30,
      cublasTflops: 40,
      ratio: 0.75,
    });
    const targets = evaluateTargets(report);
    expect(targets).toContainEqual({
      name: 'kiln f32 matmul (TF32 off) at 4096³ ≥ 90% of cuBLAS',
      value: 0.92,
      target: 0.9,
      met: true,
    });
    const text = formatReport(report);
    expect(text).toMatch(/4096³\s+f32 TF32\s+4096×4096×4096\s+nn\s+TF32 mma\.sync\s+25\.00\s+50\.00\s+50\.0%/);
    expect(text).toMatch(/gpt2s mlp dW = dYᵀ·X\s+f32\s+2048×768×8192\s+tn\s+SIMT split-K/);
  });

  it('checks the worst bf16 gpt2s matmul shape against 60% of cuBLAS (issue 19)', () => {
    const report = sample();
    const row = (label: string, ratio: number) => ({
      label,
      dtype: 'bf16',
      m: 8192,
      n: 768,
      k: 768,
      transposeA: false,
      transposeB: true,
      kernel: 'mma.sync',
      kilnTflops: ratio * 500,
      cublasTflops: 500,
      ratio,
    });
    report.matmul.push(row('gpt2s q/k/v/o x·Wᵀ', 0.75), row('gpt2s mlp dW = dYᵀ·X', 0.55));
    expect(evaluateTargets(report)[1]).toEqual({
      name: 'kiln bf16 matmul at every gpt2s shape ≥ 60% of cuBLAS (worst: gpt2s mlp dW = dYᵀ·X)',
      value: 0.55,
      target: 0.6,
      met: false,
    });
    expect(formatReport(report)).toContain(
      '✗ kiln bf16 matmul at every gpt2s shape ≥ 60% of cuBLAS (worst: gpt2s mlp dW = dYᵀ·X): 55%',
    );
  });

  it('has one Hugging Face fixture target per matmul path: every fixture within the bounds', () => {
    const report = sample();
    const run = (fixture: string, matmul: string, passed: boolean) => ({
      fixture,
      matmul,
      failures: passed ? [] : ['logits 2.00e-5 relative ≥ 0.00001'],
      passed,
      seconds: 0.2,
    });
    report.hfFixtures = {
      fixtures: '/fixtures/hf',
      error: null,
      failed: 1,
      runs: [
        run('gpt2', 'cuBLAS (TF32 off)', true),
        run('llama-gqa', 'cuBLAS (TF32 off)', false),
        run('gpt2', 'kiln kernels', true),
      ],
    };
    expect(evaluateTargets(report).slice(2)).toEqual([
      {
        name: "Hugging Face fixtures within issue 14's bounds (f32, matmul cuBLAS (TF32 off))",
        value: 1,
        target: 2,
        met: false,
      },
      {
        name: "Hugging Face fixtures within issue 14's bounds (f32, matmul kiln kernels)",
        value: 1,
        target: 1,
        met: true,
      },
    ]);
    const text = formatReport(report);
    expect(text).toContain(
      "✗ Hugging Face fixtures within issue 14's bounds (f32, matmul cuBLAS (TF32 off)): 1/2 pass",
    );
    expect(text).toContain("✓ Hugging Face fixtures within issue 14's bounds (f32, matmul kiln kernels): 1/1 pass");
    report.hfFixtures = { fixtures: null, error: 'the fixtures were not found', failed: 1, runs: [] };
    expect(evaluateTargets(report).slice(2)).toEqual([
      { name: "Hugging Face fixtures within issue 14's bounds", value: null, target: 1, met: false },
    ]);
  });
});

describe("gpu-check's matmul baseline (--matmul-baseline: the staged run's matmul-128 stage against its matmul stage)", () => {
  const row = (label: string, dtype: string, kernel: string, device: number, tf32 = false): MatmulRow =>
    squareRow({ label, dtype, ...(tf32 ? { tf32 } : {}), kernel, kilnTflops: device / 2, kilnDeviceTflops: device });
  const narrow = [
    row('4096³', 'bf16', 'wgmma', 500),
    row('gpt2s q/k/v/o x·Wᵀ', 'bf16', 'wgmma', 300),
    row('4096³', 'f32', 'SIMT', 40),
    row('4096³', 'f32', 'TF32 mma.sync', 100, true),
  ];
  const chosen = [
    row('4096³', 'bf16', 'wgmma 128x256', 600),
    row('gpt2s q/k/v/o x·Wᵀ', 'bf16', 'wgmma 128x192', 270),
    row('4096³', 'f32', 'TF32 mma.sync', 110, true),
    row('gpt2s lm_head', 'bf16', 'wgmma', 90),
  ];

  it('matches rows by shape, dtype and TF32 and gives the device-time ratio of each', () => {
    const rows = compareMatmulRows(narrow, chosen);
    expect(rows).toEqual([
      {
        label: '4096³',
        dtype: 'bf16',
        kernel: 'wgmma',
        baselineKernel: 'wgmma 128x256',
        deviceTflops: 500,
        baselineDeviceTflops: 600,
        deviceRatio: 500 / 600,
      },
      {
        label: 'gpt2s q/k/v/o x·Wᵀ',
        dtype: 'bf16',
        kernel: 'wgmma',
        baselineKernel: 'wgmma 128x192',
        deviceTflops: 300,
        baselineDeviceTflops: 270,
        deviceRatio: 300 / 270,
      },
      {
        label: '4096³',
        dtype: 'f32',
        tf32: true,
        kernel: 'TF32 mma.sync',
        baselineKernel: 'TF32 mma.sync',
        deviceTflops: 100,
        baselineDeviceTflops: 110,
        deviceRatio: 100 / 110,
      },
    ]);
  });

  it('reads the baseline report, says why when it cannot, and prints the comparison', () => {
    const file = join(scratch, 'matmul-stage.json');
    writeFileSync(file, JSON.stringify({ schema: 1, matmul: chosen }));
    const compared = matmulBaseline(file, narrow);
    expect('rows' in compared && compared.rows.length).toBe(3);
    expect(matmulBaseline(join(scratch, 'missing.json'), narrow)).toMatchObject({ error: /^cannot read it: / });
    const empty = join(scratch, 'skipped-stage.json');
    writeFileSync(empty, JSON.stringify({ schema: 1, status: 'skipped', matmul: [] }));
    expect(matmulBaseline(empty, narrow)).toEqual({
      file: empty,
      error: 'it has no matmul rows (its matmul part was skipped or failed)',
    });
    expect(matmulBaseline(file, [row('2048³', 'bf16', 'wgmma', 1)])).toEqual({
      file,
      error: 'none of its matmul shapes is in this run',
    });
    const report = createReport(parseArguments([]), {});
    report.matmulBaseline = compared;
    const text = formatReport(report);
    expect(text).toContain(`matmul against ${file} (kiln's device TFLOP/s; ratio = this run / that one):`);
    expect(text).toMatch(/4096³\s+bf16\s+wgmma\s+500\.00\s+wgmma 128x256\s+600\.00\s+83%/);
    expect(text).toMatch(/gpt2s q\/k\/v\/o x·Wᵀ\s+bf16\s+wgmma\s+300\.00\s+wgmma 128x192\s+270\.00\s+111%/);
    report.matmulBaseline = { file: empty, error: 'it has no matmul rows (its matmul part was skipped or failed)' };
    expect(formatReport(report)).toContain(
      `matmul against ${empty}: not compared (it has no matmul rows (its matmul part was skipped or failed))`,
    );
  });
});

describe.skipIf(!built)(
  'gpu-check runs (needs `pnpm turbo build`: dist of core, testing, trainer and backend-cuda)',
  () => {
    it('the staged runner runs every stage in its own process and respects its deadline', async (context) => {
      const script = join(packageRoot, 'scripts', 'gpu-check-staged.sh');
      const out = join(scratch, 'staged');
      await run('bash', [script, '--out', out, '--no-build'], { cwd: packageRoot, maxBuffer: 16 << 20 });
      const stages = [
        'kit',
        'attention',
        'matmul',
        'f32-kernels',
        'gpt2s',
        'graph',
        'sanitizer',
        'ncu',
        'rest',
        'attention-flash2',
        'matmul-128',
        'wgmma-widths',
      ];
      const report = JSON.parse(readFileSync(join(out, 'kit.json'), 'utf8')) as GpuCheckReport;
      if (report.status !== 'skipped') context.skip('a GPU is usable here');
      const summary = readFileSync(join(out, 'summary.txt'), 'utf8');
      for (const stage of stages) {
        expect(summary).toMatch(new RegExp(`\\] ${stage}: exit 0\\n`));
        expect(existsSync(join(out, `${stage}.json`)), `${stage}.json`).toBe(true);
      }
      const late = join(scratch, 'staged-late');
      await run('bash', [script, '--out', late, '--deadline', '10', '--no-build'], { cwd: packageRoot });
      const lateSummary = readFileSync(join(late, 'summary.txt'), 'utf8');
      for (const stage of stages) expect(lateSummary).toContain(`] ${stage}: not run (the deadline is near)`);
      // --only: the named stages alone (a lease's second, shorter call), unknown names refused.
      const some = join(scratch, 'staged-only');
      await run('bash', [script, '--out', some, '--only', 'kit,matmul', '--deadline', '10', '--no-build'], {
        cwd: packageRoot,
      });
      const someSummary = readFileSync(join(some, 'summary.txt'), 'utf8');
      expect(someSummary).toContain('] kit: not run');
      expect(someSummary).toContain('] matmul: not run');
      expect(someSummary).not.toContain('] attention:');
      await expect(run('bash', [script, '--out', some, '--only', 'kit,widths'], { cwd: packageRoot })).rejects.toThrow(
        /--only: unknown stage 'widths'/,
      );
    });

    it('skips with a clear message and a skipped report where no GPU is usable', async (context) => {
      const reportPath = join(scratch, 'skipped.json');
      const { stdout } = await run(
        'bash',
        [join(packageRoot, 'scripts', 'gpu-check.sh'), '--no-build', '--json', reportPath],
        { cwd: packageRoot, maxBuffer: 16 << 20 },
      );
      const report = JSON.parse(readFileSync(reportPath, 'utf8')) as GpuCheckReport;
      if (report.status !== 'skipped') context.skip('a GPU is usable here');
      expect(report.reason).toMatch(/^(no usable GPU: |the CUDA addon could not be loaded: )/);
      expect(stdout).toMatch(/kiln gpu-check — skipped: (no usable GPU|the CUDA addon could not be loaded)/);
    });

    it.skipIf(simulatorSkipReason() !== undefined)(
      'runs the whole flow on the simulator build (--simulator) and writes the report',
      async () => {
        const reportPath = join(scratch, 'simulator.json');
        const { stdout } = await run(
          process.execPath,
          [join(packageRoot, 'scripts', 'gpu-check.mjs'), '--simulator', '--skip', 'conformance', '--json', reportPath],
          {
            cwd: packageRoot,
            maxBuffer: 16 << 20,
          },
        );
        const report = JSON.parse(readFileSync(reportPath, 'utf8')) as GpuCheckReport;
        expect(report.status).toBe('ok');
        // The memory-bound kernels, among them both casts, rope in each dtype and the mixed-precision norms.
        const kernelRows = report.sections.find((section) => section.title.startsWith('kernels ('))?.rows ?? [];
        expect(kernelRows.map((row) => `${row[0]} ${row[1]}`)).toEqual(
          expect.arrayContaining([
            'cast to f32 bf16',
            'cast to bf16 f32',
            'rope bf16',
            'rope f32',
            'rmsNorm to bf16 f32',
            'rmsNormBackward with dy bf16 f32',
            'layerNorm bf16',
            'layerNormBackward bf16',
            'layerNorm to bf16 f32',
            'layerNormBackward with dy bf16 f32',
          ]),
        );
        // 128³ and the tiny model's seven shapes in bf16, f32 (TF32 off) and f32 with TF32 allowed; 128³ in f16.
        expect(report.matmul.length).toBe(25);
        expect(report.matmul.filter((row) => row.tf32 === true)).toHaveLength(8);
        expect(report.matmul.every((row) => row.kilnTflops > 0 && row.ratio === undefined)).toBe(true);
        // Device time comes from the kernel timer (the simulator's events read the host clock).
        expect(report.matmul.every((row) => (row.kilnDeviceTflops ?? 0) > 0)).toBe(true);
        expect(stdout).toMatch(/kiln device +cuBLAS device +device ratio/);
        // The simulated device reports compute capability 9.0: f16/bf16 run the pipelined mma.sync kernel.
        expect(report.matmul.map((row) => `${row.dtype} ${row.kernel}`)).toEqual(
          expect.arrayContaining(['bf16 mma.sync', 'f16 mma.sync', 'f32 SIMT', 'f32 TF32 mma.sync']),
        );
        expect(report.matmulNote).toMatch(/cuBLAS not measured/);
        expect(report.trainStep?.kiln).toMatchObject({ skipped: expect.stringContaining('simulator') });
        expect(stdout).toContain('matmul (TFLOP/s, same run; ratio = kiln / cuBLAS, host-timed back-to-back calls;');
        // What users run, through the CLI on the 'cuda-sim' plugin: a train step with its profile (device events), then the reproducibility checks.
        const gpt2s = (
          report as GpuCheckReport & {
            gpt2s: {
              model: string;
              runs: Array<{ batch: number; kiln: { tokensPerSecond?: number; error?: string } }>;
              profile: { timing: string; rows: unknown[] };
            };
          }
        ).gpt2s;
        expect(gpt2s.model).toBe('tiny');
        expect(gpt2s.runs[0].batch).toBe(2);
        expect(gpt2s.runs[0].kiln.tokensPerSecond, gpt2s.runs[0].kiln.error).toBeGreaterThan(0);
        expect(gpt2s.profile.timing).toBe('device');
        expect(gpt2s.profile.rows.length).toBeGreaterThan(5);
        // The simulator has no cuBLAS: each matmul row names the kiln kernel it ran on.
        const matmulRows = (gpt2s.profile.rows as Array<{ kernel: string }>).filter((row) =>
          row.kernel.startsWith('matmul '),
        );
        expect(matmulRows.length).toBeGreaterThan(0);
        for (const row of matmulRows) expect(row.kernel).toMatch(/\(kiln (mma\.sync|wgmma|WMMA|f32 SIMT)(, .*)?\)$/);
        // The step without cuBLAS (the same kernels here) is timed and profiled too.
        const own = (
          report as GpuCheckReport & { gpt2s: { ownMatmul: { kiln: { tokensPerSecond?: number; error?: string } } } }
        ).gpt2s.ownMatmul;
        expect(own.kiln.tokensPerSecond, own.kiln.error).toBeGreaterThan(0);
        expect(stdout).toMatch(/^where a tiny step \(batch 2, on kiln's own matmul kernels\) goes: /m);
        expect(stdout).toMatch(/^where a tiny step \(batch 2\) goes: .* device time per kernel \(CUDA events\):$/m);
        const graphRuns = (
          report as GpuCheckReport & {
            cudaGraph: Array<{
              model: string;
              eager: { tokensPerSecond?: number; error?: string };
              graphed: { tokensPerSecond?: number; stepMode?: string; error?: string };
              busyEager: number | null;
            }>;
          }
        ).cudaGraph;
        expect(graphRuns.map((run) => run.model)).toEqual(['tiny']);
        expect(graphRuns[0].eager.tokensPerSecond, graphRuns[0].eager.error).toBeGreaterThan(0);
        expect(graphRuns[0].graphed.stepMode, graphRuns[0].graphed.error).toBe('graphed');
        expect(graphRuns[0].busyEager).toBeGreaterThan(0);
        expect(stdout).toMatch(/^CUDA graph vs eager \(bf16/m);
        const reproducibility = (
          report as GpuCheckReport & {
            reproducibility: {
              determinism: { identical: boolean; hashes: string[] };
              resume: { identical: boolean; resumes: Array<{ killedAfterStep: number; identical: boolean }> };
            };
          }
        ).reproducibility;
        expect(reproducibility.determinism.identical).toBe(true);
        expect(reproducibility.determinism.hashes[0]).toMatch(/^[0-9a-f]{64}$/);
        expect(reproducibility.resume.identical).toBe(true);
        expect(reproducibility.resume.resumes.map((resume) => [resume.killedAfterStep, resume.identical])).toEqual([
          [1, true],
          [2, true],
          [3, true],
        ]);
        expect(stdout).toMatch(
          /SIGKILL \+ --resume vs uninterrupted\s+3\/3 identical \(killed after steps 1, 2, 3 of 4/,
        );
        expect(stdout).toContain("✓ SIGKILL + --resume gives the uninterrupted run's weights: yes");
        expect(report.hfFixtures?.runs.map((run) => run.passed)).toEqual([true, true, true, true]);
      },
      600_000,
    );

    // Every part but 'hf-fixtures' skipped; cuBLAS is the test double (test/fake-cublas.ts), so the
    // section runs each fixture through cuBLAS and again with matmul: 'kiln', as on a GPU machine.
    it.skipIf(simulatorSkipReason() !== undefined)(
      "hf-fixtures: every Hugging Face fixture passes the issue's bounds on the simulator, through cuBLAS and through kiln's matmul",
      async () => {
        const cublas = join(scratch, 'fake-cublas');
        mkdirSync(cublas);
        const compilerMissing = buildFakeCublas(cublas);
        const reportPath = join(scratch, 'hf-fixtures.json');
        const { stdout } = await run(
          process.execPath,
          [
            join(packageRoot, 'scripts', 'gpu-check.mjs'),
            '--simulator',
            '--skip',
            ALL_BUT_HF_FIXTURES,
            '--json',
            reportPath,
            ...(compilerMissing === undefined ? ['--cublas-path', cublas] : []),
          ],
          { cwd: packageRoot, maxBuffer: 16 << 20 },
        );
        const report = JSON.parse(readFileSync(reportPath, 'utf8')) as GpuCheckReport;
        expect(report.status).toBe('ok');
        const fixtures = ['llama-gqa', 'gpt2', 'bigcode-mqa', 'llama-gqa-lora'];
        const paths = compilerMissing === undefined ? ['cuBLAS (TF32 off)', 'kiln kernels'] : ['kiln kernels'];
        const runs = report.hfFixtures!.runs;
        expect(runs.map((item) => `${item.fixture} ${item.matmul}`)).toEqual(
          paths.flatMap((path) => fixtures.map((fixture) => `${fixture} ${path}`)),
        );
        for (const item of runs) {
          expect(item.failures, `${item.fixture} ${item.matmul}`).toEqual([]);
          expect(item.logitsRelative).toBeLessThan(1e-5);
          expect(item.lossError).toBeLessThan(1e-6);
          expect(item.worstGradient).toBeLessThan(1e-4);
          expect(item.gradients).toBeGreaterThan(0);
          if (item.greedy!.reference !== null) expect(item.greedy!.kiln).toEqual(item.greedy!.reference);
        }
        expect(runs.find((item) => item.fixture === 'llama-gqa-lora')?.gradients).toBe(8); // q_proj and v_proj's lora_A and lora_B in 2 layers: only the adapter
        expect(stdout).toMatch(
          /^hf fixture gpt2 \(kiln kernels\): logits \S+ rel, loss \S+, worst of 28 gradients \S+ rel, greedy identical — pass \(\d+\.\d s\)$/m,
        );
        expect(stdout).toMatch(/^llama-gqa-lora +kiln kernels +\S+ +\S+ +\S+ \(8\) +8 tokens \(no reference\) +pass/m);
        for (const path of paths)
          expect(stdout).toContain(`✓ Hugging Face fixtures within issue 14's bounds (f32, matmul ${path}): 4/4 pass`);
      },
      300_000,
    );

    it('packs a self-contained bundle that runs without the workspace', async (context) => {
      const bundle = join(scratch, 'bundle');
      await run(process.execPath, [join(packageRoot, 'scripts', 'gpu-check-pack.mjs'), '--out', bundle, '--no-node'], {
        cwd: packageRoot,
        maxBuffer: 16 << 20,
      });
      for (const path of [
        'node_modules/@kiln/core/dist/index.js',
        'node_modules/@kiln/backend-cuda/native/kernels/matmul_wmma.cuh',
        'node_modules/@kiln/trainer/dist/index.js',
        'node_modules/zod/package.json',
        'node_modules/@kiln/testing/dist/index.js',
        'headers/node-api-headers/node_api.h',
        'headers/node-addon-api/napi.h',
        'scripts/gpu-check/report.mjs',
        'scripts/gpu-check/training.mjs',
        'scripts/gpu-check/hf-fixtures.mjs',
        'node_modules/@kiln/trainer/dist/testing/index.js',
        'fixtures/hf/README.md',
        'fixtures/hf/llama-gqa/reference.safetensors',
        'fixtures/hf/gpt2/model.safetensors',
        'fixtures/hf/bigcode-mqa/reference.json',
        'fixtures/hf/llama-gqa-lora/adapter_model.safetensors',
        'bench/pytorch_train_step.py',
        'node_modules/@kiln/cli/bin/kiln.js',
        'node_modules/@kiln/cli/dist/main.js',
      ]) {
        expect(existsSync(join(bundle, path)), path).toBe(true);
      }
      // @kiln/testing runs without vitest (an optional peer it loads only if present): the bundle has none.
      expect(existsSync(join(bundle, 'node_modules', 'vitest'))).toBe(false);
      expect(
        existsSync(join(bundle, 'fixtures', 'hf', 'tokenizers')),
        'the tokenizer cases are not needed on the GPU machine',
      ).toBe(false);
      if (simulatorSkipReason() === undefined) {
        // The hf-fixtures section from the bundle alone: its @kiln/trainer/testing and its fixtures/hf (the simulator addon placed where --simulator looks).
        mkdirSync(join(bundle, 'build', 'sim', 'Release'), { recursive: true });
        copyFileSync(
          join(packageRoot, 'build', 'sim', 'Release', 'kiln_cuda_sim.node'),
          join(bundle, 'build', 'sim', 'Release', 'kiln_cuda_sim.node'),
        );
        const hfReportPath = join(scratch, 'bundle-hf.json');
        await run(
          process.execPath,
          [
            join(bundle, 'scripts', 'gpu-check.mjs'),
            '--simulator',
            '--skip',
            ALL_BUT_HF_FIXTURES,
            '--json',
            hfReportPath,
          ],
          { cwd: scratch, maxBuffer: 16 << 20 },
        );
        const hfReport = JSON.parse(readFileSync(hfReportPath, 'utf8')) as GpuCheckReport;
        expect(hfReport.hfFixtures?.fixtures).toBe(join(bundle, 'fixtures', 'hf') + '/');
        expect(hfReport.hfFixtures?.runs.map((item) => item.passed)).toEqual([true, true, true, true]);
      }
      const reportPath = join(scratch, 'bundle.json');
      await run('bash', [join(bundle, 'scripts', 'gpu-check.sh'), '--no-build', '--json', reportPath], {
        cwd: scratch,
        maxBuffer: 16 << 20,
      });
      const report = JSON.parse(readFileSync(reportPath, 'utf8')) as GpuCheckReport;
      if (report.status !== 'skipped') context.skip('a GPU is usable here');
      expect(report.addon === null || report.addon.location.startsWith(join(bundle, 'node_modules'))).toBe(true);
    });
  },
);
