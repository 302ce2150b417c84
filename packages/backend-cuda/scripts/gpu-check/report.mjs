// The gpu-check report: one JSON document (schema below) and the table printed from it. Every
// ratio is computed from figures measured in the same run, so machine speed cancels out.
//
// {
//   schema: 1, status: 'ok' | 'failed' | 'skipped', reason?, startedAt, seconds, host, addon, probe,
//   conformance: [{ name, passed, failed, skipped, seconds, failures: [{ id, message }] }],
//   matmul: [{ label, dtype, tf32?, m, n, k, transposeA, transposeB, kernel, kilnTflops, kilnSpread, cublasTflops?, cublasSpread?, ratio?, kilnDeviceTflops?, cublasDeviceTflops?, deviceRatio?, relativeL2VsCublas?, agrees? }], matmulNote?,
//   matmulBaseline?: { file, rows: [{ label, dtype, tf32?, kernel, baselineKernel, deviceTflops, baselineDeviceTflops, deviceRatio }] } | { file, error },
//     (kernel: kiln's kernel family, 'wgmma' (or 'wgmma 128x192' | 'wgmma 128x256') | 'mma.sync' | 'wmma' | 'SIMT' | 'TF32 mma.sync', plus ' split-K' when k was split;
//      tf32: f32 rows measured with allowTf32 on both kiln and cuBLAS; *Spread: (slowest − fastest) / median of the
//      timed loops, kiln's and cuBLAS's taking turns)
//   trainStep?: { model, precision, kiln: { msPerStep, tokensPerSecond } | { error }, pytorch: { … } | { skipped }, ratio? },
//   hfFixtures?: { fixtures, error, failed, runs: [{ fixture, matmul, logitsRelative, lossError, worstGradient, gradients, greedy, failures, passed, seconds }] },
//   sections: [{ title, rows: [[…cells]], note? }]     (other checks add theirs, e.g. attention vs SDPA)
//   targets: [{ name, value, target, met }]
// }

import { readFileSync } from 'node:fs';

/** The targets the report checks (issue 6). */
export const TARGETS = {
  /** kiln's bf16 matmul at 4096³ as a fraction of cuBLAS's throughput. */
  bf16MatmulRatio: 0.7,
  /** kiln's bf16 matmul at every gpt2s shape (tn included) as a fraction of cuBLAS's (issue 19). */
  gpt2sMatmulRatio: 0.6,
  /** kiln's f32 matmul (TF32 off on both sides) at 4096³ as a fraction of cuBLAS's (issue 19). */
  f32MatmulRatio: 0.9,
  /** kiln's train step (tokens/s) over PyTorch eager's. */
  trainStepRatio: 1.0,
  /** gpt2s bf16 (issue 15): kiln over PyTorch eager at every batch. */
  gpt2sEagerRatio: 1.0,
  /** gpt2s bf16 (issue 15): kiln over torch.compile(mode="default") where it ran. */
  gpt2sCompileRatio: 0.8,
  /** gpt2s on kiln's own matmul kernels (no cuBLAS) as a fraction of the same step with cuBLAS (issue 19). */
  ownMatmulStepRatio: 0.8,
};

/** A fresh report. */
export function createReport(options, host) {
  return {
    schema: 1,
    status: 'ok',
    startedAt: new Date().toISOString(),
    seconds: 0,
    host,
    options: { ...options, skip: [...options.skip] },
    addon: null,
    probe: null,
    conformance: [],
    matmul: [],
    trainStep: null,
    sections: [],
    targets: [],
  };
}

