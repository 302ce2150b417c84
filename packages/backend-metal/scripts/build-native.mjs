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
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { embedShaders } from './embed-shaders.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
// The shared build steps: the workspace's @kiln/native-host, else the copy staged into this package when it was packed.
const shared = ['../../native-host/scripts/addon-build.mjs', '../native-host/scripts/addon-build.mjs']
  .map((path) => new URL(path, import.meta.url))
  .find((url) => existsSync(url));
if (!shared)
  throw new Error(`native-host/scripts/addon-build.mjs is missing from ${root}: reinstall @kiln/backend-metal`);
const { findCxx, onPath, simulatorSkipReason, startAddonBuild } = await import(shared.href);

async function gpuSim() {
  try {
    return await import('@kiln/gpu-sim');
  } catch {
    return undefined;
  }
}

const build = startAddonBuild({
  root,
  packageName: '@kiln/backend-metal',
  command: 'kiln-build-metal',
  flavorsVariable: 'KILN_METAL_BUILD',
  defaultFlavors: 'metal,sim',
});
const { buildRoot, cmake, log, report, wanted } = build;
const sanitize = build.flag('--sanitize');

if (wanted.has('metal')) {
  const skip = (reason) => build.skip('metal', 'kiln_metal.node', 'Metal addon', reason);
  if (process.platform !== 'darwin')
    skip(`the Metal addon builds on macOS only (this is ${process.platform}-${process.arch})`);
  else if (!cmake) skip('cmake was not found on PATH (brew install cmake)');
  else if (!onPath('clang++') && !onPath('c++'))
    skip("Apple's compiler was not found (install the Xcode Command Line Tools: xcode-select --install)");
  else {
    const generated = join(buildRoot, 'metal-generated');
    embedShaders(join(root, 'native', 'kernels'), generated);
    log('building the Metal addon (Objective-C++ host, .metal sources embedded) …');
    const result = build.build('metal', { KILN_METAL_GENERATED: generated });
    report.metal = result.ok
      ? { status: 'built', seconds: Math.round(result.seconds) }
      : { status: 'failed', reason: 'the Metal build failed (see the compiler output above)' };
    log(result.ok ? `Metal addon built in ${result.seconds.toFixed(1)} s` : 'Metal addon build FAILED');
  }
}

if (wanted.has('sim')) {
  const simulator = await gpuSim();
  // On a Mac the real GPU runs the kit; the simulator is for machines without Metal.
  const skipped =
    process.platform === 'darwin' && process.env.KILN_METAL_BUILD === undefined
      ? 'on macOS the Metal addon runs the kit on the GPU (KILN_METAL_BUILD=sim builds the simulator anyway)'
      : simulatorSkipReason(simulator !== undefined, cmake, findCxx());
  if (skipped) build.skip('sim', 'kiln_metal_sim.node', 'simulator addon', skipped);
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
    const result = build.build(flavor, definitions);
    report[flavor] = result.ok
      ? { status: 'built', seconds: Math.round(result.seconds), kernels: count }
      : { status: 'failed', reason: 'the simulator build failed (see above)' };
    log(result.ok ? `simulator addon built in ${result.seconds.toFixed(1)} s` : 'simulator addon build FAILED');
  }
}

// A flavor left out on purpose (KILN_METAL_BUILD) is recorded, so its tests say why they skip.
for (const flavor of ['metal', 'sim']) {
  if (!wanted.has(flavor) && !sanitize)
    report[flavor] = { status: 'skipped', reason: `not requested (KILN_METAL_BUILD=${[...wanted].join(',')})` };
}

build.finish();
