// The determinism check of gpu-check (issue 15): the same short training run twice on fresh
// backends — same seed, same batches, the trainer's own step (micro-batches, global-norm clip,
// multi-tensor AdamW, precast compute weights below f32) — then the sha256 of every parameter's
// bytes (in name order) after the last step. Identical hashes mean a bit-identical run.
//
//   import { checkDeterminism } from './gpu-check/determinism.mjs';
//   const result = await checkDeterminism(() => new CudaBackend(loadCudaAddon().addon), { preset: 'small', computeDType: 'bf16', steps: 3 });
//   // result: { identical, hashes: [hex, hex], initialHashes, losses: [[…], […]], settings, seconds }
//
//   node scripts/gpu-check/determinism.mjs [--simulator] [--preset tiny|small|medium] [--dtype f32|bf16|f16] [--steps N] [--runs N]
// prints one line per run and `deterministic: yes|no`, exit code 0 when identical, 1 when not.
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  createLlamaModel,
  createMoments,
  disposeMoments,
  DynamicLossScaler,
  learningRateAt,
  MODEL_PRESETS,
  runTrainStep,
  StepGraphRunner,
} from '@kiln/trainer';

const SEED = 20240917;
const OPTIMIZER = { lr: 1e-3, beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0.1, gradClip: 1 };

/** Token windows from a fixed xorshift32 stream: inputs and next-token targets of `rows` sequences. */
function windows(rows, context, vocab, step) {
  let state = (12345 + step * 7919) >>> 0 || 1;
  const next = () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) % vocab;
  };
  const inputs = new Int32Array(rows * context);
  const targets = new Int32Array(rows * context);
  for (let row = 0; row < rows; row++) {
    let token = next();
    for (let t = 0; t < context; t++) {
      inputs[row * context + t] = token;
      token = next();
      targets[row * context + t] = token;
    }
  }
  return { inputs, targets };
}

/** sha256 over every parameter's name and bytes, in name order. */
async function parameterHash(model) {
  const hash = createHash('sha256');
  for (const name of [...model.parameters.keys()].sort()) {
    const values = await model.parameters.get(name).data();
    hash.update(name);
    hash.update(new Uint8Array(values.buffer, values.byteOffset, values.byteLength));
  }
  return hash.digest('hex');
}

/** One run: `steps` trainer steps on a fresh backend; returns the parameters' sha256 and the losses. */
async function trainOnce(
  createBackend,
  { preset, computeDType, steps, microBatchSize, cudaGraph = 'off', schedule, gradClip },
) {
  const backend = await createBackend();
  const { model: modelConfig, batchSize } = MODEL_PRESETS[preset];
  const model = createLlamaModel(modelConfig, { backend, seed: SEED });
  const moments = createMoments(model.parameters);
  const scaler = new DynamicLossScaler({ enabled: computeDType === 'f16' });
  const notices = [];
  const graph = new StepGraphRunner(backend, cudaGraph, (message) => notices.push(message));
  const environment = {
    model,
    moments,
    backend,
    scaler,
    optimizer: { ...OPTIMIZER, ...(gradClip === undefined ? {} : { gradClip }) },
    contextLength: modelConfig.contextLength,
    notice: (message) => notices.push(message),
    forwardOptions: { attention: 'flash', checkpointActivations: false, computeDType },
    graph,
  };
  const counters = { microBatchSize: microBatchSize ?? batchSize, optimizerStep: 0 };
  const losses = [];
  const gradNorms = [];
  try {
    const initialHash = await parameterHash(model);
    for (let step = 0; step < steps; step++) {
      const { inputs, targets } = windows(batchSize, modelConfig.contextLength, modelConfig.vocabSize, step);
      const lr = schedule ? learningRateAt(step, { lr: OPTIMIZER.lr, totalSteps: steps, ...schedule }) : OPTIMIZER.lr;
      const outcome = await runTrainStep(environment, counters, { step: step + 1, batchSize, inputs, targets, lr });
      losses.push(outcome.loss);
      gradNorms.push(outcome.gradNorm);
    }
    return { hash: await parameterHash(model), initialHash, losses, gradNorms, graphPhase: graph.phase, notices };
  } finally {
    graph.release();
    disposeMoments(moments);
    for (const parameter of model.parameters.values()) parameter.dispose();
    backend.dispose?.();
  }
}

/**
 * Runs the same short training `runs` times (default 2) on backends from `createBackend` and
 * compares the final weights' sha256. Options: preset ('tiny'), computeDType ('f32'), steps (3),
 * microBatchSize (the preset's batch: no accumulation), runs (2).
 */