/** Fills report.targets from the measured figures (a target without a figure is reported as not measured). */
export function evaluateTargets(report) {
  const targets = [];
  const square =
    report.matmul.find((row) => row.dtype === 'bf16' && row.label.startsWith('4096³') && row.ratio !== undefined) ??
    report.matmul.find((row) => row.dtype === 'bf16' && row.label.startsWith('square') && row.ratio !== undefined);
  targets.push({
    name: `kiln bf16 matmul ${square ? `at ${square.label}` : 'at 4096³'} ≥ ${TARGETS.bf16MatmulRatio * 100}% of cuBLAS`,
    value: square?.ratio ?? null,
    target: TARGETS.bf16MatmulRatio,
    met: square ? square.ratio >= TARGETS.bf16MatmulRatio : null,
  });
  const gpt2sRows = report.matmul.filter(
    (row) => row.dtype === 'bf16' && row.label.startsWith('gpt2s') && row.ratio !== undefined,
  );
  if (gpt2sRows.length > 0) {
    const worst = gpt2sRows.reduce((low, row) => (row.ratio < low.ratio ? row : low));
    targets.push({
      name: `kiln bf16 matmul at every gpt2s shape ≥ ${TARGETS.gpt2sMatmulRatio * 100}% of cuBLAS (worst: ${worst.label})`,
      value: worst.ratio,
      target: TARGETS.gpt2sMatmulRatio,
      met: worst.ratio >= TARGETS.gpt2sMatmulRatio,
    });
  }
  const f32Square = report.matmul.find(
    (row) => row.dtype === 'f32' && !row.tf32 && row.label.startsWith('4096³') && row.ratio !== undefined,
  );
  if (f32Square) {
    targets.push({
      name: `kiln f32 matmul (TF32 off) at ${f32Square.label} ≥ ${TARGETS.f32MatmulRatio * 100}% of cuBLAS`,
      value: f32Square.ratio,
      target: TARGETS.f32MatmulRatio,
      met: f32Square.ratio >= TARGETS.f32MatmulRatio,
    });
  }
  const ratio = report.trainStep?.ratio;
  targets.push({
    name: `kiln train step (${report.trainStep?.model ?? 'medium'}, ${report.trainStep?.precision ?? 'bf16'}) ≥ ${TARGETS.trainStepRatio}× PyTorch eager`,
    value: ratio ?? null,
    target: TARGETS.trainStepRatio,
    met: ratio === undefined || ratio === null ? null : ratio >= TARGETS.trainStepRatio,
  });
  for (const run of report.gpt2s?.runs ?? []) {
    for (const [peer, key, target] of [
      ['PyTorch eager', 'eager', TARGETS.gpt2sEagerRatio],
      ['torch.compile', 'compiled', TARGETS.gpt2sCompileRatio],
    ]) {
      const value =
        run.kiln?.tokensPerSecond && run[key]?.tokensPerSecond
          ? run.kiln.tokensPerSecond / run[key].tokensPerSecond
          : null;
      if (value === null && key === 'compiled') continue;
      targets.push({
        name: `kiln ${report.gpt2s.model} batch ${run.batch} ≥ ${target}× ${peer}`,
        value,
        target,
        met: value === null ? null : value >= target,
      });
    }
  }
  const own = report.gpt2s?.ownMatmul;
  if (own)
    targets.push({
      name: `kiln ${report.gpt2s.model} batch ${own.batch} on its own matmul kernels ≥ ${TARGETS.ownMatmulStepRatio}× the step with cuBLAS`,
      value: own.ratio ?? null,
      target: TARGETS.ownMatmulStepRatio,
      met: own.ratio === null || own.ratio === undefined ? null : own.ratio >= TARGETS.ownMatmulStepRatio,
    });
  for (const [name, check] of [
    ['the same kiln train twice gives identical weights', report.reproducibility?.determinism],
    ["SIGKILL + --resume gives the uninterrupted run's weights", report.reproducibility?.resume],
  ]) {
    if (check === undefined || check === null) continue;
    const identical = check.error ? null : check.identical;
    targets.push({ name, value: identical === null ? null : identical ? 1 : 0, target: 1, met: identical });
  }
  const fixtureRuns = report.hfFixtures?.runs ?? [];
  for (const matmul of [...new Set(fixtureRuns.map((run) => run.matmul))]) {
    const runs = fixtureRuns.filter((run) => run.matmul === matmul);
    const passed = runs.filter((run) => run.passed).length;
    targets.push({
      name: `Hugging Face fixtures within issue 14's bounds (f32, matmul ${matmul})`,
      value: passed,
      target: runs.length,
      met: passed === runs.length,
    });
  }
  if (report.hfFixtures?.error)
    targets.push({ name: "Hugging Face fixtures within issue 14's bounds", value: null, target: 1, met: false });
  report.targets = targets;
  return targets;
}

