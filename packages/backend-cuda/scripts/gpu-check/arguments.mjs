// Command-line arguments of scripts/gpu-check.mjs, parsed without dependencies (the script runs
// on GPU machines from a bundle that carries no node_modules beyond kiln's runtime ones).

/** Parts of the check that --skip can leave out. */
export const PARTS = [
  'conformance',
  'matmul',
  'kernels',
  'attention',
  'hf-fixtures',
  'sanitizer',
  'ncu',
  'train',
  'pytorch',
  'gpt2s',
  'compile',
  'graph',
  'determinism',
  'resume',
];

/** Train-step models (the reference presets). */
export const MODELS = ['tiny', 'small', 'medium', 'gpt2s'];

export const USAGE = `usage: gpu-check [options]

Builds nothing itself (scripts/gpu-check.sh builds with nvcc first), then on the GPU: probes,
runs the full conformance kit, benchmarks kiln's matmul kernels against cuBLAS, checks the
Hugging Face reference fixtures in f32 (logits, loss, gradients, greedy tokens), runs
compute-sanitizer (memcheck, racecheck, synccheck) over the matmul and attention kernels,
profiles the sm_90a kernels with Nsight Compute (stall reasons per kernel), times a
\`kiln bench\` train step against PyTorch eager, trains gpt2s (GPT-2 small's widths, bf16) at
each --gpt2s-batches against PyTorch eager and torch.compile with the per-kernel profile, compares
the CUDA-graphed train step with the eager one (tokens/s and GPU busy of the default tiny run and
gpt2s batch 8), checks that \`kiln train\` repeats bit for bit and resumes after SIGKILL (three
times, killed at different steps) to the same weights, and writes one report (JSON + a table).

  --quick               quick kit sizes, fewer repeats, 2048³ instead of 4096³
  --simulator           smoke-test this script on the CPU simulator build (tiny sizes; timings mean nothing)
  --json <file>         where to write the JSON report (default: gpu-check-report.json)
  --skip <parts>        comma-separated: ${PARTS.join(', ')}
  --model <name>        train-step model: ${MODELS.join(', ')} (default medium)
  --precision <p>       train-step precision for kiln and PyTorch: bf16 (default) or f32
  --steps <n>           timed train steps (default 20)
  --gpt2s-batches <list> gpt2s batch sizes (default 8,32; torch.compile runs at the first only)
  --gpt2s-steps <n>     timed gpt2s steps per run (default 10, after 3 warm-up)
  --warmup <n>          untimed train steps first (default 5)
  --python <exe>        python with PyTorch for the baseline (default python3)
  --cublas-path <path>  cuBLAS directory or file (default: KILN_CUBLAS_PATH, then the loader's search)
  --sanitizer-seconds <n> time limit of each compute-sanitizer tool (default 60)
  --matmul-baseline <file> an earlier report (JSON) to compare this run's matmul rows with, shape by
                        shape (device TFLOP/s; gpu-check-staged's matmul-128 stage passes the matmul stage's)
  --help                this text`;

/** An error in the arguments (the script prints it with the usage and exits 2). */
export class UsageError extends Error {}

function integer(name, text) {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 0)
    throw new UsageError(`${name} must be a non-negative integer, got '${text}'`);
  return value;
}

/** The options of an argv (without node and the script path). Throws UsageError. */
export function parseArguments(argv) {
  const options = {
    quick: false,
    simulator: false,
    json: 'gpu-check-report.json',
    skip: new Set(),
    model: 'medium',
    precision: 'bf16',
    steps: 20,
    warmup: 5,
    python: 'python3',
    cublasPath: undefined,
    help: false,
    gpt2sBatches: [8, 32],
    gpt2sSteps: 10,
    sanitizerSeconds: 60,
    matmulBaseline: undefined,
  };
  for (let index = 0; index < argv.length; index++) {
    const argument = argv[index];
    const value = () => {
      const next = argv[++index];
      if (next === undefined || next.startsWith('--')) throw new UsageError(`${argument} needs a value`);
      return next;
    };
    switch (argument) {
      case '--quick':
        options.quick = true;
        break;
      case '--simulator':
        options.simulator = true;
        options.quick = true;
        break;
      case '--json':
        options.json = value();
        break;
      case '--skip':
        for (const part of value()
          .split(',')
          .map((item) => item.trim())
          .filter(Boolean)) {
          if (!PARTS.includes(part)) throw new UsageError(`--skip ${part}: unknown part (use ${PARTS.join(', ')})`);
          options.skip.add(part);
        }
        break;
      case '--model': {
        const model = value();
        if (!MODELS.includes(model)) throw new UsageError(`--model ${model}: use one of ${MODELS.join(', ')}`);
        options.model = model;
        break;
      }
      case '--precision': {
        const precision = value();
        if (precision !== 'bf16' && precision !== 'f32')
          throw new UsageError(`--precision ${precision}: use bf16 or f32`);
        options.precision = precision;
        break;
      }
      case '--steps':
        options.steps = Math.max(1, integer('--steps', value()));
        break;
      case '--warmup':
        options.warmup = integer('--warmup', value());
        break;
      case '--python':
        options.python = value();
        break;
      case '--gpt2s-batches': {
        const batches = value()
          .split(',')
          .map((item) => integer('--gpt2s-batches', item.trim()));
        if (batches.length === 0 || batches.some((batch) => batch < 1))
          throw new UsageError('--gpt2s-batches needs batch sizes ≥ 1, e.g. 8,32');
        options.gpt2sBatches = batches;
        break;
      }
      case '--gpt2s-steps':
        options.gpt2sSteps = Math.max(1, integer('--gpt2s-steps', value()));
        break;
      case '--cublas-path':
        options.cublasPath = value();
        break;
      case '--matmul-baseline':
        options.matmulBaseline = value();
        break;
      case '--sanitizer-seconds':
        options.sanitizerSeconds = Math.max(1, integer('--sanitizer-seconds', value()));
        break;
      case '--help':
      case '-h':
        options.help = true;
        break;
      default:
        throw new UsageError(`unknown argument '${argument}'`);
    }
  }
  return options;
}
