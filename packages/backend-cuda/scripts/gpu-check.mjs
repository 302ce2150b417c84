#!/usr/bin/env node
// One run on a GPU machine answers everything (see docs/backend-cuda.md): probe, the full conformance kit on
// the real GPU (with the matmuls through cuBLAS when it loads, and once more through kiln's own
// kernels), kiln's bf16/f32 matmul against cuBLAS at 4096³ and at the reference models' shapes,
// and `kiln bench`'s train step against PyTorch eager — every ratio from figures of the same run —
// written as one JSON report and printed as a table. Other checks append to report.sections.
//
//   scripts/gpu-check.sh [options]   (pnpm --filter @kiln/backend-cuda gpu-check): builds with nvcc
//                                    for this GPU, finds node and cuBLAS, then runs this file
//   node scripts/gpu-check.mjs --help
// Without a usable GPU it prints why and exits 0 with a 'skipped' report; a failing kit case
// exits 1; bad arguments exit 2. `--simulator` runs the same flow on the CPU simulator build.
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createReferenceBackend, runConformance } from '@kiln/testing';
import { CudaBackend, cudaBackendPlugin, loadCudaAddon } from '@kiln/backend-cuda';
import { parseArguments, UsageError, USAGE } from './gpu-check/arguments.mjs';
import { checkAttention, GPT2S_SHAPE, GPU_SHAPE } from './gpu-check-attention.mjs';
import { checkAttentionPrecision } from './gpu-check-attention-precision.mjs';
import { checkDeterminism } from './gpu-check/determinism.mjs';
import { kernelTimings } from './gpu-check/kernels.mjs';
import { kilnBench, locateCli, matmulComparison, pytorchBench } from './gpu-check/measure.mjs';
import { checkHfFixtures } from './gpu-check/hf-fixtures.mjs';
import { ncuSection, parseNcuReport, runNcu } from './gpu-check/ncu.mjs';
import { runSanitizers, sanitizerSection } from './gpu-check/sanitizer.mjs';
import { createReport, evaluateTargets, formatReport, matmulBaseline } from './gpu-check/report.mjs';
import {
  cliTarget,
  compareGraphed,
  compareTraining,
  determinismCheck,
  reproducibilitySection,
  resumeCheck,
} from './gpu-check/training.mjs';

const scriptDirectory = dirname(fileURLToPath(import.meta.url));
const log = (line) => console.log(line);

let options;
try {
  options = parseArguments(process.argv.slice(2));
} catch (error) {
  if (!(error instanceof UsageError)) throw error;
  console.error(`gpu-check: ${error.message}\n\n${USAGE}`);
  process.exit(2);
}
if (options.help) {
  console.log(USAGE);
  process.exit(0);
}

const started = performance.now();
const report = createReport(options, { node: process.version, platform: `${process.platform}-${process.arch}` });

function finish(exitCode) {
  evaluateTargets(report);
  report.seconds = (performance.now() - started) / 1000;
  writeFileSync(options.json, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`\n${formatReport(report)}\nreport: ${options.json}`);
  process.exit(exitCode);
}

// ---- the addon and the device ----
let addon;
try {
  const simulatorPath = fileURLToPath(new URL('../build/sim/Release/kiln_cuda_sim.node', import.meta.url));
  const loaded = options.simulator
    ? { source: 'simulator', location: simulatorPath, addon: createRequire(import.meta.url)(simulatorPath) }
    : loadCudaAddon();
  addon = loaded.addon;
  report.addon = { source: loaded.source, location: loaded.location, build: addon.buildInfo() };
} catch (error) {
  report.status = 'skipped';
  report.reason = `the CUDA addon could not be loaded: ${error.message.split('\n')[0]}`;
  finish(0);
}
report.probe = options.simulator
  ? { available: true, devices: [{ name: 'CPU simulator', computeCapability: 'simulated' }] }
  : cudaBackendPlugin.probe();
if (!report.probe.available) {
  report.status = 'skipped';
  report.reason = `no usable GPU: ${report.probe.reason}`;
  finish(0);
}

const cublasPath = options.cublasPath ?? process.env.KILN_CUBLAS_PATH;
const backendOptions = (matmul) => ({ matmul, ...(cublasPath ? { cublasPath } : {}) });
const auto = new CudaBackend(addon, backendOptions('auto'));
report.matmulPath = auto.matmulPath;
log(`matmul path: ${auto.matmulPath}`);