function fixed(value, digits) {
  return value === undefined || value === null || Number.isNaN(value) ? '—' : value.toFixed(digits);
}

/** A matmul row's loop spreads as ±half of (slowest − fastest) / median, kiln's then cuBLAS's; '—' for rows from before they were kept. */
function loopSpread(row) {
  const half = (spread) => (spread === undefined ? '—' : `±${((spread * 100) / 2).toFixed(1)}%`);
  if (row.kilnSpread === undefined) return '—';
  return row.cublasSpread === undefined ? half(row.kilnSpread) : `${half(row.kilnSpread)}, ${half(row.cublasSpread)}`;
}

/** Columns padded to their widest cell; the first row is the header. */
export function table(rows) {
  const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => String(row[column]).length)));
  return rows
    .map((row, index) => {
      const line = row
        .map((cell, column) => String(cell).padEnd(widths[column]))
        .join('  ')
        .trimEnd();
      return index === 0 ? `${line}\n${widths.map((width) => '-'.repeat(width)).join('  ')}` : line;
    })
    .join('\n');
}

/** This run's matmul rows against those of the report in `file` (--matmul-baseline), or why they cannot be compared. */
export function matmulBaseline(file, rows) {
  let earlier;
  try {
    earlier = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    return { file, error: `cannot read it: ${String(error.message ?? error).split('\n')[0]}` };
  }
  if (!Array.isArray(earlier?.matmul) || earlier.matmul.length === 0)
    return { file, error: 'it has no matmul rows (its matmul part was skipped or failed)' };
  const compared = compareMatmulRows(rows, earlier.matmul);
  if (compared.length === 0) return { file, error: 'none of its matmul shapes is in this run' };
  return { file, rows: compared };
}

/** This run's matmul rows against a baseline report's, matched by label, dtype and TF32 (rows without a match are left out). */
export function compareMatmulRows(rows, baseline) {
  const key = (row) => `${row.label}|${row.dtype}|${row.tf32 === true}`;
  const earlier = new Map(baseline.map((row) => [key(row), row]));
  return rows.flatMap((row) => {
    const before = earlier.get(key(row));
    if (before === undefined) return [];
    const ratio =
      row.kilnDeviceTflops !== undefined && before.kilnDeviceTflops
        ? row.kilnDeviceTflops / before.kilnDeviceTflops
        : undefined;
    return [
      {
        label: row.label,
        dtype: row.dtype,
        ...(row.tf32 ? { tf32: true } : {}),
        kernel: row.kernel,
        baselineKernel: before.kernel,
        deviceTflops: row.kilnDeviceTflops,
        baselineDeviceTflops: before.kilnDeviceTflops,
        deviceRatio: ratio,
      },
    ];
  });
}

