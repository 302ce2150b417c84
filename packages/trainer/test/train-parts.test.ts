import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { setBackend, tensor } from '@kiln/core';
import { createCpuBackend } from '@kiln/backend-cpu';
import { learningRateAt } from '../src/train/schedule.js';
import { DynamicLossScaler } from '../src/train/loss-scaler.js';
import { renderLossPlot } from '../src/train/loss-plot.js';
import { MetricsLog } from '../src/train/metrics-log.js';
import {
  adamwStep,
  appliesWeightDecay,
  clearGradients,
  createMoments,
  disposeMoments,
  gradientNormSquared,
} from '../src/train/optimizer.js';

describe('learning-rate schedule', () => {
  const options = { lr: 1e-3, warmupSteps: 4, totalSteps: 20, minLrRatio: 0.1 };
  it('warms up linearly, peaks, then decays by cosine to the floor', () => {
    expect([0, 1, 2, 3].map((step) => learningRateAt(step, options))).toEqual([2.5e-4, 5e-4, 7.5e-4, 1e-3]);
    expect(learningRateAt(4, options)).toBe(1e-3);
    expect(learningRateAt(12, options)).toBeCloseTo(1e-4 + 0.9e-3 * 0.5, 12);
    expect(learningRateAt(20, options)).toBeCloseTo(1e-4, 12);
    expect(learningRateAt(500, options)).toBeCloseTo(1e-4, 12);
    for (let step = 4; step < 20; step++)
      expect(learningRateAt(step + 1, options)).toBeLessThan(learningRateAt(step, options));
  });
  it('starts at the peak without warmup', () => {
    expect(learningRateAt(0, { ...options, warmupSteps: 0 })).toBe(1e-3);
  });
});

describe('dynamic loss scaler', () => {
  it('halves on overflow and doubles after the growth interval', () => {
    const scaler = new DynamicLossScaler({ enabled: true, growthInterval: 3 });
    expect(scaler.scale).toBe(2 ** 15);
    expect(scaler.update(false)).toBe(true);
    expect(scaler.scale).toBe(2 ** 14);
    scaler.update(true);
    scaler.update(true);
    expect(scaler.scale).toBe(2 ** 14);
    scaler.update(true);
    expect(scaler.scale).toBe(2 ** 15);
    expect(scaler.state()).toEqual({ scale: 2 ** 15, goodSteps: 0 });
    const restored = new DynamicLossScaler({ enabled: true, growthInterval: 3 }, { scale: 64, goodSteps: 2 });
    restored.update(true);
    expect(restored.scale).toBe(128);
  });
  it('stays at 1 when disabled (f32/bf16)', () => {
    const scaler = new DynamicLossScaler({ enabled: false });
    scaler.update(false);
    expect(scaler.scale).toBe(1);
  });
});

describe('loss plot', () => {
  it('is a well-formed SVG with both series, axes and labels', () => {
    const svg = renderLossPlot(
      [
        { step: 1, loss: 5.5 },
        { step: 2, loss: 4.1 },
        { step: 3, loss: 3.2, valLoss: 3.4 },
        { step: 4, loss: Number.NaN },
        { step: 6, loss: 2.2, valLoss: 2.6 },
      ],
      { title: 'a <b> & c' },
    );
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.trim().endsWith('</svg>')).toBe(true);
    expect(svg).toContain('a &lt;b&gt; &amp; c');
    expect(svg.match(/<polyline /g)).toHaveLength(2);
    expect(svg).toContain('>step</text>');
    expect(svg).toContain('loss (nats/token)');
    expect(svg).not.toMatch(/NaN|Infinity/);
    // Every opened element is closed or self-closing.
    const opened = (svg.match(/<(svg|g|text)[ >]/g) ?? []).length;
    const closed = (svg.match(/<\/(svg|g|text)>/g) ?? []).length;
    expect(opened).toBe(closed);
    const trainPoints = /<polyline fill="none" stroke="#1f77b4" stroke-width="1.5" points="([^"]+)"/
      .exec(svg)![1]
      .split(' ');
    expect(trainPoints).toHaveLength(4);
  });
  it('renders an empty or flat history without dividing by zero', () => {
    expect(renderLossPlot([])).toContain('no finite losses yet');
    expect(renderLossPlot([{ step: 1, loss: 2 }])).not.toMatch(/NaN|Infinity/);
  });

  it('draws a 2-step run (one logged point) with whole-step x ticks, and pads the losses off the axes', () => {
    const svg = renderLossPlot([{ step: 2, loss: 5.2, valLoss: 4.9 }]);
    // The training point is drawn (a dot: one point makes no line) beside the validation dot.
    expect(svg).toMatch(/<circle [^>]*fill="#1f77b4"\/>/);
    expect(svg).toMatch(/<circle [^>]*fill="#ff7f0e"\/>/);
    const xLabels = [...svg.matchAll(/<text x="[\d.]+" y="(?:366)" text-anchor="middle">([^<]+)<\/text>/g)].map(
      (match) => match[1],
    );
    expect(xLabels).toEqual(['1', '2', '3']);
    const long = renderLossPlot(Array.from({ length: 7 }, (_, index) => ({ step: index + 1, loss: 6 - index * 0.5 })));
    const longLabels = [...long.matchAll(/<text x="[\d.]+" y="366" text-anchor="middle">([^<]+)<\/text>/g)].map(
      (match) => Number(match[1]),
    );
    expect(longLabels.length).toBeGreaterThan(1);
    for (const label of longLabels) expect(Number.isInteger(label)).toBe(true);
    // The lowest loss sits above the x-axis (y = 348), the highest below the top (y = 40).
    const ys = [...long.matchAll(/points="([^"]+)"/g)][0][1].split(' ').map((pair) => Number(pair.split(',')[1]));
    expect(Math.max(...ys)).toBeLessThan(348 - 10);
    expect(Math.min(...ys)).toBeGreaterThan(40 + 10);
  });
});

