// gpu-check's 'sanitizer' part: compute-sanitizer's memcheck, racecheck and synccheck over
// scripts/gpu-check/sanitizer-target.mjs (the Hopper-sized matmul and attention cases, then the
// kit's matmul and attention cases) in a child process each, with a time limit per tool. Each
// result says how many errors the tool reported (its ERROR SUMMARY, else the count of its error
// lines when it was stopped), the target's exit status and its last JSON line.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const TARGET = fileURLToPath(new URL('./sanitizer-target.mjs', import.meta.url));
export const SANITIZER_TOOLS = ['memcheck', 'racecheck', 'synccheck'];

/** compute-sanitizer on PATH or in the usual CUDA folders; undefined when absent. */
export function findComputeSanitizer(environment = process.env) {
  for (const folder of [
    ...(environment.PATH ?? '').split(':'),
    '/usr/local/cuda/bin',
    '/usr/local/cuda/compute-sanitizer',
  ]) {
    if (folder && existsSync(`${folder}/compute-sanitizer`)) return `${folder}/compute-sanitizer`;
  }
  return undefined;
}

/**
 * What one tool's output says: { errors, summary } — errors from "ERROR SUMMARY: N error(s)" or
 * racecheck's "RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)" (E), else (a run
 * stopped before its summary) the count of "=========" lines that open an error report.
 */
export function parseSanitizerOutput(text) {
  const summary = /ERROR SUMMARY: (\d+) error/.exec(text);
  if (summary) return { errors: Number(summary[1]), summary: true };
  const race = /RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) errors?, \d+ warnings?\)/.exec(text);
  if (race) return { errors: Number(race[1]), summary: true };
  const lines = text.split('\n').filter((line) => /^========= (Invalid|Error|Barrier error|Uninitialized)/.test(line));
  return { errors: lines.length, summary: false };
}

/** Runs each tool over the target; returns [{ tool, errors, summary, status, timedOut, seconds, target, firstErrors }]. */
export function runSanitizers({
  node = process.execPath,
  tools = SANITIZER_TOOLS,
  secondsPerTool = 60,
  log = console.log,
} = {}) {
  const sanitizer = findComputeSanitizer();
  if (sanitizer === undefined)
    return { skipped: 'compute-sanitizer was not found (PATH, /usr/local/cuda/bin)', runs: [] };
  const runs = [];
  for (const tool of tools) {
    const start = performance.now();
    const child = spawnSync(sanitizer, ['--tool', tool, '--print-limit', '20', node, TARGET], {
      encoding: 'utf8',
      timeout: secondsPerTool * 1000,
      killSignal: 'SIGKILL',
      maxBuffer: 64 << 20,
    });
    const text = `${child.stdout ?? ''}\n${child.stderr ?? ''}`;
    const parsed = parseSanitizerOutput(text);
    const jsonLine = text.split('\n').findLast((line) => line.startsWith('{"kit"'));
    const run = {
      tool,
      ...parsed,
      status: child.status,
      timedOut: child.error?.code === 'ETIMEDOUT' || child.signal === 'SIGKILL',
      seconds: (performance.now() - start) / 1000,
      target: jsonLine ? JSON.parse(jsonLine) : null,
      progress: text.split('\n').filter((line) => line.startsWith('sanitizer-target:')),
      firstErrors: text
        .split('\n')
        .filter((line) => line.startsWith('========='))
        .slice(0, 12),
    };
    runs.push(run);
    log(
      `sanitizer ${tool}: ${run.errors} errors${run.timedOut ? ' (stopped at the time limit)' : ''}, ${run.seconds.toFixed(0)} s`,
    );
  }
  return { runs };
}

/** The report section of runSanitizers' result. */
export function sanitizerSection(result) {
  const rows = [['tool', 'errors', 'target', 'seconds']];
  if (result.skipped) rows.push(['—', result.skipped, '', '']);
  for (const run of result.runs) {
    const target = run.target
      ? `kit ${run.target.kit.passed} passed, ${run.target.kit.failed} failed; Hopper launches ${JSON.stringify(run.target.hopper)}`
      : run.timedOut
        ? `stopped at the time limit after: ${run.progress.join('; ') || 'nothing'}`
        : `exit ${run.status}: ${run.progress.join('; ')}`;
    rows.push([run.tool, `${run.errors}${run.summary ? '' : ' (no summary)'}`, target, run.seconds.toFixed(0)]);
  }
  return {
    title: 'compute-sanitizer over the Hopper-sized and the kit’s matmul and attention cases (kiln kernels)',
    rows,
  };
}
