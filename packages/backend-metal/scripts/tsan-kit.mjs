#!/usr/bin/env node
// Runs the conformance kit and the command-stream tests on a ThreadSanitizer build of the
// simulator addon and reports every data race (not part of CI: it takes minutes and needs
// libtsan). What it checks: the JS thread (encoding, uploads, downloads, the error record) against
// the simulated GPU's queue thread (executing command buffers, completion handlers), and the
// engine's worker threads running threadgroups in parallel (GPU_SIM_WORKERS=2). Fibers are
// announced to TSan by @kiln/gpu-sim, so stack switches are followed, not reported.
//
//   node scripts/tsan-kit.mjs [--skip-build] [--all-kernels | --kernels attention,attentionBackward] [--tests "test/conformance.test.ts test/stream.test.ts"]
//
// Exit status: 0 when the tests passed and TSan reported nothing; 1 otherwise.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const log = (line) => console.log(`[tsan-kit] ${line}`);
const option = (name, fallback) => {
  const index = process.argv.indexOf(name);
  return index > 0 ? process.argv[index + 1] : fallback;
};

const addon = join(root, 'build', 'sim-thread', 'Release', 'kiln_metal_sim.node');
if (!process.argv.includes('--skip-build') || !existsSync(addon)) {
  log('building the simulator addon with -fsanitize=thread …');
  const started = Date.now();
  const build = spawnSync(process.execPath, [join(root, 'scripts', 'build-native.mjs'), '--sanitize', 'thread'], {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, KILN_METAL_BUILD: 'sim' },
  });
  if (build.status !== 0) {
    log('the ThreadSanitizer build failed');
    process.exit(1);
  }
  log(`built in ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

const compiler = process.env.CXX || 'g++';
const runtime = spawnSync(compiler, ['-print-file-name=libtsan.so'], { encoding: 'utf8' }).stdout.trim();
if (!runtime || !existsSync(runtime)) {
  log(`libtsan.so was not found through ${compiler} -print-file-name (Debian: apt install libtsan2)`);
  process.exit(1);
}

const reports = join(root, 'build', 'tsan-reports');
rmSync(reports, { recursive: true, force: true });
mkdirSync(reports, { recursive: true });
const tests = option(
  '--tests',
  'test/conformance.test.ts test/stream.test.ts test/device-errors.test.ts test/memory-limit.test.ts test/matmul-paths.test.ts',
).split(/\s+/);
// The whole kit under TSan takes over 30 minutes on 2 cores: the primitives by default, the kernels
// named by --kernels (a comma-separated list, e.g. the fused ones in a second run), or every kernel
// with --all-kernels.
const PRIMITIVES = 'unary,binary,where,reduce,matmul,copy,gather,scatterAdd,cast,fill,random';
const kitKernels = process.argv.includes('--all-kernels') ? '' : option('--kernels', PRIMITIVES);
log(`running ${tests.join(', ')} with libtsan preloaded (${runtime}), 2 engine workers …`);
const started = Date.now();
// setarch -R: TSan's shadow memory needs the narrower address layout without randomization on recent kernels.
const run = spawnSync(
  'setarch',
  [
    process.arch === 'x64' ? 'x86_64' : 'aarch64',
    '-R',
    process.execPath,
    join(root, 'node_modules', 'vitest', 'vitest.mjs'),
    'run',
    '--reporter=dot',
    '--pool=forks',
    ...tests,
  ],
  {
    cwd: root,
    encoding: 'utf8',
    maxBuffer: 256 << 20,
    env: {
      ...process.env,
      LD_PRELOAD: runtime,
      KILN_METAL_SIMULATOR_ADDON: addon,
      GPU_SIM_WORKERS: '2',
      KILN_KIT_KERNELS: kitKernels,
      TSAN_OPTIONS: `log_path=${join(reports, 'report')} halt_on_error=0 exitcode=0 report_signal_unsafe=0 history_size=4`,
      KILN_TEST_REPORT: '',
    },
  },
);
const seconds = (Date.now() - started) / 1000;
const summary =
  /Tests\s+(.*)/.exec(run.stdout.replace(/\x1b\[[0-9;]*m/g, ''))?.[1]?.trim() ??
  'no test summary (see the output above)';
if (run.status !== 0) process.stdout.write(run.stdout.slice(-4000) + run.stderr.slice(-4000));

// Node and V8 themselves are not built with TSan, so their own synchronisation is invisible to it
// and it reports races inside them; a report counts as kiln's when one of its accesses has kiln's
// code (the addon, gpu_sim, kiln::metal) among its top frames.
const ours = [];
let outside = 0;
for (const file of readdirSync(reports)) {
  const text = readFileSync(join(reports, file), 'utf8');
  for (const block of text.split(/^==================$/m)) {
    if (!/WARNING: ThreadSanitizer:/.test(block)) continue;
    const accesses = block.split(/\n\s*\n/).filter((part) => /^\s*(Read|Write|Previous|Atomic)/m.test(part));
    const kiln = accesses.some((access) =>
      access
        .split('\n')
        .filter((line) => /^\s*#[0-5] /.test(line))
        .some((line) => /kiln|gpu_sim|\.metal[:.]/.test(line)),
    );
    if (kiln) ours.push(block.trim());
    else outside++;
  }
}
log(`tests: ${summary} in ${seconds.toFixed(0)} s`);
log(
  `ThreadSanitizer: ${ours.length} report(s) in kiln's code; ${outside} inside Node/V8 only (not instrumented there: ignored). Reports: ${reports}`,
);
for (const race of ours.slice(0, 5)) console.log(`\n${race.split('\n').slice(0, 30).join('\n')}`);
process.exit(run.status === 0 && ours.length === 0 ? 0 : 1);
