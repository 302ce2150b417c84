import { CommanderError } from 'commander';
import { describe, expect, it } from 'vitest';
import {
  BackendUnavailableError,
  CheckpointError,
  ConfigError,
  DataError,
  InvalidArgumentError,
  NonFiniteError,
  OutOfMemoryError,
  RunLockedError,
} from '@kiln/core';
import { describeError, exitCodeFor, ExitCode, markUsageError } from '../src/exit-codes.js';

describe('exit codes', () => {
  it('maps bad usage, config and data to 2', () => {
    expect(exitCodeFor(new ConfigError('bad config'))).toBe(ExitCode.usage);
    expect(exitCodeFor(new DataError('bad data'))).toBe(ExitCode.usage);
    expect(exitCodeFor(new InvalidArgumentError('bad argument'))).toBe(ExitCode.usage);
    expect(exitCodeFor(new CommanderError(1, 'commander.unknownOption', 'unknown option'))).toBe(ExitCode.usage);
    expect(exitCodeFor(markUsageError(new BackendUnavailableError('no such backend')))).toBe(ExitCode.usage);
  });

  it('maps other failures to 1 and help/version to 0', () => {
    expect(exitCodeFor(new BackendUnavailableError('cuda is unavailable'))).toBe(ExitCode.failure);
    expect(exitCodeFor(new CheckpointError('damaged'))).toBe(ExitCode.failure);
    expect(exitCodeFor(new RunLockedError('in use'))).toBe(ExitCode.failure);
    expect(exitCodeFor(new NonFiniteError('loss inf'))).toBe(ExitCode.failure);
    expect(exitCodeFor(new OutOfMemoryError('full', 1024))).toBe(ExitCode.failure);
    expect(exitCodeFor(new Error('unexpected'))).toBe(ExitCode.failure);
    expect(exitCodeFor(new CommanderError(0, 'commander.version', '0.1.0'))).toBe(ExitCode.ok);
  });

  it('prints the message and hint, and the stack only when debugging', () => {
    const error = new ConfigError('tiny.yaml: schedule.stepz: unknown key', { hint: "did you mean 'steps'?" });
    const plain = describeError(error, false);
    expect(plain).toMatch(/^error: tiny\.yaml: schedule\.stepz: unknown key/);
    expect(plain).toContain("hint: did you mean 'steps'?");
    expect(plain.match(/hint:/g)).toHaveLength(1);
    expect(plain).not.toMatch(/\n\s+at /);
    expect(describeError(error, true)).toMatch(/\n\s+at /);
  });
});
