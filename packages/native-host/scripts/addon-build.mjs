// The build steps every GPU backend's `kiln-build-<name>` script shares (scripts/build-native.mjs of
// @kiln/backend-cuda and @kiln/backend-metal): finding cmake and a C++ compiler, one cmake-js build
// per flavor into build/<flavor>, a skipped flavor's reason (its stale binary deleted), and
// build/native-build.json, which the loader quotes in "not built". It ships inside each backend
// package: stage-native-host.mjs copies it to ./native-host/scripts/ when the backend is packed.
// A missing toolchain is not an error (the flavor is skipped); a failed compile is (exit 1).
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { delimiter, join } from 'node:path';

/** True when `path` is a file. */
export function isFile(path) {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** The first `name` on PATH, or undefined. */
export function onPath(name, path = process.env.PATH ?? '') {
  for (const directory of path.split(delimiter)) {
    if (directory && isFile(join(directory, name))) return join(directory, name);
  }
  return undefined;
}

/** A C++ compiler: $CXX, then c++, g++, clang++ on PATH. */
export function findCxx(environment = process.env) {
  if (environment.CXX)
    return isFile(environment.CXX) ? environment.CXX : onPath(environment.CXX, environment.PATH ?? '');
  for (const name of ['c++', 'g++', 'clang++']) {
    const found = onPath(name, environment.PATH ?? '');
    if (found) return found;
  }
  return undefined;
}

/**
 * Why the @kiln/gpu-sim simulator addon cannot be built here, or undefined when it can.
 * `simulatorInstalled`: whether the backend could import @kiln/gpu-sim (workspace only).
 */
export function simulatorSkipReason(simulatorInstalled, cmake, cxx) {
  // gpu-sim's fibers switch contexts in assembly for ELF x86-64/aarch64 and macOS aarch64 only.
  if (process.platform === 'win32') return "@kiln/gpu-sim's fiber context switch does not support Windows yet";
  if (!simulatorInstalled) return '@kiln/gpu-sim is not installed (the simulator is built in the kiln workspace only)';
  if (!cmake) return 'cmake was not found on PATH';
  if (!cxx) return 'no C++ compiler was found ($CXX, c++, g++, clang++)';
  return undefined;
}

/**
 * Starts the native build of the backend package at `root`: reads `--out <dir>` (default build/)
 * and the flavors in $`flavorsVariable` (default `defaultFlavors`, comma-separated), and exits 1
 * naming the install command when cmake-js or node-addon-api is missing. `packageName` prefixes
 * the log; `command` is the package's bin (`kiln-build-cuda`).
 */
/**
 * Names of `definitions` whose value in a CMakeCache.txt text (`NAME:TYPE=value` lines) differs
 * from the one asked for: cmake-js reuses a configured build directory as it is, so a changed
 * definition (a new KILN_CUDA_ARCHITECTURES, say) would otherwise be ignored.
 */
export function changedDefinitions(cacheText, definitions) {
  const cached = new Map();
  for (const line of cacheText.split('\n')) {
    const match = /^([A-Za-z_][A-Za-z0-9_]*):[A-Z_]+=(.*)$/.exec(line);
    if (match) cached.set(match[1], match[2]);
  }
  return Object.entries(definitions)
    .filter(([name, value]) => cached.has(name) && cached.get(name) !== String(value))
    .map(([name]) => name);
}

export function startAddonBuild({ root, packageName, command, flavorsVariable, defaultFlavors }) {
  const log = (line) => console.log(`[${packageName}] ${line}`);
  const flag = (name) => {
    const index = process.argv.indexOf(name);
    return index > 0 ? process.argv[index + 1] : undefined;
  };
  const buildRoot = flag('--out') ?? join(root, 'build');
  const wanted = new Set(
    (process.env[flavorsVariable] ?? defaultFlavors)
      .split(',')
      .map((name) => name.trim())
      .filter(Boolean),
  );
  const require = createRequire(join(root, 'package.json'));
  const resolveOptional = (specifier) => {
    try {
      return require.resolve(specifier);
    } catch {
      return undefined;
    }
  };
  const cmakeJs = resolveOptional('cmake-js/bin/cmake-js');
  if (!cmakeJs || !resolveOptional('node-addon-api')) {
    log('cmake-js and node-addon-api are needed to build the addon and are not installed.');
    log(
      `Install them next to this package, then rerun: npm install --no-save cmake-js@8.0.0 node-addon-api@8.9.2 && npx ${command}`,
    );
    process.exit(1);
  }
  /** What happened to each flavor: written to build/native-build.json by finish(). */
  const report = {};
  let failed = false;
  return {
    log,
    flag,
    buildRoot,
    wanted,
    report,
    /** cmake on PATH, or undefined. */
    cmake: onPath('cmake'),
    /** Runs cmake-js into build/<flavor> with these -D definitions: { ok, seconds }; a failure makes finish() exit 1. */
    build(flavor, definitions) {
      const directory = join(buildRoot, flavor);
      let cache = '';
      try {
        cache = readFileSync(join(directory, 'CMakeCache.txt'), 'utf8');
      } catch {
        cache = '';
      }
      const changed = changedDefinitions(cache, definitions);
      if (changed.length > 0) {
        log(`${changed.join(', ')} changed since build/${flavor} was configured: building it afresh`);
        rmSync(directory, { recursive: true, force: true });
      }
      const args = [cmakeJs, 'build', '--directory', root, '--out', join(buildRoot, flavor), '--log-level', 'warn'];
      for (const [name, value] of Object.entries(definitions)) args.push(`--CD${name}=${value}`);
      if (process.env.KILN_BUILD_JOBS) args.push('--parallel', process.env.KILN_BUILD_JOBS);
      const started = process.hrtime.bigint();
      const result = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit', env: process.env });
      const ok = result.status === 0;
      failed ||= !ok;
      return { ok, seconds: Number(process.hrtime.bigint() - started) / 1e9 };
    },
    /** Records `flavor` as skipped for `reason`, deletes its binary from an earlier build (it would no longer match these sources) and says so. */
    skip(flavor, binary, what, reason) {
      report[flavor] = { status: 'skipped', reason };
      rmSync(join(buildRoot, flavor, 'Release', binary), { force: true });
      log(`skipping the ${what}: ${reason}.`);
    },
    /** Merges the report into build/native-build.json and exits (1 when a build failed). */
    finish() {
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
    },
  };
}