// ---- conformance ----
if (!options.skip.has('conformance')) {
  const sizes = options.quick ? 'quick' : 'full';
  const runs = [
    [
      `full kit (${auto.capabilities.matmul.path === 'kiln' ? 'kiln kernels' : auto.matmulPath.includes('per shape') ? "matmul through cuBLAS, f16/bf16 per shape on kiln's kernels" : 'matmul through cuBLAS'})`,
      auto,
      {},
    ],
  ];
  let kilnOnly;
  if (auto.capabilities.matmul.path === 'cublas') {
    kilnOnly = new CudaBackend(addon, backendOptions('kiln'));
    runs.push(["matmul cases on kiln's kernels", kilnOnly, { kernels: ['matmul'] }]);
  }
  for (const [name, backend, extra] of runs) {
    const start = performance.now();
    const result = await runConformance(backend, { sizes, ...extra });
    const failures = result.results
      .filter((item) => item.status === 'failed')
      .map(({ id, message }) => ({ id, message }));
    report.conformance.push({
      name,
      passed: result.passed,
      failed: result.failed,
      skipped: result.skipped,
      seconds: (performance.now() - start) / 1000,
      failures,
    });
    log(`conformance ${name}: ${result.passed} passed, ${result.failed} failed, ${result.skipped} skipped`);
  }
  kilnOnly?.dispose();
}

// ---- matmul: kiln vs cuBLAS ----
if (!options.skip.has('matmul')) {
  const kiln = new CudaBackend(addon, backendOptions('kiln'));
  let cublas;
  try {
    cublas = new CudaBackend(addon, backendOptions('cublas'));
  } catch (error) {
    report.matmulNote = `cuBLAS not measured: ${error.message.split('\n')[0]}`;
  }
  // f32 once more with TF32 allowed on both sides (kiln's mma.sync m16n8k8 kernel vs cuBLAS's TF32 tensor-core GEMMs).
  const tf32 = {
    kiln: new CudaBackend(addon, { ...backendOptions('kiln'), allowTf32: true }),
    cublas: cublas ? new CudaBackend(addon, { ...backendOptions('cublas'), allowTf32: true }) : undefined,
  };
  log('matmul (kiln vs cuBLAS):');
  report.matmul = await matmulComparison(kiln, cublas, options, log, tf32);
  if (options.matmulBaseline !== undefined)
    report.matmulBaseline = matmulBaseline(options.matmulBaseline, report.matmul);
  kiln.dispose();
  cublas?.dispose();
  tf32.kiln.dispose();
  tf32.cublas?.dispose();
}
// ---- memory-bound kernels ----
if (!options.skip.has('kernels')) {
  const rows = await kernelTimings(auto, options);
  report.sections.push({
    title: 'kernels (host time of back-to-back calls after one warm-up, per call; GB/s = bytes read + written / time)',
    rows: [['kernel', 'dtype', 'size', 'µs', 'GB/s'], ...rows],
  });
  log(`kernels: ${rows.length} timed`);
}
// ---- flash attention: determinism, speed and correctness against torch SDPA (scripts/gpu-check-attention.mjs) ----
if (!options.skip.has('attention')) {
  const torchScript = fileURLToPath(new URL('./attention-vs-torch.py', import.meta.url));
  // The FlashAttention benchmark shape, then gpt2s's (the simulator runs one tiny shape).
  report.attentionShapes = [];
  for (const shape of options.simulator ? [undefined] : [GPU_SHAPE, GPT2S_SHAPE]) {
    const attention = await checkAttention(auto, {
      simulator: options.simulator,
      shape,
      log,
      pythonCommand: [options.python, torchScript],
    });
    report.attention ??= attention;
    report.attentionShapes.push(attention);
    report.sections.push(attentionSection(attention));
  }
  // f32 gradients on short causal sequences against torch f32, both from torch's float64 (scripts/gpu-check-attention-precision.mjs).
  const precisionScript = fileURLToPath(new URL('./attention-precision-vs-torch.py', import.meta.url));
  const precision = await checkAttentionPrecision(auto, createReferenceBackend(), {
    log,
    pythonCommand: [options.python, precisionScript],
  });
  report.attentionPrecision = precision;
  const figures = (errors) => ['dq', 'dk', 'dv'].map((name) => `${name} ${errors[name].toExponential(2)}`).join(', ');
  report.sections.push({
    title: 'f32 attention gradients (B=1 H=2 T=5 D=64, causal): relative L2 error from float64',
    rows: [
      ['kiln', figures(precision.kiln)],
      ['torch f32', precision.torch ? figures(precision.torch) : `not run: ${precision.torchInfo.error}`],
      [
        precision.basis === 'absolute' ? 'verdict (torch f32 unusable)' : 'kiln / torch (limit 4×)',
        precision.basis === 'absolute'
          ? `${precision.note}${precision.passed ? ': ok' : ' FAILED'}`
          : precision.ratio === null
            ? '—'
            : `${precision.ratio.toFixed(2)}×${precision.passed ? '' : ' FAILED'}`,
      ],
    ],
  });
}
// ---- the Hugging Face reference fixtures in f32 (issue 14), cuBLAS and kiln matmuls (scripts/gpu-check/hf-fixtures.mjs) ----
if (!options.skip.has('hf-fixtures')) {
  const hf = await checkHfFixtures({ createBackend: (matmul) => new CudaBackend(addon, backendOptions(matmul)), log });
  report.hfFixtures = {
    fixtures: hf.fixtures ?? null,
    error: hf.error ?? null,
    failed: hf.failed,
    runs: hf.runs ?? [],
  };
  report.sections.push(hf.section);
}
auto.dispose();

