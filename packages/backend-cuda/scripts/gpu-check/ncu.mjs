// gpu-check's 'ncu' part: Nsight Compute over kiln's sm_90a kernels and the f32 SIMT matmul
// (scripts/gpu-check/ncu-target.mjs launches each once), with the speed-of-light, compute-workload, warp-state and source-counter
// sections; the GPU's clocks are left as they are (--clock-control none). Reported per kernel:
// duration, SM throughput, issue-slot use, the busiest pipeline and where the warps' time went
// (the sampled stall reasons, as shares of all samples) — what to look at before tuning a kernel.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const TARGET = fileURLToPath(new URL('./ncu-target.mjs', import.meta.url));
const SECTIONS = ['SpeedOfLight', 'ComputeWorkloadAnalysis', 'WarpStateStats', 'SourceCounters'];

/** ncu on PATH or in /usr/local/cuda/bin; undefined when absent. */
export function findNcu(environment = process.env) {
  for (const folder of [...(environment.PATH ?? '').split(':'), '/usr/local/cuda/bin']) {
    if (folder && existsSync(`${folder}/ncu`)) return `${folder}/ncu`;
  }
  return undefined;
}

/** Runs ncu over the target; { text, status, timedOut, seconds } or { skipped }. */
export function runNcu({ node = process.execPath, seconds = 90 } = {}) {
  const ncu = findNcu();
  if (ncu === undefined) return { skipped: 'ncu was not found (PATH, /usr/local/cuda/bin)' };
  const sections = SECTIONS.flatMap((section) => ['--section', section]);
  const start = performance.now();
  const child = spawnSync(
    ncu,
    [
      '--clock-control',
      'none',
      '--kernel-name',
      'regex:wgmma|matmul_f32_(async_)?kernel',
      '--launch-count',
      '14',
      ...sections,
      '--print-details',
      'all',
      node,
      TARGET,
    ],
    { encoding: 'utf8', timeout: seconds * 1000, killSignal: 'SIGKILL', maxBuffer: 64 << 20 },
  );
  return {
    text: `${child.stdout ?? ''}\n${child.stderr ?? ''}`,
    status: child.status,
    timedOut: child.error?.code === 'ETIMEDOUT' || child.signal === 'SIGKILL',
    seconds: (performance.now() - start) / 1000,
  };
}

const number = (text) => Number(text.replace(/,/g, ''));

/**
 * The kernels of ncu's text report: [{ kernel, grid, block, microseconds, smThroughput,
 * issueBusy, pipeline: { name, percent } | null, stalls: [{ reason, share }] (largest first) }].
 */
export function parseNcuReport(text) {
  const kernels = [];
  let current;
  for (const line of text.split('\n')) {
    const header =
      /^ {2}(?:void )?([^\s(][^(]*?)(?:<(.*)>)?\(.*\) \((\d+), (\d+), (\d+)\)x\((\d+), (\d+), (\d+)\), Context/.exec(
        line,
      );
    if (header) {
      const name = header[1].split('::').at(-1);
      current = {
        kernel:
          header[2] === undefined
            ? name
            : `${name}<${header[2].replace(/__nv_bfloat16/g, 'bf16').replace(/__half/g, 'f16')}>`,
        grid: [number(header[3]), number(header[4]), number(header[5])],
        block: [number(header[6]), number(header[7]), number(header[8])],
        microseconds: null,
        smThroughput: null,
        issueBusy: null,
        pipeline: null,
        samples: new Map(),
      };
      kernels.push(current);
      continue;
    }
    if (current === undefined) continue;
    const duration = /^\s+Duration\s+(us|ms|ns|s)\s+([\d,.]+)\s*$/.exec(line);
    if (duration && current.microseconds === null) {
      const scale = { ns: 1e-3, us: 1, ms: 1e3, s: 1e6 }[duration[1]];
      current.microseconds = number(duration[2]) * scale;
    }
    const throughput = /^\s+Compute \(SM\) Throughput\s+%\s+([\d,.]+)\s*$/.exec(line);
    if (throughput && current.smThroughput === null) current.smThroughput = number(throughput[1]);
    const issue = /^\s+Issue Slots Busy\s+%\s+([\d,.]+)\s*$/.exec(line);
    if (issue && current.issueBusy === null) current.issueBusy = number(issue[1]);
    const pipeline = /^\s*(?:INF|OPT|WRN)\s+(\w[\w ]*?) is the highest-utilized pipeline \(([\d.]+)%\)/.exec(line);
    if (pipeline && current.pipeline === null) current.pipeline = { name: pipeline[1], percent: number(pipeline[2]) };
    const stall = /smsp__pcsamp_warps_issue_stalled_([a-z_]+)\)?\s+\S+\s+([\d,]+)\s*$/.exec(line);
    if (stall && !stall[1].endsWith('_not_issued') && !current.samples.has(stall[1]))
      current.samples.set(stall[1], number(stall[2]));
  }
  return kernels.map(({ samples, ...kernel }) => {
    const total = [...samples.values()].reduce((a, b) => a + b, 0);
    const stalls = [...samples.entries()]
      .map(([reason, count]) => ({ reason, share: total > 0 ? count / total : 0 }))
      .sort((a, b) => b.share - a.share);
    return { ...kernel, stalls };
  });
}

/** The report section of the parsed kernels (or why there are none). */
export function ncuSection(result, kernels) {
  const rows = [['kernel', 'grid×block', 'µs', 'SM %', 'issue %', 'busiest pipe', 'warp samples (largest first)']];
  if (result.skipped) rows.push([result.skipped, '', '', '', '', '', '']);
  else if (kernels.length === 0)
    rows.push([
      `no kernel profiled (ncu exit ${result.status}${result.timedOut ? ', stopped at the time limit' : ''})`,
      '',
      '',
      '',
      '',
      '',
      '',
    ]);
  for (const kernel of kernels) {
    rows.push([
      kernel.kernel,
      `${kernel.grid[0]}×${kernel.block[0]}`,
      kernel.microseconds === null ? '—' : kernel.microseconds.toFixed(1),
      kernel.smThroughput === null ? '—' : kernel.smThroughput.toFixed(1),
      kernel.issueBusy === null ? '—' : kernel.issueBusy.toFixed(1),
      kernel.pipeline ? `${kernel.pipeline.name} ${kernel.pipeline.percent}%` : '—',
      kernel.stalls
        .slice(0, 4)
        .map(({ reason, share }) => `${reason} ${(share * 100).toFixed(0)}%`)
        .join(', '),
    ]);
  }
  return { title: "Nsight Compute over the sm_90a kernels (kiln's own; clocks as found)", rows };
}
