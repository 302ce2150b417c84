import { describe, expect, it } from 'vitest';
import type { TrainEvent } from '@kiln/trainer';
import { createProgressReporter } from '../src/output/progress.js';
import { Terminal, type OutputStream } from '../src/output/terminal.js';

function capture(isTTY = false): { stream: OutputStream; text: () => string } {
  let text = '';
  return { stream: { isTTY, write: (chunk) => ((text += chunk), true) }, text: () => text };
}

const start: TrainEvent = {
  type: 'start',
  step: 0,
  totalSteps: 20,
  parameters: 139584,
  backend: 'cpu',
  adaptations: [{ path: 'device.precision', from: 'auto', to: 'f32', reason: 'the CPU computes in f32' }],
};
const log = (fromStep: number, n: number, loss: number | null = 5.4461): TrainEvent => ({
  type: 'log',
  step: n,
  totalSteps: 20,
  fromStep,
  loss,
  lr: 0.00029,
  tokens_per_second: 11000.2,
});
const step = (n: number): TrainEvent => ({
  type: 'step',
  step: n,
  totalSteps: 20,
  loss: 2.41249,
  lr: 0.00029,
  tokensPerSecond: 12345.4,
  gradNorm: 0.5,
  skipped: false,
});

describe('progress output', () => {
  it('prints plain lines every log interval and the last step when not a terminal', () => {
    const stdout = capture();
    const reporter = createProgressReporter(new Terminal({ stdout: stdout.stream, stderr: capture().stream }), {
      mode: 'lines',
    });
    reporter.handle(start);
    for (let n = 1; n <= 20; n++) {
      reporter.handle(step(n));
      if (n % 10 === 0) reporter.handle(log(n - 9, n));
    }
    reporter.handle({ type: 'eval', step: 20, valLoss: 2.3 });
    reporter.handle({ type: 'checkpoint', step: 20, path: 'run/checkpoints/step-00000020' });
    reporter.handle({ type: 'notice', message: 'out of memory at micro-batch 8' });
    reporter.stop();
    const lines = stdout.text().trimEnd().split('\n');
    expect(lines[0]).toBe('training 139,584 parameters on cpu: steps 1…20');
    expect(lines[1]).toBe('adapted device.precision: "auto" → "f32" (the CPU computes in f32)');
    // The loss printed is metrics.jsonl's: the interval's mean, named so.
    expect(lines[2]).toMatch(/^step 10\/20 mean loss 5\.446 \(steps 1–10\) lr 2\.9e-4 11,000 tok\/s eta \d+s$/);
    expect(lines[3]).toMatch(/^step 20\/20 mean loss 5\.446 \(steps 11–20\) lr 2\.9e-4 11,000 tok\/s eta 0s$/);
    expect(lines.slice(4)).toEqual([
      'step 20 val_loss 2.300',
      'checkpoint step 20 → run/checkpoints/step-00000020',
      'note: out of memory at micro-batch 8',
    ]);
  });

  it('names an interval whose steps were all skipped', () => {
    const stdout = capture();
    const reporter = createProgressReporter(new Terminal({ stdout: stdout.stream, stderr: capture().stream }), {
      mode: 'lines',
    });
    reporter.handle(log(3, 4, null));
    expect(stdout.text()).toMatch(/^step 4\/20 mean loss — \(steps 3–4 all skipped: non-finite\) lr /);
  });

  it('prints one JSON event per line in JSON mode, nothing else on stdout', () => {
    const stdout = capture();
    const terminal = new Terminal({ stdout: stdout.stream, stderr: capture().stream });
    terminal.jsonMode = true;
    const reporter = createProgressReporter(terminal, { mode: 'json' });
    reporter.handle(start);
    reporter.handle(step(1));
    const lines = stdout
      .text()
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as TrainEvent);
    expect(lines).toEqual([start, step(1)]);
  });

  it('draws a progress bar on a terminal, with notices printed above it', () => {
    const stdout = capture(true);
    const reporter = createProgressReporter(new Terminal({ stdout: stdout.stream, stderr: capture().stream }), {
      mode: 'bar',
    });
    reporter.handle(start);
    reporter.handle(step(5));
    reporter.handle(log(5, 5));
    reporter.handle({ type: 'notice', message: 'hello' });
    reporter.handle({ type: 'end', step: 20, valLoss: 2, seconds: 1 });
    const text = stdout.text();
    expect(text).toContain('note: hello\n');
    expect(text).toMatch(/step 5\/20 \[[^\]]+\] mean loss 5\.446 \(step 5\) \| 12,345 tok\/s \| eta /);
  });
});
