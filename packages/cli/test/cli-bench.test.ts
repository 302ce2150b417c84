import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { requireBuild, runKiln } from './kiln-process.js';

beforeAll(requireBuild);

interface BenchJson {
  results: Array<{
    model: string;
    backend: string;
    threads: number | null;
    msPerStep: number;
    tokensPerSecond: number;
    speedupOverCpu: number | null;
    ratios: { pytorch1Thread: number | null; tfjsWasm: number | null };
  }>;
  peers: Array<{ peer: string; model: string; threads: number; tokensPerSecond: number }>;
  missingPeers: Array<{ peer: string; reason: string; install: string }>;
  kernels: Array<{ kernel: string; ms: number; gflops: number | null }>;
  profiles: Array<{
    model: string;
    msPerStep: number;
    kernelMsPerStep: number;
    rows: Array<{ kernel: string; callsPerStep: number; msPerStep: number }>;
  }>;
  generation: Array<{
    model: string;
    backend: string;
    contextLength: number;
    tokens: number;
    runs: number;
    ratio: number;
    short: { promptLength: number; msPerToken: number; tokensPerSecond: number };
    full: { promptLength: number; msPerToken: number; tokensPerSecond: number };
  }>;
}

describe('kiln bench', () => {
  it('measures the tiny reference model on the CPU at each thread count, with kernel timings and no peer', async () => {
    const run = await runKiln([
      'bench',
      '--device',
      'cpu',
      '--model',
      'tiny',
      '--steps',
      '2',
      '--warmup',
      '1',
      '--cpu-threads',
      '1,2',
      '--peers',
      'none',
      '--profile',
      '--json',
    ]);
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as BenchJson;
    expect(report.results.map((row) => [row.model, row.backend, row.threads])).toEqual([
      ['tiny', 'cpu', 1],
      ['tiny', 'cpu', 2],
    ]);
    const [one, two] = report.results;
    expect(one.speedupOverCpu).toBe(1);
    expect(two.speedupOverCpu).toBeCloseTo(two.tokensPerSecond / one.tokensPerSecond, 9);
    expect(one.tokensPerSecond).toBeCloseTo((8 * 64) / (one.msPerStep / 1000), 6);
    expect(one.ratios).toEqual({ pytorch1Thread: null, tfjsWasm: null });
    expect(report.peers).toEqual([]);
    expect(report.kernels.map((timing) => timing.kernel)).toEqual([
      'matmul q/o_proj',
      'matmul mlp gate/up',
      'matmul mlp down',
      'matmul lm_head',
      'attention fwd+bwd (causal)',
      'rmsNorm',
      'softmax (attention rows)',
      'crossEntropy',
    ]);
    for (const timing of report.kernels) expect(timing.ms).toBeGreaterThan(0);
    // The profile: every kernel the step calls, counted per step; kernels take part of the step, not more.
    const [profile] = report.profiles;
    expect(profile.model).toBe('tiny');
    const kernels = profile.rows.map((row) => row.kernel);
    for (const expected of [
      'attention',
      'attentionBackward',
      'adamw',
      'crossEntropy',
      'crossEntropyBackward',
      'rmsNorm',
      'swiglu',
    ])
      expect(kernels).toContain(expected);
    expect(profile.rows.find((row) => row.kernel === 'attention')?.callsPerStep).toBe(2);
    expect(profile.rows.find((row) => row.kernel === 'adamw')?.callsPerStep).toBe(21);
    expect(profile.kernelMsPerStep).toBeLessThan(profile.msPerStep);
    expect(report.generation).toHaveLength(1);
    const [generation] = report.generation;
    expect(generation).toMatchObject({ model: 'tiny', backend: 'cpu', contextLength: 64, tokens: 16, runs: 2 });
    expect(generation.short.promptLength).toBe(16);
    expect(generation.full.promptLength + generation.tokens).toBe(64);
    for (const rate of [generation.short, generation.full])
      expect(rate.tokensPerSecond).toBeCloseTo(1000 / rate.msPerToken, 6);
    expect(generation.ratio).toBeCloseTo(generation.short.tokensPerSecond / generation.full.tokensPerSecond, 9);
  });

  it('measures TF.js WASM live in the same run, and names a missing PyTorch with the command that installs it', async () => {
    const run = await runKiln(
      [
        'bench',
        '--device',
        'cpu',
        '--model',
        'tiny',
        '--steps',
        '1',
        '--warmup',
        '0',
        '--cpu-threads',
        '1',
        '--no-kernels',
        '--no-generation',
      ],
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
    const run = await runKiln([
      'bench',
      '--device',
      'cpu',
      '--model',
      'tiny',
      '--steps',
      '1',
      '--warmup',
      '0',
      '--no-kernels',
      '--peers',
      'none',
      '--cpu-threads',
      '1',
    ]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/generation \(KV-cached decoding, greedy, f32\)/);
    expect(run.stdout).toMatch(/tiny\s+cpu\s+64\s+flash\s+16 tokens\s+[\d,]+\s+48 → 64\s+[\d,]+\s+[\d.]+×/);
    expect(run.stdout).not.toMatch(/kernels \(median ms/);
  });

  it('rejects an unknown model preset and an unknown backend with exit 2', async () => {
    const [model, device] = await Promise.all([
      runKiln(['bench', '--model', 'huge']),
      runKiln(['bench', '--device', 'nope']),
    ]);
    expect(model.code).toBe(2);
    expect(model.stderr).toContain('tiny, small, medium');
    expect(device.code).toBe(2);
  });
});

interface FineTuneJson {
  fineTuning: Array<{
    model: string;
    mode: string;
    backend: string;
    batchSize: number;
    contextLength: number;
    parameters: number;
    trainableParameters: number;
    msPerStep: number;
    tokensPerSecond: number;
    peakMemoryBytes: number;
  }>;
  fineTuningPeers: unknown[];
  missingPeers: Array<{ peer: string; reason: string; install: string }>;
  results: unknown[];
}

describe('kiln bench fine-tuning presets', () => {
  it('fine-tunes GPT-2 124M (random weights of the real shape) with LoRA and fully, at a tiny batch×context, and names a missing PyTorch', async () => {
    const run = await runKiln(
      [
        'bench',
        '--device',
        'cpu',
        '--model',
        'gpt2-124m',
        '--batch',
        '1',
        '--context',
        '4',
        '--steps',
        '1',
        '--warmup',
        '0',
        '--json',
      ],
      {
        env: { KILN_BENCH_PYTHON: '/nonexistent/python3' },
      },
    );
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as FineTuneJson;
    expect(report.results).toEqual([]);
    expect(
      report.fineTuning.map((row) => [row.model, row.mode, row.backend, row.batchSize, row.contextLength]),
    ).toEqual([
      ['gpt2-124m', 'lora', 'cpu', 1, 4],
      ['gpt2-124m', 'full', 'cpu', 1, 4],
    ]);
    const [lora, full] = report.fineTuning;
    // GPT-2's published parameter count; LoRA r=8 on c_attn [2304, 768] in 12 layers: 12 · 8 · (768 + 2304).
    expect(full.parameters).toBe(124_439_808);
    expect(full.trainableParameters).toBe(124_439_808);
    expect(lora.trainableParameters).toBe(12 * 8 * (768 + 2304));
    for (const row of [lora, full]) expect(row.tokensPerSecond).toBeCloseTo(4 / (row.msPerStep / 1000), 6);
    // Full fine-tuning holds weights, gradients and two AdamW moments (4 × 4 bytes a parameter); LoRA only the f32 weights and a small adapter.
    expect(full.peakMemoryBytes).toBeGreaterThan(16 * 124_439_808);
    expect(lora.peakMemoryBytes).toBeGreaterThan(4 * 124_439_808);
    expect(lora.peakMemoryBytes).toBeLessThan(full.peakMemoryBytes / 2);
    expect(report.fineTuningPeers).toEqual([]);
    expect(report.missingPeers).toEqual([
      expect.objectContaining({ peer: 'pytorch', reason: '/nonexistent/python3 does not exist' }),
    ]);
  });

  it("passes the preset's config.json, mode, shape and device to the PyTorch peer and reports its figures", async () => {
    const directory = await mkdtemp(join(tmpdir(), 'kiln-bench-peer-'));
    try {
      // A stand-in Python: records its arguments and answers as peers/train_torch.py --hf-config does (100 ms a step).
      const stub = join(directory, 'python3');
      await writeFile(
        stub,
        [
          '#!/bin/sh',
          `echo "$@" >> ${join(directory, 'calls.txt')}`,
          'mode=$(echo "$@" | sed -n "s/.*--mode \\([a-z]*\\).*/\\1/p")',
          'echo "{\\"mode\\": \\"$mode\\", \\"threads\\": 1, \\"torch\\": \\"9.9\\", \\"transformers\\": \\"9.9\\", \\"peft\\": null, \\"msPerStep\\": 100, \\"tokensPerSecond\\": 20, \\"trainableParameters\\": 7, \\"peakMemoryBytes\\": 1048576, \\"memoryKind\\": \\"process peak RSS\\"}"',
        ].join('\n'),
        { mode: 0o755 },
      );
      const run = await runKiln(
        [
          'bench',
          '--device',
          'cpu',
          '--model',
          'tiny-starcoder',
          '--context',
          '2',
          '--steps',
          '1',
          '--warmup',
          '0',
          '--json',
        ],
        { env: { KILN_BENCH_PYTHON: stub } },
      );
      expect(run.code, run.stderr).toBe(0);
      const report = JSON.parse(run.stdout) as FineTuneJson;
      const peers = report.fineTuningPeers as Array<{ mode: string; device: string; tokensPerSecond: number }>;
      expect(peers.map((peer) => [peer.mode, peer.device, peer.tokensPerSecond])).toEqual([
        ['lora', 'cpu', 20],
        ['full', 'cpu', 20],
      ]);
      const calls = (await readFile(join(directory, 'calls.txt'), 'utf8')).trim().split('\n');
      expect(calls).toHaveLength(2);
      for (const [index, mode] of ['lora', 'full'].entries()) {
        expect(calls[index]).toContain(`--mode ${mode}`);
        expect(calls[index]).toContain('--batch 1 --ctx 2 --device cpu');
        expect(calls[index]).toContain(
          '"model_type":"gpt_bigcode","n_embd":768,"n_layer":20,"n_head":12,"multi_query":true,"n_inner":3072,"vocab_size":49152',
        );
      }
      expect(calls[0]).toContain('--lora {"r":8,"alpha":16,"targets":["c_attn"]}');
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });

  it('prints the fine-tuning table', async () => {
    const run = await runKiln([
      'bench',
      '--device',
      'cpu',
      '--model',
      'tiny-starcoder',
      '--context',
      '2',
      '--steps',
      '1',
      '--warmup',
      '0',
      '--peers',
      'none',
    ]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(
      /^tiny-starcoder +lora +kiln cpu \(\d+T\) +1×2 +[\d,]+ +[\d.]+ +[\d.]+ +[\d.]+ [MG]iB +—$/m,
    );
    expect(run.stdout).toMatch(/^tiny-starcoder +full +kiln cpu /m);
    expect(run.stdout).not.toContain('not measured');
  });
});
