/** What every command gets: the terminal, the debug flag, and the exit code it may set. */
import { readFileSync } from 'node:fs';
import { InvalidArgumentError as CommanderArgumentError } from 'commander';
import type { Terminal } from './output/terminal.js';

/** Shared state of one CLI run. */
export interface CliContext {
  /** Where output goes. */
  terminal: Terminal;
  /** Exit code the command chose (default 0); errors thrown out of a command map through exitCodeFor. */
  exitCode: number;
}

/** The @kiln/cli version (from its package.json). */
export function cliVersion(): string {
  try {
    const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
      version?: string;
    };
    return manifest.version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}

/** Commander argument parser for a whole number ≥ minimum (a bad value is a usage error). */
export function integerArgument(minimum: number): (value: string) => number {
  return (value) => {
    const parsed = Number(value);
    if (!/^[+-]?\d+$/.test(value.trim()) || !Number.isSafeInteger(parsed) || parsed < minimum) {
      throw new CommanderArgumentError(`expected a whole number ≥ ${minimum}, got '${value}'.`);
    }
    return parsed;
  };
}

/** Commander argument parser for --cuda-graph. */
export const cudaGraphArgument = choiceArgument(['auto', 'off'] as const);

/** Commander argument parser for one of `choices` (named in the error when it is something else). */
export function choiceArgument<T extends string>(choices: readonly T[]): (value: string) => T {
  return (value) => {
    if (!(choices as readonly string[]).includes(value))
      throw new CommanderArgumentError(`expected one of ${choices.join(', ')}, got '${value}'.`);
    return value as T;
  };
}

/** Commander argument parser for a finite number within [minimum, maximum]. */
export function numberArgument(minimum: number, maximum = Number.POSITIVE_INFINITY): (value: string) => number {
  return (value) => {
    const parsed = Number(value);
    if (value.trim() === '' || !Number.isFinite(parsed) || parsed < minimum || parsed > maximum) {
      const range = Number.isFinite(maximum) ? `between ${minimum} and ${maximum}` : `≥ ${minimum}`;
      throw new CommanderArgumentError(`expected a number ${range}, got '${value}'.`);
    }
    return parsed;
  };
}
