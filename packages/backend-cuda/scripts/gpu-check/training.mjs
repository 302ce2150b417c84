// The gpu-check sections that run what users run, through the `kiln` CLI (a child process):
//   - gpt2s: `kiln bench --model gpt2s` (GPT-2 small's widths, bf16) at each batch, beside PyTorch
//     eager and torch.compile(mode="default") (bench/pytorch_train_step.py) in the same run:
//     tokens/s and peak GPU memory of each, and the per-kernel profile (CUDA events) of a step;
//   - determinism: the same short `kiln train` twice; the final weights' sha256 must match;
//   - resume: `kiln train` uninterrupted vs three runs SIGKILLed at different steps (after their
//     1st, 2nd and 3rd checkpoint) and continued with --resume; every final sha256 must match.
// With --simulator the same flow runs on the CUDA simulator ('cuda-sim' plugin, tiny shapes).
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The plugin directory that registers the simulator as backend 'cuda-sim' (KILN_BACKENDS). */
export const SIMULATOR_PLUGIN = fileURLToPath(new URL('./simulator-plugin', import.meta.url));

/** Where and how the CLI runs: device name, environment, and (simulator) the plugin. */
export function cliTarget({ simulator, environment }) {
  if (!simulator) return { device: 'cuda', environment };
  return { device: 'cuda-sim', environment: { ...environment, KILN_BACKENDS: SIMULATOR_PLUGIN } };
}

