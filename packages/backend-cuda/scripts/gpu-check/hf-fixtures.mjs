// The gpu-check section 'hf-fixtures' (issue 14): the Hugging Face reference fixtures (tiny
// Llama-GQA, GPT-2 and GPTBigCode-MQA models saved by transformers, and a PEFT LoRA adapter, with
// their reference logits, loss, gradients and greedy tokens) run on the CUDA backend in f32 —
// matmuls through cuBLAS when it loads, then once more through kiln's own kernels (matmul: 'kiln')
// — with flash attention. Each run is measured by @kiln/trainer/testing's measureHfFixture (the
// same code the trainer's CPU test and the simulator tests use) and held to its bounds: logits
// within 1e-5 relative, the loss within 1e-6, every trainable parameter's gradient (LoRA only for
// the adapter) within 1e-4 relative, identical greedy tokens. The figures are reported as
// measured: a miss is a FAIL row, never a looser bound. A few seconds on an H100.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Where the fixtures are: fixtures/hf/ beside scripts/ in the gpu-check bundle (gpu-check-pack.mjs
 * copies them), else the trainer's test fixtures in the workspace. Undefined when neither exists.
 */
export function findHfFixtures() {
  const candidates = [
    fileURLToPath(new URL('../../fixtures/hf/', import.meta.url)),
    fileURLToPath(new URL('../../../trainer/test/fixtures/hf/', import.meta.url)),
  ];
  return candidates.find((directory) => existsSync(join(directory, 'llama-gqa', 'reference.safetensors')));
}

const exponent = (value) => (Number.isFinite(value) ? value.toExponential(2) : String(value));

/** The words for a backend's f32 matmul path, e.g. 'cuBLAS (TF32 off)' or 'kiln kernels'. */
function matmulLabel(backend) {
  const path = backend.capabilities.matmul;
  if (path.path !== 'cublas') return 'kiln kernels';
  return `cuBLAS (TF32 ${path.cublas.tf32 ? 'allowed' : 'off'})`;
}

/**
 * Runs every fixture on `createBackend('auto')` and, when that one goes through cuBLAS, on
 * `createBackend('kiln')`. Returns { fixtures, bounds, runs: [{ fixture, matmul, logitsRelative,
 * lossError, worstGradient, gradients, greedy, failures, passed, seconds }], failed, section } or
 * { error, section } when the fixtures or @kiln/trainer/testing cannot be found.
 */
export async function checkHfFixtures({ createBackend, log }) {
  const title =
    'Hugging Face reference fixtures (f32, flash attention; logits < 1e-5 rel, loss < 1e-6, gradients < 1e-4 rel, same 8 greedy tokens)';
  const fixtures = findHfFixtures();
  let testing;
  try {
    testing = await import('@kiln/trainer/testing');
  } catch (error) {
    const message = `@kiln/trainer/testing could not be loaded (build @kiln/trainer): ${error.message.split('\n')[0]}`;
    log(`hf fixtures: ${message}`);
    return {
      error: message,
      failed: 1,
      section: {
        title,
        rows: [
          ['check', 'result'],
          ['hf fixtures', message],
        ],
      },
    };
  }
  if (fixtures === undefined) {
    const message =
      'the fixtures were not found (neither fixtures/hf in the bundle nor packages/trainer/test/fixtures/hf)';
    log(`hf fixtures: ${message}`);
    return {
      error: message,
      failed: 1,
      section: {
        title,
        rows: [
          ['check', 'result'],
          ['hf fixtures', message],
        ],
      },
    };
  }
  const { HF_FIXTURE_BOUNDS, HF_MODEL_FIXTURES, hfFixtureFailures, measureHfFixture } = testing;
  log(`hf fixtures: ${HF_MODEL_FIXTURES.join(', ')} from ${fixtures}`);
  const runs = [];
  const auto = createBackend('auto');
  const backends = [auto];
  if (auto.capabilities.matmul.path === 'cublas') backends.push(createBackend('kiln'));
  for (const backend of backends) {
    const matmul = matmulLabel(backend);
    for (const fixture of HF_MODEL_FIXTURES) {
      const start = performance.now();
      let run;
      try {
        const measured = await measureHfFixture(fixtures, fixture, backend, { attention: 'flash' });
        const failures = hfFixtureFailures(measured);
        run = {
          fixture,
          matmul,
          logitsRelative: measured.logitsRelative,
          lossError: measured.lossError,
          worstGradient: Math.max(0, ...measured.gradientRelative.values()),
          gradients: measured.gradientRelative.size,
          greedy: { kiln: measured.greedy.kiln, reference: measured.greedy.reference },
          failures,
          passed: failures.length === 0,
        };
      } catch (error) {
        run = {
          fixture,
          matmul,
          error: error.message.split('\n')[0],
          failures: [error.message.split('\n')[0]],
          passed: false,
        };
      }
      run.seconds = (performance.now() - start) / 1000;
      runs.push(run);
      log(describeRun(run));
    }
  }
  for (const backend of backends) backend.dispose();
  const rows = [['fixture', 'matmul (f32)', 'logits rel', 'loss |Δ|', 'worst gradient rel', 'greedy', 'result', 's']];
  for (const run of runs) {
    if (run.error) {
      rows.push([run.fixture, run.matmul, '—', '—', '—', '—', `FAIL: ${run.error}`, run.seconds.toFixed(1)]);
      continue;
    }
    rows.push([
      run.fixture,
      run.matmul,
      exponent(run.logitsRelative),
      exponent(run.lossError),
      `${exponent(run.worstGradient)} (${run.gradients})`,
      greedyCell(run),
      run.passed ? 'pass' : `FAIL: ${run.failures.join('; ')}`,
      run.seconds.toFixed(1),
    ]);
  }
  const failed = runs.filter((run) => !run.passed).length;
  return { fixtures, bounds: HF_FIXTURE_BOUNDS, runs, failed, section: { title, rows } };
}

function greedyCell(run) {
  if (run.greedy.reference === null) return `${run.greedy.kiln.length} tokens (no reference)`;
  return run.greedy.kiln.join(',') === run.greedy.reference.join(',') ? 'identical' : 'DIFFERENT';
}

/** One printed line per run. */
function describeRun(run) {
  if (run.error) return `hf fixture ${run.fixture} (${run.matmul}): FAIL: ${run.error} (${run.seconds.toFixed(1)} s)`;
  return (
    `hf fixture ${run.fixture} (${run.matmul}): logits ${exponent(run.logitsRelative)} rel, loss ${exponent(run.lossError)}, ` +
    `worst of ${run.gradients} gradients ${exponent(run.worstGradient)} rel, greedy ${greedyCell(run)} — ` +
    `${run.passed ? 'pass' : `FAIL: ${run.failures.join('; ')}`} (${run.seconds.toFixed(1)} s)`
  );
}
