/**
 * Kill-and-resume equality through the CLI: a run SIGKILLed after a checkpoint and resumed with
 * --resume logs the same losses, bit for bit (the JSON number strings), as a run never interrupted.
 * A writer killed inside a checkpoint write leaves nothing behind once the resumed run has saved.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  finished,
  removeTemporaryDirectories,
  requireBuild,
  runKiln,
  spawnKiln,
  temporaryDirectory,
  writeTinyConfig,
  writeTrainingText,
} from './kiln-process.js';

beforeAll(requireBuild);
afterAll(removeTemporaryDirectories);

/** step → the raw text of each logged number of metrics.jsonl ("loss", "val_loss"). */
function loggedNumbers(path: string): Map<number, { loss: string; valLoss: string | undefined }> {
  const byStep = new Map<number, { loss: string; valLoss: string | undefined }>();
  for (const line of readFileSync(path, 'utf8').trim().split('\n')) {
    const step = Number(/"step":(\d+)/.exec(line)?.[1]);
    const loss = /"loss":([^,}]+)/.exec(line)?.[1];
    expect(loss, line).toBeDefined();
    expect(byStep.has(step), `step ${step} logged twice`).toBe(false);
    byStep.set(step, { loss: loss as string, valLoss: /"val_loss":([^,}]+)/.exec(line)?.[1] });
  }
  return byStep;
}

describe('kill -9 and --resume', () => {
  it('reaches the same losses bit for bit as an uninterrupted run', async () => {
    const directory = temporaryDirectory('resume');
    const dataPath = writeTrainingText(directory);
    const steps = 12;
    // Wide enough that a step takes tens of milliseconds: the kill lands well before the end.
    const config = writeTinyConfig(directory, {
      dataPath,
      outputDir: join(directory, 'unused'),
      steps,
      interval: 2,
      dModel: 64,
      contextLength: 64,
    });
    const interrupted = join(directory, 'interrupted');
    const straight = join(directory, 'straight');

    // The killed run: SIGKILL as soon as a checkpoint at step ≥ 4 is reported.
    const child = spawnKiln(['train', '--config', config, '--steps', String(steps), '--output', interrupted, '--json']);
    let killedAfter = -1;
    let buffered = '';
    const seen: string[] = [];
    child.stdout?.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      let newline: number;
      while ((newline = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        const event = JSON.parse(line) as { type: string; step: number };
        seen.push(event.type);
        if (killedAfter < 0 && event.type === 'checkpoint' && event.step >= 4) {
          killedAfter = event.step;
          child.kill('SIGKILL');
        }
      }
    });
    const killed = await finished(child);
    expect(killedAfter, killed.stderr).toBeGreaterThanOrEqual(4);
    expect(killed.signal).toBe('SIGKILL');
    expect(seen).not.toContain('end');

    const resumed = await runKiln([
      'train',
      '--config',
      config,
      '--steps',
      String(steps),
      '--output',
      interrupted,
      '--json',
      '--resume',
    ]);
    expect(resumed.code, resumed.stderr).toBe(0);
    const events = resumed.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { type: string; step: number });
    const start = events.find((event) => event.type === 'start');
    expect(start?.step).toBeGreaterThanOrEqual(killedAfter);
    expect(start?.step).toBeLessThan(steps);

    const uninterrupted = await runKiln([
      'train',
      '--config',
      config,
      '--steps',
      String(steps),
      '--output',
      straight,
      '--json',
    ]);
    expect(uninterrupted.code, uninterrupted.stderr).toBe(0);

    const expected = loggedNumbers(join(straight, 'metrics.jsonl'));
    const actual = loggedNumbers(join(interrupted, 'metrics.jsonl'));
    expect([...expected.keys()]).toEqual(Array.from({ length: steps }, (_, index) => index + 1));
    expect([...actual.keys()]).toEqual([...expected.keys()]);
    for (const [step, numbers] of expected) {
      if (step <= (start?.step ?? 0)) continue;
      expect(actual.get(step), `step ${step}`).toEqual(numbers);
    }
    // Before the resume point the lines come from the killed process: the same numbers too.
    for (const [step, numbers] of expected) expect(actual.get(step), `step ${step}`).toEqual(numbers);
  });
});

