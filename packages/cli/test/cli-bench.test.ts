import { beforeAll, describe, expect, it } from 'vitest';
import { requireBuild, runKiln } from './kiln-process.js';

beforeAll(requireBuild);

interface BenchJson {
  results: Array<{ model: string; backend: string; threads: number | null; msPerStep: number; tokensPerSecond: number; speedupOverCpu: number | null; ratios: { pytorch1Thread: number | null; tfjsWasm: number | null } }>;
  peers: Array<{ peer: string; model: string; threads: number; tokensPerSecond: number }>;
  missingPeers: Array<{ peer: string; reason: string; install: string }>;
  kernels: Array<{ kernel: string; ms: number; gflops: number | null }>;
  profiles: Array<{ model: string; msPerStep: number; kernelMsPerStep: number; rows: Array<{ kernel: string; callsPerStep: number; msPerStep: number }> }>;
  generation: Array<{
    model: string; backend: string; contextLength: number; tokens: number; runs: number; ratio: number;
    short: { promptLength: number; msPerToken: number; tokensPerSecond: number };
    full: { promptLength: number; msPerToken: number; tokensPerSecond: number };
  }>;
}

describe('kiln bench', () => {
  it('measures the tiny reference model on the CPU at each thread count, with kernel timings and no peer', async () => {
    const run = await runKiln(['bench', '--device', 'cpu', '--model', 'tiny', '--steps', '2', '--warmup', '1', '--cpu-threads', '1,2', '--peers', 'none', '--profile', '--json']);
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as BenchJson;
    expect(report.results.map((row) => [row.model, row.backend, row.threads])).toEqual([['tiny', 'cpu', 1], ['tiny', 'cpu', 2]]);
    const [one, two] = report.results;
    expect(one.speedupOverCpu).toBe(1);
    expect(two.speedupOverCpu).toBeCloseTo(two.tokensPerSecond / one.tokensPerSecond, 9);
    expect(one.tokensPerSecond).toBeCloseTo((8 * 64) / (one.msPerStep / 1000), 6);
    expect(one.ratios).toEqual({ pytorch1Thread: null, tfjsWasm: null });
    expect(report.peers).toEqual([]);
    expect(report.kernels.map((timing) => timing.kernel)).toEqual([
      'matmul q/o_proj', 'matmul mlp gate/up', 'matmul mlp down', 'matmul lm_head', 'attention fwd+bwd (causal)', 'rmsNorm', 'softmax (attention rows)', 'crossEntropy',
    ]);
    for (const timing of report.kernels) expect(timing.ms).toBeGreaterThan(0);
    // The profile: every kernel the step calls, counted per step; kernels take part of the step, not more.
    const [profile] = report.profiles;
    expect(profile.model).toBe('tiny');
    const kernels = profile.rows.map((row) => row.kernel);
    for (const expected of ['attention', 'attentionBackward', 'adamw', 'crossEntropy', 'crossEntropyBackward', 'rmsNorm', 'swiglu']) expect(kernels).toContain(expected);
    expect(profile.rows.find((row) => row.kernel === 'attention')?.callsPerStep).toBe(2);
    expect(profile.rows.find((row) => row.kernel === 'adamw')?.callsPerStep).toBe(21);
    expect(profile.kernelMsPerStep).toBeLessThan(profile.msPerStep);
    expect(report.generation).toHaveLength(1);
    const [generation] = report.generation;
    expect(generation).toMatchObject({ model: 'tiny', backend: 'cpu', contextLength: 64, tokens: 16, runs: 2 });
    expect(generation.short.promptLength).toBe(16);
    expect(generation.full.promptLength + generation.tokens).toBe(64);
    for (const rate of [generation.short, generation.full]) expect(rate.tokensPerSecond).toBeCloseTo(1000 / rate.msPerToken, 6);
    expect(generation.ratio).toBeCloseTo(generation.short.tokensPerSecond / generation.full.tokensPerSecond, 9);
  });

  it('measures TF.js WASM live in the same run, and names a missing PyTorch with the command that installs it', async () => {
    const run = await runKiln(
      ['bench', '--device', 'cpu', '--model', 'tiny', '--steps', '1', '--warmup', '0', '--cpu-threads', '1', '--no-kernels', '--no-generation'],
      { env: { KILN_BENCH_PYTHON: '/nonexistent/python3' } },
    );
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^tiny +kiln cpu +1 +8×64 .* +\d+\.\d\d× +1\.00×$/m);
    expect(run.stdout).toMatch(/^tiny +TF\.js 4\.22\.0 WASM +1 /m);
    expect(run.stdout).toContain('not measured: PyTorch CPU — /nonexistent/python3 does not exist.');
    expect(run.stdout).toContain('sudo apt-get install python3-torch');
    expect(run.stdout).not.toContain('REFERENCE.md');
  });

  it('prints the generation line with both rates and their ratio', async () => {
    const run = await runKiln(['bench', '--device', 'cpu', '--model', 'tiny', '--steps', '1', '--warmup', '0', '--no-kernels', '--peers', 'none', '--cpu-threads', '1']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/generation \(KV-cached decoding, greedy, f32\)/);
    expect(run.stdout).toMatch(/tiny\s+cpu\s+64\s+flash\s+16 tokens\s+[\d,]+\s+48 → 64\s+[\d,]+\s+[\d.]+×/);
    expect(run.stdout).not.toMatch(/kernels \(median ms/);
  });

  it('rejects an unknown model preset and an unknown backend with exit 2', async () => {
    const [model, device] = await Promise.all([runKiln(['bench', '--model', 'huge']), runKiln(['bench', '--device', 'nope'])]);
    expect(model.code).toBe(2);
    expect(model.stderr).toContain('tiny, small, medium');
    expect(device.code).toBe(2);
  });
});
