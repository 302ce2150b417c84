import { beforeAll, describe, expect, it } from 'vitest';
import { requireBuild, runKiln } from './kiln-process.js';

beforeAll(requireBuild);

interface BenchJson {
  results: Array<{ model: string; backend: string; msPerStep: number; tokensPerSecond: number; speedupOverCpu: number; reference: { pytorchCpu1Thread: number; tfjsWasm: number; ratioToTfjsWasm: number } }>;
  kernels: Array<{ kernel: string; ms: number; gflops: number | null }>;
  generation: Array<{
    model: string; backend: string; contextLength: number; tokens: number; runs: number; ratio: number;
    short: { promptLength: number; msPerToken: number; tokensPerSecond: number };
    full: { promptLength: number; msPerToken: number; tokensPerSecond: number };
  }>;
}

describe('kiln bench', () => {
  it('measures the tiny reference model on the CPU with the reference figures and kernel timings', async () => {
    const run = await runKiln(['bench', '--device', 'cpu', '--model', 'tiny', '--steps', '2', '--warmup', '1', '--json']);
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as BenchJson;
    expect(report.results).toHaveLength(1);
    const [tiny] = report.results;
    expect(tiny).toMatchObject({ model: 'tiny', backend: 'cpu', speedupOverCpu: 1, reference: { pytorchCpu1Thread: 40_600, tfjsWasm: 1_930 } });
    expect(tiny.tokensPerSecond).toBeCloseTo((8 * 64) / (tiny.msPerStep / 1000), 6);
    expect(tiny.reference.ratioToTfjsWasm).toBeCloseTo(tiny.tokensPerSecond / 1_930, 9);
    expect(report.kernels.map((timing) => timing.kernel)).toEqual([
      'matmul q/o_proj', 'matmul mlp gate/up', 'matmul mlp down', 'matmul lm_head', 'attention fwd+bwd (causal)', 'rmsNorm', 'softmax (attention rows)', 'crossEntropy',
    ]);
    for (const timing of report.kernels) expect(timing.ms).toBeGreaterThan(0);
    expect(report.generation).toHaveLength(1);
    const [generation] = report.generation;
    expect(generation).toMatchObject({ model: 'tiny', backend: 'cpu', contextLength: 64, tokens: 16, runs: 2 });
    expect(generation.short.promptLength).toBe(16);
    expect(generation.full.promptLength + generation.tokens).toBe(64);
    for (const rate of [generation.short, generation.full]) expect(rate.tokensPerSecond).toBeCloseTo(1000 / rate.msPerToken, 6);
    expect(generation.ratio).toBeCloseTo(generation.short.tokensPerSecond / generation.full.tokensPerSecond, 9);
  });

  it('prints the generation line with both rates and their ratio', async () => {
    const run = await runKiln(['bench', '--device', 'cpu', '--model', 'tiny', '--steps', '1', '--warmup', '0', '--no-kernels']);
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
