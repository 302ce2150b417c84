/**
 * One writer per run directory, with real processes: while a run trains, a second `kiln train`
 * and a `kiln train --resume` on its directory are refused (exit 1, naming the holder's pid);
 * SIGTERM stops the run like Ctrl+C (a checkpoint at the current step, exit 143) and frees the
 * directory; a lock left by a SIGKILLed writer is taken over with a note.
 */
import { existsSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
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

/** Resolves once `child` has printed a step event (training is under way and the lock is held). */
function firstStep(child: ChildProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    let seen = '';
    child.stdout?.on('data', (chunk: Buffer | string) => {
      seen += chunk.toString();
      if (seen.includes('"type":"step"')) resolve();
    });
    child.on('close', () => reject(new Error(`the run ended before its first step: ${seen}`)));
  });
}

function events(stdout: string): Array<{ type: string; step: number; message?: string }> {
  return stdout
    .trim()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { type: string; step: number });
}

describe('the run-directory lock', () => {
  it('refuses a second trainer and a resume while a run writes; SIGTERM checkpoints, exits 143 and frees the directory', async () => {
    const directory = temporaryDirectory('lock');
    const dataPath = writeTrainingText(directory);
    const outputDir = join(directory, 'run');
    const config = writeTinyConfig(directory, { dataPath, outputDir, steps: 100_000, interval: 100_000 });
    const writer = spawnKiln(['train', '--config', config, '--json']);
    const writerRun = finished(writer);
    try {
      await firstStep(writer);
      const lock = JSON.parse(readFileSync(join(outputDir, 'kiln.lock'), 'utf8')) as {
        pid: number;
        host: string;
        since: string;
      };
      expect(lock).toMatchObject({ pid: writer.pid, host: hostname() });

      const second = await runKiln(['train', '--config', config, '--seed', '2', '--json'], { killAfterMs: 60_000 });
      expect(second.code, second.stderr).toBe(1);
      expect(second.stderr).toContain(
        `${outputDir} is in use by another kiln run (pid ${writer.pid} on ${hostname()}, since ${lock.since})`,
      );
      expect(second.stderr).toContain(`kill ${writer.pid}`);

      const resume = await runKiln(['train', '--config', config, '--resume', '--json'], { killAfterMs: 60_000 });
      expect(resume.code, resume.stderr).toBe(1);
      expect(resume.stderr).toContain(`is in use by another kiln run (pid ${writer.pid}`);

      writer.kill('SIGTERM');
      const run = await writerRun;
      expect(run.code, run.stderr).toBe(143);
      expect(run.stderr).toContain('terminated (SIGTERM): writing a checkpoint');
      const checkpoint = events(run.stdout)
        .filter((event) => event.type === 'checkpoint')
        .at(-1);
      // A checkpoint at the step the signal arrived, not at the periodic interval (100,000).
      expect(checkpoint?.step).toBeGreaterThan(0);
      expect(checkpoint?.step).toBeLessThan(100_000);
      expect(existsSync(join(outputDir, 'kiln.lock')), 'the lock outlived the run').toBe(false);

      const resumed = await runKiln(
        ['train', '--config', config, '--resume', '--json', '--steps', String((checkpoint?.step ?? 0) + 1)],
        { killAfterMs: 120_000 },
      );
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(events(resumed.stdout).find((event) => event.type === 'start')?.step).toBe(checkpoint?.step);
    } finally {
      writer.kill('SIGKILL');
    }
  });

  it('takes over the lock of a SIGKILLed writer with a note', async () => {
    const directory = temporaryDirectory('stale-lock');
    const dataPath = writeTrainingText(directory);
    const outputDir = join(directory, 'run');
    const config = writeTinyConfig(directory, { dataPath, outputDir, steps: 100_000, interval: 1 });
    const writer = spawnKiln(['train', '--config', config, '--json']);
    const writerRun = finished(writer);
    await firstStep(writer);
    writer.kill('SIGKILL');
    expect((await writerRun).signal).toBe('SIGKILL');
    expect(existsSync(join(outputDir, 'kiln.lock')), 'a SIGKILLed writer cannot remove its lock').toBe(true);

    const resumed = await runKiln(['train', '--config', config, '--resume', '--json', '--steps', '2'], {
      killAfterMs: 120_000,
    });
    expect(resumed.code, resumed.stderr).toBe(0);
    const notes = events(resumed.stdout)
      .filter((event) => event.type === 'notice')
      .map((event) => event.message);
    expect(notes).toContainEqual(
      expect.stringMatching(
        new RegExp(`^taking over the lock of .*: its writer \\(pid ${writer.pid} on .*\\) no longer runs$`),
      ),
    );
    expect(existsSync(join(outputDir, 'kiln.lock'))).toBe(false);
  });
});