function runCli(cli, args, environment) {
  const run = spawnSync(process.execPath, [cli, ...args], {
    cwd: dirname(dirname(cli)),
    env: { ...environment, NO_COLOR: '1' },
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  return { code: run.status, stdout: run.stdout ?? '', stderr: run.stderr ?? '' };
}

function lastLines(text, count = 3) {
  return text.trim().split('\n').slice(-count).join(' | ');
}

/** `kiln bench` of one model at one batch (optionally with --profile); { msPerStep, tokensPerSecond, peakMemoryBytes, profile? } or { error }. */
export function kilnBenchRun(cli, target, { model, batch, precision, steps, warmup, profile, cudaGraph }) {
  if (!cli) return { error: '@kiln/cli was not found (neither in the bundle nor in the workspace)' };
  const args = [
    'bench',
    '--device',
    target.device,
    '--model',
    model,
    '--precision',
    precision,
    '--steps',
    String(steps),
    '--warmup',
    String(warmup),
    '--no-kernels',
    '--no-generation',
    '--peers',
    'none',
    '--json',
  ];
  if (batch !== undefined) args.push('--batch', String(batch));
  if (profile) args.push('--profile');
  if (cudaGraph) args.push('--cuda-graph', cudaGraph);
  const run = runCli(cli, args, target.environment);
  if (run.code !== 0) return { error: `kiln bench exited ${run.code}: ${lastLines(run.stderr || run.stdout)}` };
  try {
    const report = JSON.parse(run.stdout);
    const result = report.results[0];
    if (!result) return { error: 'kiln bench reported no result' };
    return {
      msPerStep: result.msPerStep,
      tokensPerSecond: result.tokensPerSecond,
      peakMemoryBytes: result.peakMemoryBytes ?? null,
      batch: result.batchSize,
      precision: result.precision,
      matmul: result.matmul,
      stepMode: result.stepMode,
      profile: report.profiles?.[0],
    };
  } catch (error) {
    return { error: `kiln bench printed no JSON: ${error.message}` };
  }
}

/** bench/pytorch_train_step.py at one batch, eager or compiled; { msPerStep, tokensPerSecond, peakMemoryBytes } or { skipped }. */
export function pytorchRun(python, { model, batch, precision, steps, warmup, compile }) {
  const script = fileURLToPath(new URL('../../bench/pytorch_train_step.py', import.meta.url));
  const args = [
    script,
    '--model',
    model,
    '--precision',
    precision,
    '--steps',
    String(steps),
    '--warmup',
    String(warmup),
  ];
  if (batch !== undefined) args.push('--batch', String(batch));
  if (compile) args.push('--compile');
  const run = spawnSync(python, args, { encoding: 'utf8', maxBuffer: 16 << 20 });
  if (run.error) return { skipped: `${python} could not be run: ${run.error.message}` };
  if (run.status !== 0)
    return { skipped: `${python} ${script} exited ${run.status}: ${lastLines(run.stderr || '', 2)}` };
  try {
    const result = JSON.parse(run.stdout.trim().split('\n').pop());
    if (result.skipped) return { skipped: result.skipped };
    return {
      msPerStep: result.ms_per_step,
      tokensPerSecond: result.tokens_per_second,
      peakMemoryBytes: result.peak_memory_bytes ?? null,
      mode: result.mode,
    };
  } catch (error) {
    return { skipped: `the PyTorch baseline printed no JSON: ${error.message}` };
  }
}

const gigabytes = (bytes) =>
  bytes === null || bytes === undefined
    ? '—'
    : bytes >= 1e9
      ? `${(bytes / 1e9).toFixed(1)} GB`
      : `${(bytes / 1e6).toFixed(1)} MB`;
const rate = (result) =>
  result?.tokensPerSecond
    ? Math.round(result.tokensPerSecond).toLocaleString('en-US')
    : (result?.error ?? result?.skipped ?? '—');

/**
 * kiln vs PyTorch eager vs torch.compile at each batch of `model`, and the profile of the first
 * batch's kiln step. Returns { runs, profile, sections }.
 */
export function compareTraining({
  cli,
  python,
  target,
  model,
  batches,
  precision,
  steps,
  warmup,
  pytorch,
  compile,
  log,
  ownMatmul = false,
}) {
  const runs = [];
  const bench = { model, precision, steps, warmup };
  // kiln's own matmul kernels (cuBLAS made unloadable through KILN_CUBLAS_PATH) at the first batch: issue 19's step without cuBLAS.
  let own;
  if (ownMatmul) {
    const batch = batches[0];
    log(`train ${model} batch ${batch}: kiln with its own matmul kernels (no cuBLAS)…`);
    const ownTarget = {
      ...target,
      environment: { ...target.environment, KILN_CUBLAS_PATH: '/nonexistent/kiln-gpu-check-without-cublas' },
    };
    // Profiled too: its table names the kiln kernel each matmul ran on (wgmma, mma.sync, split-K, folded batch).
    const { profile: ownProfile, ...ownKiln } = kilnBenchRun(cli, ownTarget, { ...bench, batch, profile: true });
    own = { batch, kiln: ownKiln, profile: ownProfile };
    log(`  kiln own matmul ${JSON.stringify(own.kiln)}`);
  }
  for (const [index, batch] of batches.entries()) {
    log(`train ${model} batch ${batch}: kiln…`);
    const kiln = kilnBenchRun(cli, target, { ...bench, batch, profile: index === 0 });
    log(`  kiln ${JSON.stringify({ ...kiln, profile: undefined })}`);
    const eager = pytorch
      ? pytorchRun(python, { model, batch, precision, steps, warmup, compile: false })
      : { skipped: 'skipped (--skip pytorch)' };
    if (pytorch) log(`  PyTorch eager ${JSON.stringify(eager)}`);
    const compiled =
      pytorch && compile
        ? pytorchRun(python, { model, batch, precision, steps, warmup, compile: true })
        : { skipped: pytorch ? 'skipped (--skip compile)' : 'skipped (--skip pytorch)' };
    if (pytorch && compile) log(`  torch.compile ${JSON.stringify(compiled)}`);
    runs.push({ batch, kiln: { ...kiln, profile: undefined }, eager, compiled, profile: kiln.profile });
  }
  const ratio = (a, b) =>
    a?.tokensPerSecond && b?.tokensPerSecond ? `${(a.tokensPerSecond / b.tokensPerSecond).toFixed(2)}×` : '—';
  const rows = [
    [
      'batch',
      'kiln tok/s',
      'eager tok/s',
      'compile tok/s',
      'kiln/eager',
      'kiln/compile',
      'memory kiln / eager / compile',
    ],
  ];
  for (const run of runs) {
    rows.push([
      String(run.batch),
      rate(run.kiln),
      rate(run.eager),
      rate(run.compiled),
      ratio(run.kiln, run.eager),
      ratio(run.kiln, run.compiled),
      `${gigabytes(run.kiln.peakMemoryBytes)} / ${gigabytes(run.eager.peakMemoryBytes)} / ${gigabytes(run.compiled.peakMemoryBytes)}`,
    ]);
  }
  if (own) {
    const withCublas = runs.find((run) => run.batch === own.batch)?.kiln;
    own.ratio =
      own.kiln.tokensPerSecond && withCublas?.tokensPerSecond
        ? own.kiln.tokensPerSecond / withCublas.tokensPerSecond
        : null;
    rows.push([
      `${own.batch}, kiln's own matmul`,
      rate(own.kiln),
      '—',
      '—',
      own.ratio === null ? '—' : `${own.ratio.toFixed(2)}× kiln with cuBLAS`,
      own.kiln.matmul ?? '—',
      `${gigabytes(own.kiln.peakMemoryBytes)}`,
    ]);
  }
  const sections = [
    {
      title: `train step ${model} (${precision}; forward + backward + clip + AdamW; median of ${steps} steps after ${warmup}; memory = peak allocated)`,
      rows,
    },
  ];
  const profile = runs[0]?.profile;
  if (profile) sections.push(profileSection(profile, runs[0].batch));
  if (own?.profile) sections.push(profileSection(own.profile, own.batch, "on kiln's own matmul kernels"));
  const ownResult = own ? { batch: own.batch, kiln: own.kiln, ratio: own.ratio } : null;
  return { runs: runs.map(({ profile: _profile, ...run }) => run), profile, sections, ownMatmul: ownResult };
}

/**
 * The CUDA-graph comparison: each { model, batch } timed eager (no profile: its per-kernel events
 * slow an eager step), eager once more with the kernel profile (device time per step), and
 * graphed. GPU busy = profiled device time per step / step time, capped at 100%; the graph runs
 * the same kernels, so its busy share is estimated with the eager profile's device time (events
 * around every kernel can count launch gaps as kernel time: an upper bound).
 * Returns { runs: [{ model, batch, eager, kernelMsPerStep, graphed, speedup, busyEager, busyGraphed }], section }.
 */
export function compareGraphed({ cli, target, cases, precision, steps, warmup, log }) {
  const runs = [];
  for (const { model, batch } of cases) {
    const label = `${model}${batch === undefined ? '' : ` batch ${batch}`}`;
    // Timed without the profile (its per-kernel events slow the eager step), then once more with it for the device time per step.
    log(`cuda graph ${label}: eager…`);
    const eager = kilnBenchRun(cli, target, { model, batch, precision, steps, warmup, cudaGraph: 'off' });
    log(`cuda graph ${label}: eager with the kernel profile…`);
    const profiled = kilnBenchRun(cli, target, {
      model,
      batch,
      precision,
      steps,
      warmup,
      profile: true,
      cudaGraph: 'off',
    });
    log(`cuda graph ${label}: graphed…`);
    const graphed = kilnBenchRun(cli, target, {
      model,
      batch,
      precision,
      steps,
      warmup: Math.max(warmup, 2),
      cudaGraph: 'auto',
    });
    const kernelMs = profiled.profile?.kernelMsPerStep;
    const busy = (ms) => (kernelMs && ms ? Math.min(1, kernelMs / ms) : null);
    const run = {
      model,
      batch: eager.batch ?? batch,
      eager: { ...eager, profile: undefined },
      kernelMsPerStep: kernelMs ?? null,
      graphed,
      speedup:
        eager.tokensPerSecond && graphed.tokensPerSecond ? graphed.tokensPerSecond / eager.tokensPerSecond : null,
      busyEager: busy(eager.msPerStep),
      busyGraphed: busy(graphed.msPerStep),
    };
    log(`  ${JSON.stringify(run)}`);
    runs.push(run);
  }
  const percent = (value) => (value === null ? '—' : `${(100 * value).toFixed(0)}%`);
  const rows = [
    [
      'model',
      'eager tok/s',
      'graphed tok/s',
      'graphed/eager',
      'GPU busy eager',
      'GPU busy graphed (est.)',
      'graphed step',
    ],
  ];
  for (const run of runs) {
    rows.push([
      `${run.model} b${run.batch ?? '?'}`,
      rate(run.eager),
      rate(run.graphed),
      run.speedup === null ? '—' : `${run.speedup.toFixed(2)}×`,
      percent(run.busyEager),
      percent(run.busyGraphed),
      run.graphed.stepMode ?? run.graphed.error ?? '—',
    ]);
  }
  return {
    runs,
    section: {
      title: `CUDA graph vs eager (${precision}; eager timed without the profile; GPU busy = profiled device time per step / step time, an upper bound; graphed busy estimated from the eager profile)`,
      rows,
    },
  };
}

/** The report section of a kiln bench profile (the same columns as `kiln bench --profile`); `variant` names a non-default run. */
export function profileSection(profile, batch, variant) {
  const step = profile.msPerStep;
  const share = (ms) => `${((100 * ms) / step).toFixed(1)}%`;
  const shown = profile.rows.filter((row) => row.msPerStep >= step * 0.005);
  const rows = [['kernel', 'calls/step', 'ms/step', 'share', 'GB/s', 'TFLOP/s']];
  const figure = (value) =>
    value === null || value === undefined ? '—' : value >= 100 ? value.toFixed(0) : value.toFixed(2);
  for (const row of shown)
    rows.push([
      row.kernel,
      row.callsPerStep.toFixed(0),
      row.msPerStep.toFixed(3),
      share(row.msPerStep),
      figure(row.gigabytesPerSecond),
      figure(row.teraflopsPerSecond),
    ]);
  const idle = Math.max(0, step - profile.kernelMsPerStep);
  rows.push([
    profile.timing === 'device' ? '(GPU idle: host time)' : '(outside kernels)',
    '—',
    idle.toFixed(3),
    share(idle),
    '—',
    '—',
  ]);
  return {
    title: `where a ${profile.model} step (batch ${batch}${variant ? `, ${variant}` : ''}) goes: ${step.toFixed(2)} ms/step, GPU busy ${profile.kernelMsPerStep.toFixed(2)} ms (${share(profile.kernelMsPerStep)}) — ${profile.timing === 'device' ? 'device time per kernel (CUDA events)' : 'host time per call'}`,
    rows,
  };
}

/** A small training config for the determinism and resume runs (checkpoint every `interval` steps). */
function writeConfig(directory, { simulator, steps, interval, dataPath }) {
  const model = simulator
    ? ['model:', '  vocabSize: 256', '  contextLength: 16', '  dModel: 32', '  nLayer: 2', '  nHead: 2']
    : ['model:', '  preset: small'];
  const schedule = simulator ? ['  batchSize: 4', '  microBatchSize: 4'] : ['  batchSize: 16'];
  const lines = [
    'seed: 11',
    ...model,
    'device:',
    '  precision: bf16',
    'data:',
    `  path: ${JSON.stringify(dataPath)}`,
    '  validationFraction: 0.1',
    'schedule:',
    `  steps: ${steps}`,
    ...schedule,
    '  warmupSteps: 2',
    `  evalInterval: ${steps}`,
    '  evalBatches: 1',
    '  logInterval: 1',
    'checkpoint:',
    `  interval: ${interval}`,
    '  keepLast: 3',
    '',
  ];
  const file = join(directory, 'config.yaml');
  writeFileSync(file, lines.join('\n'));
  return file;
}

function trainingData(directory) {
  const path = join(directory, 'data.txt');
  let text = '';
  for (let line = 0; text.length < 400_000; line++)
    text += `line ${line}: the quick brown fox ${line % 7} jumps over the lazy dog ${(line * 31) % 97}.\n`;
  writeFileSync(path, text);
  return path;
}

/** sha256 of the final checkpoint's model.safetensors reported by a `kiln train --json` run. */
function finalWeightsHash(stdout) {
  const result = stdout
    .trim()
    .split('\n')
    .map((line) => {
      try {
        return JSON.parse(line);
      } catch {
        return {};
      }
    })
    .find((event) => event.type === 'result');
  if (!result?.checkpointPath) return undefined;
  return createHash('sha256')
    .update(readFileSync(join(result.checkpointPath, 'model.safetensors')))
    .digest('hex');
}

function train(cli, target, config, output, extra = []) {
  const run = runCli(
    cli,
    ['train', '--config', config, '--device', target.device, '--output', output, '--json', ...extra],
    target.environment,
  );
  return { ...run, hash: run.code === 0 ? finalWeightsHash(run.stdout) : undefined };
}

/** Two identical `kiln train` runs: { identical, hashes, steps } or { error }. */
export function determinismCheck({ cli, target, simulator, steps, log }) {
  if (!cli) return { error: '@kiln/cli was not found' };
  const directory = mkdtempSync(join(tmpdir(), 'kiln-gpu-check-determinism-'));
  try {
    const config = writeConfig(directory, { simulator, steps, interval: steps, dataPath: trainingData(directory) });
    const hashes = [];
    for (const name of ['first', 'second']) {
      log(`determinism: kiln train run ${name} (${steps} steps)…`);
      const run = train(cli, target, config, join(directory, name));
      if (run.hash === undefined)
        return { error: `kiln train (${name}) exited ${run.code}: ${lastLines(run.stderr || run.stdout)}` };
      hashes.push(run.hash);
    }
    return { identical: hashes[0] === hashes[1], hashes, steps };
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

/**
 * An uninterrupted run vs `kills` runs SIGKILLed at different steps (right after their 1st, 2nd, …
 * checkpoint) and resumed: { identical (all of them), resumes: [{ killedAfterStep, hash, identical }], hashes, steps } or { error }.
 */
export async function resumeCheck({ cli, target, simulator, steps, interval, kills = 3, log }) {
  if (!cli) return { error: '@kiln/cli was not found' };
  const directory = mkdtempSync(join(tmpdir(), 'kiln-gpu-check-resume-'));
  try {
    const config = writeConfig(directory, { simulator, steps, interval, dataPath: trainingData(directory) });
    log(`resume: uninterrupted kiln train (${steps} steps)…`);
    const straight = train(cli, target, config, join(directory, 'straight'));
    if (straight.hash === undefined)
      return {
        error: `the uninterrupted run exited ${straight.code}: ${lastLines(straight.stderr || straight.stdout)}`,
      };
    const resumes = [];
    for (let kill = 1; kill <= kills; kill++) {
      log(`resume ${kill}/${kills}: a run killed with SIGKILL after its checkpoint number ${kill}…`);
      const killedOutput = join(directory, `killed-${kill}`);
      const killedAfterStep = await killAfterCheckpoint(cli, target, config, killedOutput, kill, steps);
      if (killedAfterStep < 0)
        return {
          error: `run ${kill} finished before its checkpoint number ${kill} could be interrupted (${steps} steps, a checkpoint every ${interval})`,
        };
      log(`resume ${kill}/${kills}: killed after the checkpoint of step ${killedAfterStep}; continuing with --resume…`);
      const resumed = train(cli, target, config, killedOutput, ['--resume']);
      if (resumed.hash === undefined)
        return { error: `resumed run ${kill} exited ${resumed.code}: ${lastLines(resumed.stderr || resumed.stdout)}` };
      resumes.push({ killedAfterStep, hash: resumed.hash, identical: resumed.hash === straight.hash });
    }
    return {
      identical: resumes.every((resume) => resume.identical),
      resumes,
      hashes: [straight.hash, ...resumes.map((resume) => resume.hash)],
      steps,
    };
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

/** Starts `kiln train` and SIGKILLs it right after its checkpoint number `which` (before the last step); resolves the step killed after, or -1. */
function killAfterCheckpoint(cli, target, config, output, which, steps) {
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      [cli, 'train', '--config', config, '--device', target.device, '--output', output, '--json'],
      {
        cwd: dirname(dirname(cli)),
        env: { ...target.environment, NO_COLOR: '1' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let killedAt = -1;
    let seen = 0;
    let buffered = '';
    child.stdout.on('data', (chunk) => {
      buffered += chunk;
      const lines = buffered.split('\n');
      buffered = lines.pop();
      for (const line of lines) {
        let event;
        try {
          event = JSON.parse(line);
        } catch {
          continue;
        }
        if (killedAt < 0 && event.type === 'checkpoint' && event.step < steps && ++seen === which) {
          killedAt = event.step;
          child.kill('SIGKILL');
        }
      }
    });
    child.stderr.resume();
    child.on('close', () => resolve(killedAt));
  });
}

/** The report section of the determinism and resume checks. */
export function reproducibilitySection(determinism, resume) {
  const rows = [['check', 'result']];
  const verdict = (check, what) => {
    if (check === undefined) return 'not run';
    if (check.error) return `not run: ${check.error}`;
    return `${check.identical ? 'identical' : 'DIFFERENT'} weights (${what}; sha256 ${check.hashes.map((hash) => hash.slice(0, 12)).join(' vs ')})`;
  };
  rows.push(['same run twice', verdict(determinism, `${determinism?.steps ?? '?'} steps`)]);
  const resumed = resume?.resumes ?? [];
  const same = resumed.filter((run) => run.identical).length;
  rows.push([
    'SIGKILL + --resume vs uninterrupted',
    resume === undefined || resume.error
      ? verdict(resume, '')
      : `${same}/${resumed.length} identical (killed after steps ${resumed.map((run) => run.killedAfterStep).join(', ')} of ${resume.steps}; sha256 ${resumed.map((run) => run.hash.slice(0, 12)).join(', ')} vs ${resume.hashes[0].slice(0, 12)})`,
  ]);
  return { title: 'reproducibility of kiln train on this device (final model.safetensors)', rows };
}
