// `kiln train --profile`: a few steps of the real run timed kernel by kernel. On the CUDA backend
// (here: the CUDA simulator as the 'cuda-sim' plugin of packages/backend-cuda, through
// KILN_BACKENDS) the times come from events around every launch, with GB/s and TFLOP/s where
// the launcher knows its bytes and flops; on the CPU from the host clock around every call. Both
// print the same table (formatKernelProfile), and --json emits it as a 'profile' event.
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { formatKernelProfile, timingProfile } from '../src/bench/kernel-profile.js';
import { requireBuild, runKiln, writeTinyConfig } from './kiln-process.js';

beforeAll(requireBuild);

const SIMULATOR_PLUGIN = fileURLToPath(
  new URL('../../backend-cuda/scripts/gpu-check/simulator-plugin', import.meta.url),
);
const SIMULATOR_ADDON = fileURLToPath(
  new URL('../../backend-cuda/build/sim/Release/kiln_cuda_sim.node', import.meta.url),
);
const simulatorMissing = existsSync(SIMULATOR_ADDON)
  ? undefined
  : `the CUDA simulator addon is not built (${SIMULATOR_ADDON})`;

interface ProfileEvent {
  type: 'profile';
  model: string | null;
  backend: string;
  timing: 'device' | 'host';
  steps: number;
  msPerStep: number;
  kernelMsPerStep: number;
  rows: Array<{
    kernel: string;
    callsPerStep: number;
    msPerStep: number;
    gigabytesPerSecond: number | null;
    teraflopsPerSecond: number | null;
  }>;
}

function tinyRun(name: string): { config: string; output: string } {
  const directory = mkdtempSync(join(tmpdir(), `kiln-profile-${name}-`));
  const dataPath = join(directory, 'data.txt');
  writeFileSync(dataPath, 'the quick brown fox jumps over the lazy dog. '.repeat(80));
  const output = join(directory, 'run');
  return {
    config: writeTinyConfig(directory, {
      dataPath,
      outputDir: output,
      steps: 4,
      interval: 100,
      dModel: 32,
      contextLength: 16,
    }),
    output,
  };
}

function profileOf(stdout: string): ProfileEvent {
  const events = stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { type: string });
  const profile = events.find((event) => event.type === 'profile');
  expect(profile, stdout).toBeDefined();
  return profile as ProfileEvent;
}

describe('kiln train --profile', () => {
  it.skipIf(simulatorMissing !== undefined)(
    `times every kernel on the device with events (CUDA simulator)${simulatorMissing === undefined ? '' : ` — skipped: ${simulatorMissing}`}`,
    async () => {
      const { config } = tinyRun('cuda');
      const run = await runKiln(['train', '--config', config, '--device', 'cuda-sim', '--profile', '--json'], {
        env: { KILN_BACKENDS: SIMULATOR_PLUGIN },
      });
      expect(run.code, run.stderr).toBe(0);
      const profile = profileOf(run.stdout);
      expect(profile).toMatchObject({ model: null, backend: 'cuda-sim', timing: 'device', steps: 2 });
      const kernels = profile.rows.map((row) => row.kernel);
      expect(
        kernels.some((kernel) => kernel.startsWith('matmul bf16')),
        kernels.join(', '),
      ).toBe(true);
      expect(
        kernels.some((kernel) => kernel.startsWith('attention bf16')),
        kernels.join(', '),
      ).toBe(true);
      for (const kernel of kernels) expect(kernel).not.toMatch(/\[/);
      const matmul = profile.rows.find((row) => row.kernel.startsWith('matmul'))!;
      expect(matmul.teraflopsPerSecond).toBeGreaterThan(0);
      const adamw = profile.rows.find((row) => row.kernel.startsWith('adamw'));
      expect(adamw?.gigabytesPerSecond).toBeGreaterThan(0);
      // At least once per layer (2) and micro-batch (2), in whole launches per step.
      const attentionCalls = profile.rows.find((row) => row.kernel.startsWith('attention bf16'))!.callsPerStep;
      expect(Number.isInteger(attentionCalls) && attentionCalls >= 4, String(attentionCalls)).toBe(true);
      expect(profile.kernelMsPerStep).toBeGreaterThan(0);
      expect(profile.kernelMsPerStep).toBeLessThanOrEqual(profile.msPerStep);
    },
    240_000,
  );

  it('times every kernel call with the host clock on the CPU and prints the same table', async () => {
    const { config } = tinyRun('cpu');
    const run = await runKiln(['train', '--config', config, '--device', 'cpu', '--profile']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(
      /^where a step of this run goes on the cpu backend \(host time of every kernel call\): \d+\.\d\d ms\/step over 2 steps; /m,
    );
    expect(run.stdout).toMatch(/^kernel +calls\/step +ms\/step +share +GB\/s +TFLOP\/s$/m);
    // Kernel rows (which ones pass the 0.5% cut depends on the machine's load): name, calls, ms, share, no rates on the host.
    expect(run.stdout).toMatch(/^[a-z][\w ×·ᵀ[\]]* +\d+ +\d+\.\d{3} +\d+\.\d% +— +—$/m);
    expect(run.stdout).toMatch(/^\(outside kernels\) +— +\d/m);
  }, 120_000);

  it('says so when the run is too short to profile', async () => {
    const { config } = tinyRun('short');
    const run = await runKiln(['train', '--config', config, '--device', 'cpu', '--steps', '2', '--profile']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('no profile: the run had fewer than 3 steps (profiling starts after 2)');
  }, 120_000);
});

describe('formatKernelProfile', () => {
  it('prints device rows with their rates, folds the small ones, and splits the step into GPU busy and idle', () => {
    const profile = timingProfile(
      [
        {
          name: 'matmul bf16 batch=1 m=8192 n=768 k=768 transB (cuBLAS)',
          calls: 8,
          milliseconds: 6,
          bytes: 0,
          flops: 8 * 2 * 8192 * 768 * 768,
        },
        { name: 'binary add bf16', calls: 20, milliseconds: 2, bytes: 20 * 3 * 2 * 8192 * 768, flops: 0 },
        { name: 'fill f32', calls: 2, milliseconds: 0.01, bytes: 0, flops: 0 },
      ],
      { model: 'gpt2s', backend: 'cuda', timing: 'device', threads: null, steps: 2, wallMs: 20 },
    );
    expect(profile.msPerStep).toBe(10);
    expect(profile.kernelMsPerStep).toBeCloseTo(4.005, 9);
    const text = formatKernelProfile(profile);
    const lines = text.split('\n');
    expect(lines[0]).toBe(
      'where a gpt2s train step goes on cuda (device time of every kernel, CUDA events): 10.00 ms/step over 2 steps; GPU busy 4.00 ms (40.0%), idle waiting for the host 6.00 ms:',
    );
    // 8 launches of 2·8192·768·768 flops in 6 ms: 12.88 TFLOP/s; 20 adds of 3 bf16 tensors in 2 ms: 377 GB/s.
    expect(lines[3]).toMatch(
      /^matmul bf16 batch=1 m=8192 n=768 k=768 transB \(cuBLAS\) +4 +3\.000 +30\.0% +— +12\.88$/,
    );
    expect(lines[4]).toMatch(/^binary add bf16 +10 +1\.000 +10\.0% +377 +—$/);
    expect(lines[5]).toMatch(/^\(1 more kernels, each < 0\.5%\) +1 +0\.005 +0\.1% +— +—$/);
    expect(lines[6]).toMatch(/^\(GPU idle: host time\) +— +5\.995 +60\.0% +— +—$/);
  });
});
