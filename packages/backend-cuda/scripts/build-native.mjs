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
// (default 80-real;86-real;89-real;90a-real;90-virtual), KILN_BUILD_JOBS (parallel compile jobs), CUDACXX,
// CUDA_HOME, CUDA_PATH, CXX. `--out <dir>` builds into another directory than build/ (tests).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
// The shared build steps: the workspace's @kiln/native-host, else the copy staged into this package when it was packed.
const shared = ['../../native-host/scripts/addon-build.mjs', '../native-host/scripts/addon-build.mjs']
  .map((path) => new URL(path, import.meta.url))
  .find((url) => existsSync(url));
if (!shared)
  throw new Error(`native-host/scripts/addon-build.mjs is missing from ${root}: reinstall @kiln/backend-cuda`);
const { findCxx, isFile, onPath, simulatorSkipReason, startAddonBuild } = await import(shared.href);

/**
 * nvcc: $CUDACXX, then $CUDA_HOME/bin/nvcc, $CUDA_PATH/bin/nvcc, then PATH.
 * Returns { path, from } or { path: undefined, checked, note } (note: a toolkit seen off PATH).
 */
function findNvcc(environment = process.env) {
  const checked = [];
  if (environment.CUDACXX) {
    checked.push(`CUDACXX=${environment.CUDACXX}`);
    if (isFile(environment.CUDACXX)) return { path: environment.CUDACXX, from: 'CUDACXX' };
  }
  for (const variable of ['CUDA_HOME', 'CUDA_PATH']) {
    const home = environment[variable];
    if (!home) continue;
    const candidate = join(home, 'bin', 'nvcc');
    checked.push(`${variable}=${home}`);
    if (isFile(candidate)) return { path: candidate, from: variable };
  }
  checked.push('PATH');
  const found = onPath('nvcc', environment.PATH ?? '');
  if (found) return { path: found, from: 'PATH' };
  const standard = '/usr/local/cuda/bin/nvcc';
  const note = existsSync(standard)
    ? ` (${standard} exists but is not on PATH: set CUDA_HOME=/usr/local/cuda to use it)`
    : '';
  return { path: undefined, checked, note };
}

async function gpuSimInclude() {
  try {
    const module = await import('@kiln/gpu-sim');
    return module.includeDirectory;
  } catch {
    return undefined;
  }
}

const build = startAddonBuild({
  root,
  packageName: '@kiln/backend-cuda',
  command: 'kiln-build-cuda',
  flavorsVariable: 'KILN_CUDA_BUILD',
  defaultFlavors: 'cuda,sim',
});
const { cmake, log, report } = build;

if (build.wanted.has('cuda')) {
  const nvcc = findNvcc();
  if (!cmake) build.skip('cuda', 'kiln_cuda.node', 'CUDA addon', 'cmake was not found on PATH');
  else if (!nvcc.path)
    build.skip(
      'cuda',
      'kiln_cuda.node',
      'CUDA addon',
      `nvcc was not found (checked ${nvcc.checked.join(', ')})${nvcc.note}`,
    );
  else {
    const architectures = process.env.KILN_CUDA_ARCHITECTURES ?? '80-real;86-real;89-real;90a-real;90-virtual';
    log(`building the CUDA addon with ${nvcc.path} for ${architectures} …`);
    const result = build.build('cuda', { CMAKE_CUDA_COMPILER: nvcc.path, KILN_CUDA_ARCHITECTURES: architectures });
    report.cuda = result.ok
      ? { status: 'built', nvcc: nvcc.path, architectures, seconds: Math.round(result.seconds) }
      : { status: 'failed', reason: 'the CUDA build failed (see the compiler output above)', nvcc: nvcc.path };
    log(result.ok ? `CUDA addon built in ${result.seconds.toFixed(1)} s` : 'CUDA addon build FAILED');
  }
  if (report.cuda.status === 'skipped') {
    log(
      'The package still installs and loads; the cuda backend reports "not built". Install the CUDA 13 toolkit and run `npx kiln-build-cuda`.',
    );
  }
}

if (build.wanted.has('sim')) {
  const include = await gpuSimInclude();
  const skipped = simulatorSkipReason(include !== undefined, cmake, findCxx());
  if (skipped) build.skip('sim', 'kiln_cuda_sim.node', 'simulator addon', skipped);
  else {
    log('building the simulator addon (CUDA kernels compiled as C++, run by @kiln/gpu-sim) …');
    const result = build.build('sim', { KILN_CUDA_SIMULATOR: 'ON', KILN_GPU_SIM_INCLUDE: include });
    report.sim = result.ok
      ? { status: 'built', seconds: Math.round(result.seconds) }
      : { status: 'failed', reason: 'the simulator build failed (see above)' };
    log(result.ok ? `simulator addon built in ${result.seconds.toFixed(1)} s` : 'simulator addon build FAILED');
  }
}

build.finish();
