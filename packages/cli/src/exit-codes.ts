/**
 * Exit codes and how errors are shown. 0 ok, 1 failure, 2 bad usage, config or data (the user
 * must change the command or its inputs), 130 interrupted (SIGINT, after a checkpoint), 143
 * terminated (SIGTERM, after a checkpoint).
 */
import { CommanderError } from 'commander';
import { KilnError } from '@kiln/core';

/** The exit codes of `kiln`. */
export const ExitCode = {
  /** Success. */
  ok: 0,
  /** The command failed (training diverged, a backend failed, an unexpected error). */
  failure: 1,
  /** Bad usage: unknown option or command, bad argument, bad config, bad data, unknown device. */
  usage: 2,
  /** Interrupted by SIGINT (a checkpoint was written first). */
  interrupted: 130,
  /** Terminated by SIGTERM (docker stop, systemd, a scheduler); a checkpoint was written first. */
  terminated: 143,
} as const;

const USAGE_CODES = new Set(['CONFIG_ERROR', 'DATA_ERROR', 'INVALID_ARGUMENT']);
const USAGE_MARKER = Symbol.for('kiln.cli.usage-error');

/** Marks an error (e.g. a device name no installed backend has) as bad usage: exit code 2. */
export function markUsageError<T>(error: T): T {
  if (typeof error === 'object' && error !== null) (error as Record<symbol, unknown>)[USAGE_MARKER] = true;
  return error;
}

/** The exit code an error maps to. */
export function exitCodeFor(error: unknown): number {
  if (error instanceof CommanderError) return error.exitCode === 0 ? ExitCode.ok : ExitCode.usage;
  if (typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[USAGE_MARKER] === true)
    return ExitCode.usage;
  if (KilnError.isInstance(error) && USAGE_CODES.has(error.code)) return ExitCode.usage;
  return ExitCode.failure;
}

/** The lines to print for an error: `error: <message>` with its hint; the stack only when debugging. */
export function describeError(error: unknown, debug: boolean): string {
  const message = error instanceof Error ? error.message : String(error);
  const lines = [`error: ${message}`];
  if (KilnError.isInstance(error) && error.hint !== undefined && !message.includes(error.hint)) {
    lines.push(`  hint: ${error.hint}`);
  }
  if (debug && error instanceof Error) {
    if (error.stack !== undefined) lines.push(error.stack);
    let cause = error.cause;
    while (cause !== undefined && cause !== null) {
      lines.push(`caused by: ${cause instanceof Error ? (cause.stack ?? cause.message) : String(cause)}`);
      cause = cause instanceof Error ? cause.cause : undefined;
    }
  }
  return lines.join('\n');
}
