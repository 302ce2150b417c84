#!/usr/bin/env node
// Makes a self-contained gpu-check bundle for a GPU machine that has no Node.js, no pnpm and no
// network: build/gpu-check/ with
//   node.xz                         this node binary, `xz -6` (about 24 MB)
//   node_modules/@kiln/{core,testing,backend-cuda,backend-cpu,trainer,cli}   package.json + dist (+ bin, the
//                                   addon sources, the staged native-host/, CMakeLists.txt and the built kiln_cuda.node)
//   node_modules/<dependency>       every runtime dependency of those, copied (no symlinks)
//   headers/{node-api-headers,node-addon-api}   to rebuild the addon there with nvcc + cmake
//   scripts/gpu-check.{sh,mjs}, scripts/gpu-check-staged.sh, scripts/gpu-check/, scripts/gpu-check-attention.mjs, scripts/attention-vs-torch.py, scripts/gpu-check-attention-precision.mjs,
//   scripts/attention-precision-vs-torch.py,
//   bench/pytorch_train_step.py, bench/llama_torch.py (the PyTorch reference model, from packages/cli/peers),
//   bench/wgmma-widths.mjs, bench/f32-kernels.mjs (the Hopper matmul's tile widths, the f32 SIMT kernels,
//   each timed against each other) and bench/interleaved-variants.mjs (what they share)
//   fixtures/hf/<model>/            the Hugging Face reference fixtures (packages/trainer/test/fixtures/hf)
// Run it there with `bash build/gpu-check/scripts/gpu-check.sh` (see docs/backend-cuda.md).
// Needs the workspace built (`pnpm turbo build`). `--out <dir>` writes elsewhere; `--no-node`
// leaves the node binary out.
import { spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const packageRoot = fileURLToPath(new URL('..', import.meta.url));
const packagesRoot = join(packageRoot, '..');
const outFlag = process.argv.indexOf('--out');
const out = outFlag > 0 ? process.argv[outFlag + 1] : join(packageRoot, 'build', 'gpu-check');
const log = (line) => console.log(`[gpu-check:pack] ${line}`);

/** kiln packages in the bundle and what each needs besides package.json and dist/. */
const KILN_PACKAGES = {
  core: [],
  testing: [],
  'backend-cpu': [],
  trainer: [],
  cli: ['bin'],
  'backend-cuda': ['native', 'CMakeLists.txt', 'scripts/build-native.mjs', 'build/cuda/Release/kiln_cuda.node'],
};

/** The directory of package `name` as Node would find it from `from` (realpath; undefined when absent). */
function findPackage(from, name) {
  for (let directory = from; ; directory = dirname(directory)) {
    const candidate = join(directory, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return realpathSync(candidate);
    if (dirname(directory) === directory) return undefined;
  }
}

function copy(source, target) {
  mkdirSync(dirname(target), { recursive: true });
  cpSync(source, target, {
    recursive: true,
    dereference: true,
    // Source maps are left out: they are most of dist/'s bytes, and the bundle must travel small.
    filter: (path) => !relative(source, path).split('/').includes('node_modules') && !path.endsWith('.map'),
  });
}

rmSync(out, { recursive: true, force: true });
mkdirSync(join(out, 'node_modules', '@kiln'), { recursive: true });

const copied = new Map();
const pending = [];
for (const [name, extras] of Object.entries(KILN_PACKAGES)) {
  const source = join(packagesRoot, name);
  if (!existsSync(join(source, 'dist'))) {
    // The CLI is only needed for the train-step benchmark (kiln bench); gpu-check reports its absence.
    if (name === 'cli') {
      log('note: packages/cli/dist is missing (run `pnpm turbo build`): the bundle cannot run `kiln bench`');
      continue;
    }
    log(`packages/${name}/dist is missing: run \`pnpm turbo build\` first`);
    process.exit(1);
  }
  const target = join(out, 'node_modules', '@kiln', name);
  for (const part of ['package.json', 'dist', ...extras]) {
    if (existsSync(join(source, part))) copy(join(source, part), join(target, part));
    else if (part.endsWith('.node'))
      log(`note: packages/${name}/${part} is not built (no nvcc here?): the GPU machine must build it`);
  }
  // The shared native host (its sources and the build steps kiln-build-cuda imports), as packing stages it.
  if (name === 'backend-cuda')
    spawnSync(process.execPath, [join(packagesRoot, 'native-host', 'scripts', 'stage-native-host.mjs'), target], {
      stdio: 'inherit',
    });
  copied.set(`@kiln/${name}`, source);
  const manifest = JSON.parse(readFileSync(join(source, 'package.json'), 'utf8'));
  for (const dependency of Object.keys({ ...manifest.dependencies, ...manifest.optionalDependencies }))
    pending.push([dependency, source]);
}
// Runtime dependencies, transitively, copied flat (the first version found wins).
while (pending.length > 0) {
  const [name, from] = pending.shift();
  if (copied.has(name)) continue;
  // The CLI's optional Metal backend never loads on a Linux GPU machine.
  if (name === '@kiln/backend-metal') continue;
  const directory = findPackage(from, name);
  if (directory === undefined) {
    log(`note: ${name} (needed by ${relative(packagesRoot, from)}) is not installed; skipped`);
    continue;
  }
  copy(directory, join(out, 'node_modules', name));
  copied.set(name, directory);
  const manifest = JSON.parse(readFileSync(join(directory, 'package.json'), 'utf8'));
  for (const dependency of Object.keys(manifest.dependencies ?? {})) pending.push([dependency, directory]);
}

// @kiln/testing loads vitest (an optional peer, for describeBackendConformance) only if it is installed;
// gpu-check calls runConformance, which needs none of it, so the bundle has no vitest.

for (const [name, target] of [
  ['node-api-headers', 'headers/node-api-headers'],
  ['node-addon-api', 'headers/node-addon-api'],
]) {
  // node-api-headers comes with cmake-js (which is how the normal build finds it).
  const cmakeJs = findPackage(packageRoot, 'cmake-js');
  const directory = findPackage(packageRoot, name) ?? (cmakeJs === undefined ? undefined : findPackage(cmakeJs, name));
  if (directory === undefined) {
    log(`${name} is not installed: run pnpm install`);
    process.exit(1);
  }
  copy(name === 'node-api-headers' ? join(directory, 'include') : directory, join(out, target));
}
for (const part of [
  'scripts/gpu-check.sh',
  'scripts/gpu-check-staged.sh',
  'scripts/gpu-check.mjs',
  'scripts/gpu-check',
  'scripts/gpu-check-attention.mjs',
  'scripts/attention-vs-torch.py',
  'scripts/gpu-check-attention-precision.mjs',
  'scripts/attention-precision-vs-torch.py',
  'bench/pytorch_train_step.py',
  'bench/wgmma-widths.mjs',
  'bench/f32-kernels.mjs',
  'bench/interleaved-variants.mjs',
]) {
  copy(join(packageRoot, part), join(out, part));
}
// The PyTorch reference model that bench/pytorch_train_step.py imports (it looks next to itself first).
copy(join(packagesRoot, 'cli', 'peers', 'llama_torch.py'), join(out, 'bench', 'llama_torch.py'));

// The Hugging Face reference fixtures for the 'hf-fixtures' section: every folder with a reference (not the tokenizer cases).
const hfFixtures = join(packagesRoot, 'trainer', 'test', 'fixtures', 'hf');
copy(join(hfFixtures, 'README.md'), join(out, 'fixtures', 'hf', 'README.md'));
for (const entry of readdirSync(hfFixtures, { withFileTypes: true })) {
  if (entry.isDirectory() && existsSync(join(hfFixtures, entry.name, 'reference.safetensors')))
    copy(join(hfFixtures, entry.name), join(out, 'fixtures', 'hf', entry.name));
}

if (!process.argv.includes('--no-node')) {
  const compressed = spawnSync('xz', ['-6', '-T0', '-c', process.execPath], { maxBuffer: 1 << 30 });
  if (compressed.status === 0) writeFileSync(join(out, 'node.xz'), compressed.stdout);
  else
    log(
      `xz failed (${compressed.error?.message ?? compressed.stderr}); the bundle has no node.xz: pass --node-xz on the GPU machine`,
    );
}

function size(path) {
  const stats = statSync(path);
  if (!stats.isDirectory()) return stats.size;
  return spawnSync('du', ['-sb', path], { encoding: 'utf8' }).stdout.split('\t')[0] * 1;
}
log(`wrote ${out} (${(size(out) / 2 ** 20).toFixed(1)} MiB; ${copied.size} packages)`);
log(
  `on the GPU machine: bash ${relative(process.cwd(), join(out, 'scripts', 'gpu-check.sh'))} [--quick] [--json report.json]`,
);
