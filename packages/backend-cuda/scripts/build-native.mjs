#!/usr/bin/env node
// Builds @kiln/backend-cuda's native addons with cmake-js (no install scripts run this: the
// workspace build calls it, and users run `npx kiln-build-cuda` when no prebuilt binary fits).
//
//   build/cuda/Release/kiln_cuda.node      needs nvcc (CUDA 13 toolkit); skipped, with the reason, without it
//   build/sim/Release/kiln_cuda_sim.node   needs a C++20 compiler and @kiln/gpu-sim (workspace only)
//
// A missing toolchain is not an error (exit 0, the backend then reports "not built"); a compile
// error with the toolchain present is (exit 1). build/native-build.json records what happened.
// Environment: KILN_CUDA_BUILD=cuda,sim (which flavors; default both), KILN_CUDA_ARCHITECTURES
// (default 80-real;86-real;89-real;90), KILN_BUILD_JOBS (parallel compile jobs), CUDACXX,
// CUDA_HOME, CUDA_PATH, CXX. `--out <dir>` builds into another directory than build/ (tests).
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findCxx, findNvcc, onPath } from './find-toolchain.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const require = createRequire(import.meta.url);
const log = (line) => console.log(`[@kiln/backend-cuda] ${line}`);
const outFlag = process.argv.indexOf('--out');
const buildRoot = outFlag > 0 ? process.argv[outFlag + 1] : join(root, 'build');

function resolveOptional(specifier) {
  try {
    return require.resolve(specifier);
  } catch {
    return undefined;
  }
}

async function gpuSimInclude() {
  try {
    const module = await import('@kiln/gpu-sim');
    return module.includeDirectory;
  } catch {
    return undefined;
  }
}

function runCmakeJs(cmakeJs, flavor, definitions) {
  const args = [cmakeJs, 'build', '--directory', root, '--out', join(buildRoot, flavor), '--log-level', 'warn'];
  for (const [name, value] of Object.entries(definitions)) args.push(`--CD${name}=${value}`);
  if (process.env.KILN_BUILD_JOBS) args.push('--parallel', process.env.KILN_BUILD_JOBS);
  const started = process.hrtime.bigint();
  const result = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit', env: process.env });
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return { ok: result.status === 0, seconds };
}

const wanted = new Set(
  (process.env.KILN_CUDA_BUILD ?? 'cuda,sim')
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean),
);
const report = {};
let failed = false;

const cmakeJs = resolveOptional('cmake-js/bin/cmake-js');
const addonApi = resolveOptional('node-addon-api');
if (!cmakeJs || !addonApi) {
  log('cmake-js and node-addon-api are needed to build the addon and are not installed.');
  log(
    'Install them next to this package, then rerun: npm install --no-save cmake-js@8.0.0 node-addon-api@8.9.2 && npx kiln-build-cuda',
  );
  process.exit(1);
}
const cmake = onPath('cmake');

if (wanted.has('cuda')) {
  const nvcc = findNvcc();
  if (!cmake) {
    report.cuda = { status: 'skipped', reason: 'cmake was not found on PATH' };
  } else if (!nvcc.path) {
    report.cuda = {
      status: 'skipped',
      reason: `nvcc was not found (checked ${nvcc.checked.join(', ')})${nvcc.note}`,
    };
  } else {
    const architectures = process.env.KILN_CUDA_ARCHITECTURES ?? '80-real;86-real;89-real;90';
    log(`building the CUDA addon with ${nvcc.path} for ${architectures} …`);
    const result = runCmakeJs(cmakeJs, 'cuda', {
      CMAKE_CUDA_COMPILER: nvcc.path,
      KILN_CUDA_ARCHITECTURES: architectures,
    });
    report.cuda = result.ok
      ? { status: 'built', nvcc: nvcc.path, architectures, seconds: Math.round(result.seconds) }
      : { status: 'failed', reason: 'the CUDA build failed (see the compiler output above)', nvcc: nvcc.path };
    failed ||= !result.ok;
    log(result.ok ? `CUDA addon built in ${result.seconds.toFixed(1)} s` : 'CUDA addon build FAILED');
  }
  if (report.cuda.status === 'skipped') {
    // A binary left from an earlier build would no longer match these sources.
    rmSync(join(buildRoot, 'cuda', 'Release', 'kiln_cuda.node'), { force: true });
    log(`skipping the CUDA addon: ${report.cuda.reason}.`);
    log(
      'The package still installs and loads; the cuda backend reports "not built". Install the CUDA 13 toolkit and run `npx kiln-build-cuda`.',
    );
  }
}

if (wanted.has('sim')) {
  const include = await gpuSimInclude();
  const cxx = findCxx();
  if (!include)
    report.sim = {
      status: 'skipped',
      reason: '@kiln/gpu-sim is not installed (the simulator is built in the kiln workspace only)',
    };
  // gpu-sim's fibers switch contexts in assembly for ELF x86-64/aarch64 and macOS aarch64 only.
  else if (process.platform === 'win32')
    report.sim = { status: 'skipped', reason: "@kiln/gpu-sim's fiber context switch does not support Windows yet" };
  else if (!cmake) report.sim = { status: 'skipped', reason: 'cmake was not found on PATH' };
  else if (!cxx) report.sim = { status: 'skipped', reason: 'no C++ compiler was found ($CXX, c++, g++, clang++)' };
  else {
    log('building the simulator addon (CUDA kernels compiled as C++, run by @kiln/gpu-sim) …');
    const result = runCmakeJs(cmakeJs, 'sim', { KILN_CUDA_SIMULATOR: 'ON', KILN_GPU_SIM_INCLUDE: include });
    report.sim = result.ok
      ? { status: 'built', seconds: Math.round(result.seconds) }
      : { status: 'failed', reason: 'the simulator build failed (see above)' };
    failed ||= !result.ok;
    log(result.ok ? `simulator addon built in ${result.seconds.toFixed(1)} s` : 'simulator addon build FAILED');
  }
  if (report.sim.status === 'skipped') {
    rmSync(join(buildRoot, 'sim', 'Release', 'kiln_cuda_sim.node'), { force: true });
    log(`skipping the simulator addon: ${report.sim.reason}.`);
  }
}

const reportPath = join(buildRoot, 'native-build.json');
mkdirSync(buildRoot, { recursive: true });
let previous = {};
try {
  previous = JSON.parse(readFileSync(reportPath, 'utf8'));
} catch {
  previous = {};
}
writeFileSync(reportPath, `${JSON.stringify({ ...previous, ...report }, null, 2)}\n`);
process.exit(failed ? 1 : 0);