// ---- compute-sanitizer (memcheck, racecheck, synccheck) over the matmul and attention kernels (scripts/gpu-check/sanitizer.mjs) ----
if (!options.skip.has('sanitizer') && !options.simulator) {
  const sanitizer = runSanitizers({ log, secondsPerTool: options.sanitizerSeconds });
  report.sanitizer = sanitizer;
  report.sections.push(sanitizerSection(sanitizer));
}

// ---- Nsight Compute over the sm_90a kernels: duration, throughput, busiest pipe, warp stall samples (scripts/gpu-check/ncu.mjs) ----
if (!options.skip.has('ncu') && !options.simulator) {
  const result = runNcu();
  const kernels = result.text === undefined ? [] : parseNcuReport(result.text);
  report.ncu = {
    kernels,
    skipped: result.skipped ?? null,
    status: result.status ?? null,
    seconds: result.seconds ?? null,
  };
  report.sections.push(ncuSection(result, kernels));
  log(`ncu: ${kernels.length} kernels profiled${result.skipped ? ` (${result.skipped})` : ''}`);
}

// ---- determinism (issue 15): the same short bf16 training run twice on fresh backends, weights' sha256 compared ----
if (!options.skip.has('determinism')) {
  const settings = options.simulator
    ? { preset: 'tiny', computeDType: 'bf16', steps: 1 }
    : { preset: 'medium', computeDType: 'bf16', steps: 3, microBatchSize: 4 };
  const determinism = await checkDeterminism(() => new CudaBackend(addon, backendOptions('auto')), settings);
  report.determinism = determinism;
  const rows = [['run', 'sha256 of the weights after the last step', 'losses']];
  determinism.hashes.forEach((hash, run) =>
    rows.push([`${run + 1}`, hash, determinism.losses[run].map((loss) => loss.toFixed(6)).join(' ')]),
  );
  const verdict = determinism.identical ? 'bit-identical' : 'DIFFERENT';
  report.sections.push({
    title: `determinism (${settings.preset}, ${settings.computeDType}, ${settings.steps} steps, 2 runs): ${verdict}`,
    rows,
  });
  log(`determinism: ${verdict} (${determinism.seconds.toFixed(1)} s)`);
  if (!determinism.identical) report.status = 'failed';
}

// ---- train step: kiln bench vs PyTorch eager ----
if (!options.skip.has('train')) {
  const settings = {
    model: options.simulator ? 'tiny' : options.model,
    precision: options.precision,
    steps: options.simulator ? 1 : options.steps,
    warmup: options.simulator ? 0 : options.warmup,
  };
  const environment = cublasPath ? { ...process.env, KILN_CUBLAS_PATH: cublasPath } : process.env;
  const kiln = options.simulator
    ? { skipped: 'the simulator is not a registered backend: kiln bench has no cuda device to run' }
    : kilnBench(locateCli(scriptDirectory), settings, environment);
  const pytorch =
    options.skip.has('pytorch') || options.simulator
      ? { skipped: 'skipped (--skip pytorch or --simulator)' }
      : pytorchBench(options.python, settings);
  const ratio = kiln.tokensPerSecond && pytorch.tokensPerSecond ? kiln.tokensPerSecond / pytorch.tokensPerSecond : null;
  report.trainStep = { model: settings.model, precision: settings.precision, kiln, pytorch, ratio };
  log(`train step: kiln ${JSON.stringify(kiln)}; PyTorch ${JSON.stringify(pytorch)}`);
}