/** The printed form of a report. */
export function formatReport(report) {
  const lines = [];
  const device = report.probe?.devices?.[0];
  lines.push(`kiln gpu-check — ${report.status}${report.reason ? `: ${report.reason}` : ''}`);
  if (device) lines.push(`device: ${device.name} (compute capability ${device.computeCapability ?? '?'})`);
  if (report.addon)
    lines.push(
      `addon: ${report.addon.source} ${report.addon.location} (${report.addon.build?.build ?? '?'}, architectures ${report.addon.build?.architectures ?? '?'})`,
    );
  if (report.matmulPath) lines.push(`matmul path: ${report.matmulPath}`);
  if (report.conformance.length > 0) {
    lines.push('', 'conformance kit:');
    lines.push(
      table([
        ['run', 'passed', 'failed', 'skipped', 'seconds'],
        ...report.conformance.map((run) => [run.name, run.passed, run.failed, run.skipped, fixed(run.seconds, 1)]),
      ]),
    );
    for (const run of report.conformance)
      for (const failure of run.failures) lines.push(`  FAIL ${failure.id}: ${failure.message.split('\n')[0]}`);
  }
  if (report.matmul.length > 0) {
    lines.push(
      '',
      'matmul (TFLOP/s, same run; ratio = kiln / cuBLAS, host-timed back-to-back calls; device = from CUDA events, as a graphed step sees it):',
    );
    lines.push(
      table([
        [
          'shape',
          'dtype',
          'm×n×k',
          'op',
          'kiln kernel',
          'kiln',
          'cuBLAS',
          'ratio',
          'loops ± (kiln, cuBLAS)',
          'kiln device',
          'cuBLAS device',
          'device ratio',
          'vs cuBLAS (rel. L2)',
        ],
        ...report.matmul.map((row) => [
          row.label,
          row.tf32 ? 'f32 TF32' : row.dtype,
          `${row.m}×${row.n}×${row.k}`,
          `${row.transposeA ? 't' : 'n'}${row.transposeB ? 't' : 'n'}`,
          row.kernel ?? '?',
          fixed(row.kilnTflops, 2),
          fixed(row.cublasTflops, 2),
          row.ratio === undefined ? '—' : `${(row.ratio * 100).toFixed(1)}%`,
          loopSpread(row),
          fixed(row.kilnDeviceTflops, 2),
          fixed(row.cublasDeviceTflops, 2),
          row.deviceRatio === undefined ? '—' : `${(row.deviceRatio * 100).toFixed(1)}%`,
          row.relativeL2VsCublas === undefined
            ? '—'
            : `${row.relativeL2VsCublas.toExponential(1)}${row.agrees ? '' : ' DISAGREES'}`,
        ]),
      ]),
    );
    if (report.matmulNote) lines.push(`(${report.matmulNote})`);
  }
  const baseline = report.matmulBaseline;
  if (baseline && 'error' in baseline)
    lines.push('', `matmul against ${baseline.file}: not compared (${baseline.error})`);
  if (baseline && 'rows' in baseline && baseline.rows.length > 0) {
    lines.push('', `matmul against ${baseline.file} (kiln's device TFLOP/s; ratio = this run / that one):`);
    lines.push(
      table([
        ['shape', 'dtype', 'kiln kernel', 'device', 'baseline kernel', 'baseline device', 'ratio'],
        ...baseline.rows.map((row) => [
          row.label,
          row.tf32 ? 'f32 TF32' : row.dtype,
          row.kernel ?? '?',
          fixed(row.deviceTflops, 2),
          row.baselineKernel ?? '?',
          fixed(row.baselineDeviceTflops, 2),
          row.deviceRatio === undefined ? '—' : `${(row.deviceRatio * 100).toFixed(0)}%`,
        ]),
      ]),
    );
  }
  const train = report.trainStep;
  if (train) {
    lines.push('', `train step (${train.model}, ${train.precision}; tokens/s, higher is better):`);
    const cell = (side) =>
      side === undefined || side === null
        ? ['—', '—']
        : side.error || side.skipped
          ? [side.error ?? side.skipped, '—']
          : [fixed(side.msPerStep, 2), fixed(side.tokensPerSecond, 0)];
    lines.push(
      table([
        ['', 'ms/step', 'tokens/s'],
        ['kiln bench', ...cell(train.kiln)],
        ['PyTorch eager', ...cell(train.pytorch)],
      ]),
    );
    if (train.ratio !== undefined && train.ratio !== null) lines.push(`kiln / PyTorch: ${train.ratio.toFixed(2)}×`);
  }
  for (const section of report.sections) {
    lines.push('', `${section.title}:`, table(section.rows));
    if (section.note) lines.push(`(${section.note})`);
  }
  if (report.targets.length > 0) {
    lines.push('', 'targets:');
    for (const target of report.targets) {
      const mark = target.met === null ? '·' : target.met ? '✓' : '✗';
      const value =
        target.value === null
          ? 'not measured'
          : target.name.includes('fixtures')
            ? `${target.value}/${target.target} pass`
            : target.name.includes('matmul')
              ? `${(target.value * 100).toFixed(0)}%`
              : target.name.includes('weights')
                ? target.met
                  ? 'yes'
                  : 'no'
                : `${target.value.toFixed(2)}×`;
      lines.push(`  ${mark} ${target.name}: ${value}`);
    }
  }
  lines.push('', `(${fixed(report.seconds, 0)} s)`);
  return lines.join('\n');
}
