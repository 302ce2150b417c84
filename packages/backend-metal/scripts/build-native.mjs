#!/usr/bin/env node
// Builds @kiln/backend-metal's native addons with cmake-js (no install scripts run this: the
// workspace build calls it, and users on macOS run `npx kiln-build-metal` when no prebuilt binary
// fits).
//
//   build/metal/Release/kiln_metal.node    macOS only: Objective-C++ host, Metal + Foundation,
//                                          the .metal sources embedded (compiled once at load)
//   build/sim/Release/kiln_metal_sim.node  a C++20 compiler and @kiln/gpu-sim (workspace only):
//                                          the .metal kernels rewritten and compiled as C++
//
// A missing toolchain is not an error (exit 0, the backend then reports why); a compile error
// with the toolchain present is (exit 1). build/native-build.json records what happened.
// Environment: KILN_METAL_BUILD=metal,sim (which flavors; default both), KILN_BUILD_JOBS,
// CXX. `--out <dir>` builds into another directory than build/; `--sanitize thread` builds the
// simulator with ThreadSanitizer (scripts/tsan-kit.mjs).
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { embedShaders } from './embed-shaders.mjs';
import { findCxx, onPath } from './find-toolchain.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const require = createRequire(import.meta.url);
const log = (line) => console.log(`[@kiln/backend-metal] ${line}`);
const flag = (name) => {
  const index = process.argv.indexOf(name);
  return index > 0 ? process.argv[index + 1] : undefined;
};
const buildRoot = flag('--out') ?? join(root, 'build');
const sanitize = flag('--sanitize');

function resolveOptional(specifier) {
  try {
    return require.resolve(specifier);
  } catch {
    return undefined;
  }
}

async function gpuSim() {
  try {
    return await import('@kiln/gpu-sim');
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
  return { ok: result.status === 0, seconds: Number(process.hrtime.bigint() - started) / 1e9 };
}

const wanted = new Set(
  (process.env.KILN_METAL_BUILD ?? 'metal,sim')
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
    'Install them next to this package, then rerun: npm install --no-save cmake-js@8.0.0 node-addon-api@8.9.2 && npx kiln-build-metal',
  );
  process.exit(1);
}
const cmake = onPath('cmake');

if (wanted.has('metal')) {
  if (process.platform !== 'darwin') {
    report.metal = {
      status: 'skipped',
      reason: `the Metal addon builds on macOS only (this is ${process.platform}-${process.arch})`,
    };
  } else if (!cmake) {
    report.metal = { status: 'skipped', reason: 'cmake was not found on PATH (brew install cmake)' };
  } else if (!onPath('clang++') && !onPath('c++')) {
    report.metal = {
      status: 'skipped',
      reason: "Apple's compiler was not found (install the Xcode Command Line Tools: xcode-select --install)",
    };
  } else {
    const generated = join(buildRoot, 'metal-generated');
    embedShaders(join(root, 'native', 'kernels'), generated);
    log('building the Metal addon (Objective-C++ host, .metal sources embedded) …');
    const result = runCmakeJs(cmakeJs, 'metal', { KILN_METAL_GENERATED: generated });
    report.metal = result.ok
      ? { status: 'built', seconds: Math.round(result.seconds) }
      : { status: 'failed', reason: 'the Metal build failed (see the compiler output above)' };
    failed ||= !result.ok;
    log(result.ok ? `Metal addon built in ${result.seconds.toFixed(1)} s` : 'Metal addon build FAILED');
  }
  if (report.metal.status === 'skipped') {
    // A binary left from an earlier build would no longer match these sources.
    rmSync(join(buildRoot, 'metal', 'Release', 'kiln_metal.node'), { force: true });
    log(`skipping the Metal addon: ${report.metal.reason}.`);
  }
}

if (wanted.has('sim')) {
  const simulator = await gpuSim();
  const cxx = findCxx();
  if (process.platform === 'darwin' && process.env.KILN_METAL_BUILD === undefined) {
    // On a Mac the real GPU runs the kit; the simulator is for machines without Metal.
    report.sim = {
      status: 'skipped',
      reason: 'on macOS the Metal addon runs the kit on the GPU (KILN_METAL_BUILD=sim builds the simulator anyway)',
    };
  } else if (process.platform === 'win32') {
    report.sim = { status: 'skipped', reason: "@kiln/gpu-sim's fiber context switch does not support Windows yet" };
  } else if (!simulator)
    report.sim = {
      status: 'skipped',
      reason: '@kiln/gpu-sim is not installed (the simulator is built in the kiln workspace only)',
    };
  else if (!cmake) report.sim = { status: 'skipped', reason: 'cmake was not found on PATH' };
  else if (!cxx) report.sim = { status: 'skipped', reason: 'no C++ compiler was found ($CXX, c++, g++, clang++)' };
  else {
    const flavor = sanitize ? `sim-${sanitize}` : 'sim';
    const generated = join(buildRoot, `${flavor}-kernels`);
    // The rewrite step: copies of the .metal files that g++ can compile (sources stay untouched).
    const { kernels } = await simulator.rewriteMetalDirectory(join(root, 'native', 'kernels'), generated);
    const count = Object.values(kernels).reduce((total, names) => total + names.length, 0);
    log(
      `building the simulator addon (${count} kernels from ${Object.keys(kernels).length} .metal files, compiled as C++ by @kiln/gpu-sim) …`,
    );
    const definitions = {
      KILN_METAL_SIMULATOR: 'ON',
      KILN_GPU_SIM_INCLUDE: simulator.includeDirectory,
      KILN_METAL_GENERATED: generated,
    };
    if (sanitize) definitions.KILN_METAL_SANITIZE = sanitize;
    const result = runCmakeJs(cmakeJs, flavor, definitions);
    report[flavor] = result.ok
      ? { status: 'built', seconds: Math.round(result.seconds), kernels: count }
      : { status: 'failed', reason: 'the simulator build failed (see above)' };
    failed ||= !result.ok;
    log(result.ok ? `simulator addon built in ${result.seconds.toFixed(1)} s` : 'simulator addon build FAILED');
  }
  if (report.sim?.status === 'skipped') {
    rmSync(join(buildRoot, 'sim', 'Release', 'kiln_metal_sim.node'), { force: true });
    log(`skipping the simulator addon: ${report.sim.reason}.`);
  }
}

// A flavor left out on purpose (KILN_METAL_BUILD) is recorded, so its tests say why they skip.
for (const flavor of ['metal', 'sim']) {
  if (!wanted.has(flavor) && !sanitize)
    report[flavor] = { status: 'skipped', reason: `not requested (KILN_METAL_BUILD=${[...wanted].join(',')})` };
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
