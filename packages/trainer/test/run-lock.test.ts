/**
 * The run-directory lock in one process: exclusive while held, released for the next run, a
 * stale lock (its pid no longer runs) taken over with a note, another host's lock refused with
 * the fix, and train() refusing a directory whose lock a live process holds.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KilnError, RunLockedError } from '@kiln/core';
import { createCpuBackend } from '@kiln/backend-cpu';
import { acquireRunLock, RUN_LOCK_FILE } from '../src/checkpoint/index.js';
import { train } from '../src/train/index.js';
import { eventRecorder, makeWorkspace, tinyTrainConfig } from './train-fixtures.js';

/** The pid of a process that has exited (and been reaped). */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(child.stdout);
}

describe('acquireRunLock', () => {
  let workspace: Awaited<ReturnType<typeof makeWorkspace>>;
  beforeEach(async () => {
    workspace = await makeWorkspace();
  });
  afterEach(async () => workspace.cleanup());

  it('holds the directory exclusively until released, naming the holder', async () => {
    const lock = await acquireRunLock(workspace.root);
    const written = JSON.parse(await readFile(join(workspace.root, RUN_LOCK_FILE), 'utf8')) as unknown;
    expect(written).toEqual({ pid: process.pid, host: hostname(), since: lock.holder.since });
    const refusal = await acquireRunLock(workspace.root).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(RunLockedError);
    expect((refusal as KilnError).code).toBe('RUN_LOCKED');
    expect((refusal as Error).message).toContain(
      `${workspace.root} is in use by another kiln run (pid ${process.pid} on ${hostname()}, since ${lock.holder.since})`,
    );
    await lock.release();
    expect(existsSync(join(workspace.root, RUN_LOCK_FILE))).toBe(false);
    const again = await acquireRunLock(workspace.root);
    await again.release();
  });

  it('takes over a lock whose writer no longer runs, with a note', async () => {
    const pid = deadPid();
    await writeFile(
      join(workspace.root, RUN_LOCK_FILE),
      JSON.stringify({ pid, host: hostname(), since: '2026-01-01T00:00:00.000Z' }),
    );
    const notes: string[] = [];
    const lock = await acquireRunLock(workspace.root, { notice: (message) => notes.push(message) });
    expect(notes).toEqual([
      `taking over the lock of ${workspace.root}: its writer (pid ${pid} on ${hostname()}, since 2026-01-01T00:00:00.000Z) no longer runs`,
    ]);
    expect(lock.holder.pid).toBe(process.pid);
    await lock.release();
  });

  it('takes over an unreadable lock file, with a note', async () => {
    await writeFile(join(workspace.root, RUN_LOCK_FILE), 'not json');
    const notes: string[] = [];
    const lock = await acquireRunLock(workspace.root, { notice: (message) => notes.push(message) });
    expect(notes).toEqual([`taking over the lock of ${workspace.root}: its lock file was unreadable`]);
    await lock.release();
  });

  it("refuses another host's lock (its writer cannot be checked) and says how to clear it", async () => {
    const path = join(workspace.root, RUN_LOCK_FILE);
    await writeFile(
      path,
      JSON.stringify({ pid: deadPid(), host: 'elsewhere.example', since: '2026-01-01T00:00:00.000Z' }),
    );
    const refusal = (await acquireRunLock(workspace.root).catch((error: unknown) => error)) as RunLockedError;
    expect(refusal).toBeInstanceOf(RunLockedError);
    expect(refusal.hint).toBe(
      `Use another directory (--output), or, if the run on elsewhere.example is no longer running, delete ${path}.`,
    );
  });

  it('release leaves a lock that is no longer its own', async () => {
    const lock = await acquireRunLock(workspace.root);
    const other = JSON.stringify({ pid: 1, host: hostname(), since: 'x' });
    await writeFile(lock.path, other);
    await lock.release();
    expect(await readFile(lock.path, 'utf8')).toBe(other);
  });
});

describe('train() and the lock', () => {
  let workspace: Awaited<ReturnType<typeof makeWorkspace>>;
  beforeEach(async () => {
    workspace = await makeWorkspace();
  });
  afterEach(async () => workspace.cleanup());

  it('refuses a run directory held by a live process and touches nothing in it', async () => {
    const backend = createCpuBackend();
    const outputDir = join(workspace.root, 'run');
    await mkdir(outputDir);
    const lock = await acquireRunLock(outputDir);
    const config = tinyTrainConfig(workspace.dataPath, outputDir, { schedule: { steps: 2 } });
    await expect(train(config, { backend })).rejects.toThrow(RunLockedError);
    expect(existsSync(join(outputDir, 'checkpoints'))).toBe(false);
    await lock.release();
    const recorder = eventRecorder();
    const result = await train(config, { backend, onEvent: recorder.onEvent });
    expect(result.step).toBe(2);
    expect(existsSync(join(outputDir, RUN_LOCK_FILE)), 'train() released its lock').toBe(false);
  });

  it('releases the lock when the run fails', async () => {
    const backend = createCpuBackend();
    const outputDir = join(workspace.root, 'run');
    // Data that does not exist: the run fails after taking the lock.
    const config = tinyTrainConfig(join(workspace.root, 'missing.txt'), outputDir, { schedule: { steps: 2 } });
    await expect(train(config, { backend })).rejects.toThrow();
    expect(existsSync(join(outputDir, RUN_LOCK_FILE))).toBe(false);
  });
});