// ---- what users run, through the CLI: gpt2s vs PyTorch eager and torch.compile, the profile, determinism, SIGKILL + resume ----
{
  const environment = cublasPath ? { ...process.env, KILN_CUBLAS_PATH: cublasPath } : process.env;
  const target = cliTarget({ simulator: options.simulator, environment });
  const cli = locateCli(scriptDirectory);
  if (!options.skip.has('gpt2s')) {
    // The simulator cannot run 85M parameters: the same flow on the tiny preset at batch 2.
    const settings = options.simulator
      ? { model: 'tiny', batches: [2], steps: 1, warmup: 1 }
      : { model: 'gpt2s', batches: options.gpt2sBatches, steps: options.gpt2sSteps, warmup: 3 };
    const pytorch = !options.skip.has('pytorch') && !options.simulator;
    const training = compareTraining({
      cli,
      python: options.python,
      target,
      ...settings,
      precision: 'bf16',
      pytorch,
      compile: !options.skip.has('compile'),
      ownMatmul: true,
      log,
    });
    report.gpt2s = {
      model: settings.model,
      runs: training.runs,
      profile: training.profile ?? null,
      ownMatmul: training.ownMatmul,
    };
    report.sections.push(...training.sections);
  }
  // Three SIGKILL-resumes, killed after the 1st, 2nd and 3rd checkpoint (the last step writes none to kill after).
  if (!options.skip.has('graph')) {
    // The default `kiln train` model and gpt2s at batch 8, eager vs graphed (the simulator: tiny at batch 2 only).
    const cases = options.simulator ? [{ model: 'tiny', batch: 2 }] : [{ model: 'tiny' }, { model: 'gpt2s', batch: 8 }];
    const graphed = compareGraphed({
      cli,
      target,
      cases,
      precision: 'bf16',
      steps: options.simulator ? 1 : 20,
      warmup: options.simulator ? 2 : 3,
      log,
    });
    report.cudaGraph = graphed.runs;
    report.sections.push(graphed.section);
  }
  const simulatorSteps = { determinism: 3, resume: 4, interval: 1 };
  const gpuSteps = { determinism: 20, resume: 40, interval: 10 };
  const steps = options.simulator ? simulatorSteps : gpuSteps;
  const determinism = options.skip.has('determinism')
    ? undefined
    : determinismCheck({ cli, target, simulator: options.simulator, steps: steps.determinism, log });
  const resume = options.skip.has('resume')
    ? undefined
    : await resumeCheck({
        cli,
        target,
        simulator: options.simulator,
        steps: steps.resume,
        interval: steps.interval,
        log,
      });
  if (determinism || resume) {
    report.reproducibility = { determinism: determinism ?? null, resume: resume ?? null };
    report.sections.push(reproducibilitySection(determinism, resume));
    log(`reproducibility: ${JSON.stringify(report.reproducibility)}`);
  }
}

if (
  report.conformance.some((run) => run.failed > 0) ||
  (report.attentionShapes ?? []).some((attention) => attention.failed > 0) ||
  report.attentionPrecision?.passed === false ||
  (report.hfFixtures?.failed ?? 0) > 0 ||
  report.matmul.some((row) => row.agrees === false) ||
  (report.sanitizer?.runs ?? []).some((run) => run.errors > 0)
)
  report.status = 'failed';
finish(report.status === 'failed' ? 1 : 0);

/** The report section of the attention check: determinism, kiln vs torch speed, errors against the f32 reference. */
function attentionSection(attention) {
  const { batch, headsQ, lengthQ, headDim, causal } = attention.shape;
  const rows = [['check', 'result']];
  rows.push([
    'forward kernel',
    `${attention.kernel === 'wgmma' ? 'wgmma + TMA (sm_90a)' : 'FlashAttention-2 (mma.sync)'}${attention.kernelNames?.forward ? `: ${attention.kernelNames.forward}` : ''}`,
  ]);
  if (attention.kernelNames?.backward) rows.push(['backward kernels', attention.kernelNames.backward]);
  rows.push(['backward run twice', attention.determinism?.identical ? 'bit-identical' : 'DIFFERENT']);
  if (attention.kiln)
    rows.push([
      'kiln forward / forward+backward',
      `${attention.kiln.forwardMs.toFixed(3)} / ${attention.kiln.forwardBackwardMs.toFixed(3)} ms`,
    ]);
  if (attention.speed) {
    rows.push([
      'speed vs torch SDPA (forward)',
      `${(attention.speed.forward * 100).toFixed(0)}% (target ${attention.speed.target * 100}%)`,
    ]);
    rows.push(['speed vs torch SDPA (forward+backward)', `${(attention.speed.forwardBackward * 100).toFixed(0)}%`]);
  } else {
    rows.push(['torch SDPA', `not run: ${attention.torch?.error ?? 'unknown'}`]);
  }
  for (const [name, result] of Object.entries(attention.correctness ?? {})) {
    rows.push([
      `${name} vs f32 reference`,
      `rel. L2 ${result.kiln.relativeL2.toExponential(2)}${result.torch ? ` (torch ${result.torch.relativeL2.toExponential(2)})` : ''} ${result.passed ? 'ok' : 'FAIL'}`,
    ]);
  }
  return {
    title: `flash attention (bf16 B=${batch} H=${headsQ} T=${lengthQ} D=${headDim}${causal ? ', causal' : ''})`,
    rows,
  };
}