export async function checkDeterminism(createBackend, options = {}) {
  const settings = {
    preset: options.preset ?? 'tiny',
    computeDType: options.computeDType ?? 'f32',
    steps: options.steps ?? 3,
    microBatchSize: options.microBatchSize,
  };
  const started = performance.now();
  const results = [];
  for (let run = 0; run < (options.runs ?? 2); run++) results.push(await trainOnce(createBackend, settings));
  const hashes = results.map((result) => result.hash);
  return {
    identical: hashes.every((hash) => hash === hashes[0]),
    hashes,
    initialHashes: results.map((result) => result.initialHash),
    losses: results.map((result) => result.losses),
    settings,
    seconds: (performance.now() - started) / 1000,
  };
}

/**
 * The same short training with the step eager and with it captured in a CUDA graph (one eager
 * warm-up step, one captured, the rest replayed): the final weights must match bit for bit.
 * Options as checkDeterminism's, plus schedule ({ warmupSteps, minLrRatio }: the trainer's warmup +
 * cosine lr over `steps`, so every replay reads a new lr) and gradClip (the max norm; default 1).
 * Returns { identical, hashes: [eager, graphed], losses, gradNorms, graphPhase ('replay' when the graph ran to the end), notices, seconds }.
 */
export async function compareGraphedToEager(createBackend, options = {}) {
  const settings = {
    preset: options.preset ?? 'tiny',
    computeDType: options.computeDType ?? 'f32',
    steps: options.steps ?? 4,
    microBatchSize: options.microBatchSize,
    schedule: options.schedule,
    gradClip: options.gradClip,
  };
  const started = performance.now();
  const eager = await trainOnce(createBackend, { ...settings, cudaGraph: 'off' });
  const graphed = await trainOnce(createBackend, { ...settings, cudaGraph: 'auto' });
  return {
    identical: eager.hash === graphed.hash,
    hashes: [eager.hash, graphed.hash],
    initialHash: eager.initialHash,
    losses: [eager.losses, graphed.losses],
    gradNorms: [eager.gradNorms, graphed.gradNorms],
    graphPhase: graphed.graphPhase,
    notices: graphed.notices,
    seconds: (performance.now() - started) / 1000,
  };
}

function parseFlags(argv) {
  const flags = { simulator: false, preset: 'tiny', computeDType: 'f32', steps: 3, runs: 2 };
  for (let index = 0; index < argv.length; index++) {
    const flag = argv[index];
    const value = () => {
      const next = argv[++index];
      if (next === undefined) throw new Error(`${flag} needs a value`);
      return next;
    };
    if (flag === '--simulator') flags.simulator = true;
    else if (flag === '--preset') flags.preset = value();
    else if (flag === '--dtype') flags.computeDType = value();
    else if (flag === '--steps') flags.steps = Number(value());
    else if (flag === '--runs') flags.runs = Number(value());
    else throw new Error(`unknown option ${flag} (options: --simulator, --preset, --dtype, --steps, --runs)`);
  }
  if (!(flags.preset in MODEL_PRESETS))
    throw new Error(`--preset must be one of ${Object.keys(MODEL_PRESETS).join(', ')}, got ${flags.preset}`);
  if (!['f32', 'bf16', 'f16'].includes(flags.computeDType))
    throw new Error(`--dtype must be f32, bf16 or f16, got ${flags.computeDType}`);
  if (!Number.isInteger(flags.steps) || flags.steps < 1) throw new Error(`--steps must be a positive integer`);
  if (!Number.isInteger(flags.runs) || flags.runs < 2) throw new Error(`--runs must be an integer ≥ 2`);
  return flags;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  let flags;
  try {
    flags = parseFlags(process.argv.slice(2));
  } catch (error) {
    console.error(`determinism: ${error.message}`);
    process.exit(2);
  }
  const { CudaBackend, loadCudaAddon } = await import('@kiln/backend-cuda');
  const addon = flags.simulator
    ? createRequire(import.meta.url)(
        fileURLToPath(new URL('../../build/sim/Release/kiln_cuda_sim.node', import.meta.url)),
      )
    : loadCudaAddon().addon;
  const createBackend = () => new CudaBackend(addon);
  const result = await checkDeterminism(createBackend, flags);
  result.hashes.forEach((hash, run) =>
    console.log(
      `run ${run + 1}: sha256 ${hash}  losses ${result.losses[run].map((loss) => loss.toFixed(6)).join(' ')}`,
    ),
  );
  console.log(
    `deterministic: ${result.identical ? 'yes' : 'no'} (${flags.runs} runs of ${flags.steps} steps, ${flags.preset}, ${flags.computeDType}, ${result.seconds.toFixed(1)} s)`,
  );
  process.exit(result.identical ? 0 : 1);
}