describe('metrics log', () => {
  it('appends lines and on resume drops the lines after the resumed step (and a torn last line)', async () => {
    const root = await mkdtemp(join(tmpdir(), 'kiln-metrics-'));
    const path = join(root, 'metrics.jsonl');
    const log = await MetricsLog.open(path);
    for (let step = 1; step <= 5; step++)
      log.append({ step, loss: 6 - step, lr: 0.001, tokens_per_second: 100, ...(step === 3 ? { val_loss: 2.5 } : {}) });
    log.close();
    await writeFile(path, `${await readFile(path, 'utf8')}{"step": 6, "lo`);
    const resumed = await MetricsLog.open(path, { resumeStep: 3 });
    expect(resumed.records.map((record) => record.step)).toEqual([1, 2, 3]);
    resumed.append({ step: 4, loss: 1, lr: 0.001, tokens_per_second: 50 });
    resumed.close();
    const lines = (await readFile(path, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines.map((line) => line.step)).toEqual([1, 2, 3, 4]);
    expect(lines[2]).toEqual({ step: 3, loss: 3, lr: 0.001, tokens_per_second: 100, val_loss: 2.5 });
    const fresh = await MetricsLog.open(path);
    fresh.close();
    expect(await readFile(path, 'utf8')).toBe('');
    await rm(root, { recursive: true, force: true });
  });
});

describe('AdamW helpers', () => {
  it('computes the global gradient norm, decays matrices only, and frees gradients', async () => {
    const backend = createCpuBackend();
    setBackend(backend);
    const weight = tensor(
      [
        [1, 2],
        [3, 4],
      ],
      undefined,
      { backend },
    ).requireGrad();
    const gain = tensor([1, 1], undefined, { backend }).requireGrad();
    const parameters = new Map([
      ['w', weight],
      ['g', gain],
    ]);
    expect(appliesWeightDecay(weight)).toBe(true);
    expect(appliesWeightDecay(gain)).toBe(false);
    weight.grad = tensor(
      [
        [0, 0],
        [0, 0],
      ],
      undefined,
      { backend },
    );
    gain.grad = tensor([3, 4], undefined, { backend });
    const norm = gradientNormSquared(parameters);
    expect(await norm.item()).toBe(25);
    norm.dispose();
    const moments = createMoments(parameters);
    const before = backend.memory().bufferCount;
    adamwStep(parameters, moments, {
      lr: 0.1,
      optimizer: { lr: 0.1, beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0.5, gradClip: 1 },
      step: 1,
      gradientScale: 0.5,
    });
    expect(backend.memory().bufferCount).toBe(before);
    // Zero gradient: only weight decay moves the matrix (×(1 − 0.1·0.5)); the gain moves by −lr·sign(g).
    expect(Array.from(await weight.data())).toEqual(Array.from(new Float32Array([0.95, 1.9, 2.85, 3.8])));
    const gainValues = await gain.data();
    expect(gainValues[0]).toBeCloseTo(0.9, 5);
    expect(gainValues[1]).toBeCloseTo(0.9, 5);
    clearGradients(parameters);
    expect(weight.grad).toBeNull();
    disposeMoments(moments);
    weight.dispose();
    gain.dispose();
    expect(backend.memory().bufferCount).toBe(0);
  });
});