describe('SIGINT', () => {
  it('writes a checkpoint, exits 130, and the run continues with --resume', async () => {
    const directory = temporaryDirectory('sigint');
    const dataPath = writeTrainingText(directory);
    const outputDir = join(directory, 'run');
    const config = writeTinyConfig(directory, { dataPath, outputDir, steps: 400, interval: 100 });
    const child = spawnKiln(['train', '--config', config, '--json']);
    let interruptedAt = -1;
    child.stdout?.on('data', (chunk: Buffer) => {
      // Interrupt once training is under way (a step event has arrived).
      if (interruptedAt < 0 && chunk.toString('utf8').includes('"type":"step"')) {
        interruptedAt = 0;
        child.kill('SIGINT');
      }
    });
    const run = await finished(child);
    expect(run.code, run.stderr).toBe(130);
    expect(run.stderr).toContain('interrupted: writing a checkpoint');
    const events = run.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { type: string; step: number });
    const checkpoint = events.filter((event) => event.type === 'checkpoint').at(-1);
    expect(checkpoint?.step).toBeGreaterThan(0);
    // The abort is honoured within a few steps, not at the next periodic checkpoint (step 100).
    expect(checkpoint?.step, 'SIGINT was only seen at the periodic checkpoint').toBeLessThan(100);

    const resumed = await runKiln([
      'train',
      '--config',
      config,
      '--json',
      '--resume',
      '--steps',
      String((checkpoint?.step ?? 0) + 2),
    ]);
    expect(resumed.code, resumed.stderr).toBe(0);
    const start = resumed.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { type: string; step: number })
      .find((event) => event.type === 'start');
    expect(start?.step).toBe(checkpoint?.step);
  });
});

/** Entries a checkpoint writer leaves while it works: step-N.tmp-<pid>-…, step-N.old-<pid>-…, .<file>.<pid>.<hex>.tmp. */
function leftovers(directory: string): string[] {
  if (!existsSync(directory)) return [];
  return readdirSync(directory).filter((name) => /\.(?:tmp|old)-\d+-|\.\d+\.[0-9a-f]{12}\.tmp$/.test(name));
}

/**
 * Freezes `writer` with SIGSTOP at a moment when one of its temporary checkpoint directories
 * exists and a complete checkpoint precedes it (retrying at the next save when the stop lands
 * after the save finished). A stopped writer is what another run sees when the killed one is
 * still exiting (stuck in fsync, or not yet reaped): it still holds the run directory.
 */
async function stopInsideSave(writer: ChildProcess, checkpoints: string): Promise<string> {
  const own = new RegExp(`^step-\\d+\\.tmp-${writer.pid}-`);
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const names = existsSync(checkpoints) ? readdirSync(checkpoints) : [];
    if (names.some((name) => own.test(name)) && names.some((name) => /^step-\d+$/.test(name))) {
      writer.kill('SIGSTOP');
      const temporary = readdirSync(checkpoints).find((name) => own.test(name));
      if (temporary !== undefined) return temporary;
      writer.kill('SIGCONT');
    }
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  throw new Error('the writer was never caught inside a checkpoint write');
}

describe('a writer killed inside a checkpoint write', () => {
  it('holds the run directory while it lives, and leaves no temporary directory or file once the resumed run has saved', async () => {
    const directory = temporaryDirectory('killed-writer');
    const dataPath = writeTrainingText(directory);
    const outputDir = join(directory, 'run');
    const checkpoints = join(outputDir, 'checkpoints');
    // A checkpoint every step of a wider model: the writer spends a good part of its time saving.
    const config = writeTinyConfig(directory, { dataPath, outputDir, steps: 400, interval: 1, dModel: 128 });
    const writer = spawnKiln(['train', '--config', config, '--json']);
    const exited = finished(writer);
    try {
      const temporary = await stopInsideSave(writer, checkpoints);
      const latest = JSON.parse(readFileSync(join(checkpoints, 'latest.json'), 'utf8')) as { step: number };

      // A stopped writer (a process still exiting, stuck in fsync) still holds the directory: a resume is refused, nothing is touched.
      const refused = await runKiln([
        'train',
        '--config',
        config,
        '--json',
        '--resume',
        '--steps',
        String(latest.step + 3),
      ]);
      expect(refused.code, refused.stderr).toBe(1);
      expect(refused.stderr).toContain(`is in use by another kiln run (pid ${writer.pid}`);
      expect(readdirSync(checkpoints)).toContain(temporary);

      writer.kill('SIGKILL');
      expect((await exited).signal).toBe('SIGKILL');
      const result = await runKiln([
        'train',
        '--config',
        config,
        '--json',
        '--resume',
        '--steps',
        String(latest.step + 3),
      ]);
      expect(result.code, result.stderr).toBe(0);
      expect(readdirSync(checkpoints)).not.toContain(temporary);
      expect(leftovers(checkpoints)).toEqual([]);
      expect(leftovers(outputDir)).toEqual([]);
    } finally {
      writer.kill('SIGKILL');
    }
  });
});
