/**
 * Removing what a killed writer left behind: temporary checkpoint directories
 * (`step-N.tmp-<pid>-…`, `step-N.old-<pid>-…`) and half-written atomic files
 * (`.<name>.<pid>.<hex>.tmp`) in the checkpoints folder and the run directory, once the process
 * that made them is gone. A process killed inside fsync can take a while to exit (and a killed
 * child stays a zombie until its parent reaps it), so a run that starts right after the kill may
 * still see the writer alive: cleanup therefore also runs after every checkpoint save, when the
 * killed writer is long gone. A zombie counts as gone.
 */
import { readFileSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { atomicTemporaryOwner, checkpointsDirectory, temporaryOwner } from './layout.js';

/** True while process `pid` runs (a zombie, which can never write again, counts as gone). */
export function isWriterAlive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  return !isZombie(pid);
}

/** Linux: /proc/<pid>/stat's state field is Z (zombie) or X (dead) for a process that has exited. */
function isZombie(pid: number): boolean {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return false;
  }
  // "pid (command) state …": the command may contain spaces and parentheses, so read after the last ')'.
  const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  return state === 'Z' || state === 'X';
}

/** Removes leftovers of dead writers directly inside `directory`; `owner` tells whose an entry is (undefined: not a leftover). */
async function removeLeftovers(directory: string, owner: (name: string) => number | undefined): Promise<string[]> {
  const removed: string[] = [];
  for (const name of await readdir(directory).catch(() => [] as string[])) {
    const pid = owner(name);
    if (pid === undefined || isWriterAlive(pid)) continue;
    await rm(join(directory, name), { recursive: true, force: true });
    removed.push(join(directory, name));
  }
  return removed;
}

/**
 * Deletes the temporary checkpoint directories and half-written atomic files that writers which
 * no longer run left in `outputDir` and its checkpoints folder; returns their paths.
 */
export async function cleanTemporaryCheckpoints(outputDir: string): Promise<string[]> {
  const checkpoints = checkpointsDirectory(outputDir);
  return [
    ...(await removeLeftovers(checkpoints, (name) => temporaryOwner(name) ?? atomicTemporaryOwner(name))),
    ...(await removeLeftovers(outputDir, atomicTemporaryOwner)),
  ];
}
