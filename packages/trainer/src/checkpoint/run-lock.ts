/**
 * The run-directory lock: one writer per run directory for the life of a run. `<outputDir>/kiln.lock`
 * holds the writer's pid, host and start time as JSON; it is created with O_EXCL ('wx'), so of two
 * processes starting at once exactly one gets it. A lock whose writer no longer runs (same host,
 * pid gone: isWriterAlive, the check the checkpoint cleanup uses) is taken over with a note; any
 * other holder makes the run fail with a RunLockedError naming it. The lock is removed when the
 * run ends (normally, by an error, or by an abort after SIGINT/SIGTERM) and, as a last resort,
 * when the process exits (process.exit after a second Ctrl+C); a SIGKILLed writer leaves a stale
 * lock that the next run takes over.
 */
import { readFileSync, unlinkSync } from 'node:fs';
import { link, open, readFile, rename, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { RunLockedError } from '@kiln/core';
import { isWriterAlive } from './cleanup.js';

/** The lock file's name inside a run directory. */
export const RUN_LOCK_FILE = 'kiln.lock';

/** Who holds a run directory. */
export interface RunLockHolder {
  /** Process id of the writer. */
  pid: number;
  /** Host name of the machine it runs on. */
  host: string;
  /** When it took the lock (ISO 8601). */
  since: string;
}

/** A held lock; release() removes it (idempotent). */
export interface RunLock {
  /** The lock file. */
  path: string;
  /** What the lock file says (this process). */
  holder: RunLockHolder;
  /** Removes the lock file if it is still this process's. */
  release(): Promise<void>;
}

/** Options of acquireRunLock. */
export interface AcquireRunLockOptions {
  /** Receives a sentence when a stale lock is taken over. */
  notice?: (message: string) => void;
}

function parseHolder(text: string): RunLockHolder | undefined {
  try {
    const value = JSON.parse(text) as Partial<RunLockHolder>;
    if (Number.isInteger(value.pid) && typeof value.host === 'string' && typeof value.since === 'string')
      return value as RunLockHolder;
  } catch {
    // Not JSON: a lock file cut short while being written, or not ours.
  }
  return undefined;
}

function describeHolder(holder: RunLockHolder): string {
  return `pid ${holder.pid} on ${holder.host}, since ${holder.since}`;
}

/** Creates the lock file with O_EXCL; false when it already exists. */
async function createExclusive(path: string, holder: RunLockHolder): Promise<boolean> {
  let handle;
  try {
    handle = await open(path, 'wx');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
  try {
    await handle.writeFile(`${JSON.stringify(holder)}\n`);
  } finally {
    await handle.close();
  }
  return true;
}

/**
 * Moves a stale lock aside (rename is atomic: of two processes taking it over, one wins) and
 * checks that what it moved is the stale lock it read, not a fresh one another process created
 * meanwhile (which is put back). True when the stale lock is gone.
 */
async function removeStale(path: string, stale: string): Promise<boolean> {
  const aside = `${path}.stale-${process.pid}`;
  try {
    await rename(path, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return true;
    throw error;
  }
  const moved = await readFile(aside, 'utf8').catch(() => '');
  if (moved !== stale) await link(aside, path).catch(() => undefined);
  await unlink(aside).catch(() => undefined);
  return moved === stale;
}

/**
 * Takes the run directory's lock (the directory must exist). Throws a RunLockedError naming the
 * holder when another live process has it, or when its holder cannot be checked (another host).
 */
export async function acquireRunLock(outputDir: string, options: AcquireRunLockOptions = {}): Promise<RunLock> {
  const path = join(outputDir, RUN_LOCK_FILE);
  const holder: RunLockHolder = { pid: process.pid, host: hostname(), since: new Date().toISOString() };
  for (let attempt = 0; attempt < 5; attempt++) {
    if (await createExclusive(path, holder)) return heldLock(path, holder);
    const text = await readFile(path, 'utf8').catch(() => undefined);
    if (text === undefined) continue;
    const other = parseHolder(text);
    if (other !== undefined && (other.host !== holder.host || isWriterAlive(other.pid))) {
      const sameHost = other.host === holder.host;
      throw new RunLockedError(`${outputDir} is in use by another kiln run (${describeHolder(other)})`, {
        hint: sameHost
          ? `Wait for that run to finish (or stop it: kill ${other.pid}), or write this run to another directory (--output).`
          : `Use another directory (--output), or, if the run on ${other.host} is no longer running, delete ${path}.`,
      });
    }
    if (other === undefined && attempt === 0) {
      // A lock being written right now reads empty: look again before calling it stale.
      await new Promise((resolve) => setTimeout(resolve, 50));
      continue;
    }
    if (await removeStale(path, text)) {
      options.notice?.(
        `taking over the lock of ${outputDir}: ${other === undefined ? 'its lock file was unreadable' : `its writer (${describeHolder(other)}) no longer runs`}`,
      );
    }
  }
  throw new RunLockedError(`${outputDir}: could not take the run lock ${path} (other processes keep taking it)`, {
    hint: 'Only one kiln run may write a run directory at a time; use another directory (--output).',
  });
}

function heldLock(path: string, holder: RunLockHolder): RunLock {
  const content = `${JSON.stringify(holder)}\n`;
  const ours = (text: string | undefined): boolean => text === content;
  // process.exit (a second Ctrl+C) skips finally blocks: remove the lock on the way out.
  const onExit = (): void => {
    try {
      if (ours(readFileSync(path, 'utf8'))) unlinkSync(path);
    } catch {
      // Already gone.
    }
  };
  process.once('exit', onExit);
  let released = false;
  return {
    path,
    holder,
    async release() {
      if (released) return;
      released = true;
      process.off('exit', onExit);
      if (ours(await readFile(path, 'utf8').catch(() => undefined))) await unlink(path).catch(() => undefined);
    },
  };
}
