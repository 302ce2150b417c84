/**
 * Config problems as readable lines — `<source>: <dotted.path>: expected <what>, got <value>` —
 * gathered into one ConfigError so a user fixes every mistake in one pass. Zod issues are
 * translated here; semantic checks produce the same shape.
 */
import { ConfigError } from '@kiln/core';
import type { z } from 'zod';
import { isIntegerAt, knownKeysAt } from './schema.js';
import { nearestKey } from './suggest-key.js';

/** One problem of a config. */
export interface ConfigIssue {
  /** Where the value came from: a file path, 'overrides' or 'defaults'. */
  source: string;
  /** Dotted path of the key ('' = the whole document). */
  path: string;
  /** What is wrong, e.g. "expected an integer ≥ 1, got 0". */
  message: string;
}

/** Dotted form of a path. */
export function dottedPath(path: readonly PropertyKey[]): string {
  return path.map(String).join('.');
}

/** The value at `path` of a plain object tree, or undefined. */
export function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let value = root;
  for (const segment of path) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<PropertyKey, unknown>)[segment];
  }
  return value;
}

/** A value as the user wrote it: strings quoted, sections and lists by kind. */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null (an empty value)';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a section (mapping)';
  if (typeof value === 'string') return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
  return String(value);
}

const TYPE_NAMES: Readonly<Record<string, string>> = {
  number: 'a number',
  int: 'an integer',
  string: 'a string',
  boolean: 'true or false',
  object: 'a section (mapping)',
};

function bound(issue: { minimum?: unknown; maximum?: unknown; inclusive?: boolean }, below: boolean): string {
  const limit = String(below ? issue.minimum : issue.maximum);
  if (below) return issue.inclusive ? `≥ ${limit}` : `> ${limit}`;
  return issue.inclusive ? `≤ ${limit}` : `< ${limit}`;
}

/** What a zod issue expected, as words. */
function expectedOf(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case 'invalid_type':
      // zod says 'number' for a non-number given to an integer field; the user needs 'an integer'.
      return TYPE_NAMES[issue.expected === 'number' && isIntegerAt(issue.path) ? 'int' : issue.expected] ?? issue.expected;
    case 'invalid_value':
      return `one of ${issue.values.map((value) => `'${String(value)}'`).join(', ')}`;
    case 'too_small':
    case 'too_big': {
      if (issue.origin === 'string') return 'a non-empty string';
      const kind = isIntegerAt(issue.path) ? 'an integer' : 'a number';
      return `${kind} ${bound(issue as { minimum?: unknown; maximum?: unknown; inclusive?: boolean }, issue.code === 'too_small')}`;
    }
    case 'invalid_format':
      return issue.path.join('.') === 'device.device'
        ? "a device name such as 'auto', 'cpu', 'cuda' or 'cuda:1'"
        : `a string matching ${issue.format}`;
    default:
      return issue.message;
  }
}

/** Readable issues of a failed parse of `raw` from `source`. */
export function schemaIssues(error: z.ZodError, raw: unknown, source: string): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  for (const issue of error.issues) {
    if (issue.code === 'unrecognized_keys') {
      const known = knownKeysAt(issue.path);
      for (const key of issue.keys) {
        const suggestion = nearestKey(key, known);
        const advice = suggestion === undefined ? `known keys here: ${known.join(', ')}` : `did you mean '${suggestion}'?`;
        issues.push({ source, path: dottedPath([...issue.path, key]), message: `unknown key, ${advice}` });
      }
      continue;
    }
    const got = describeValue(valueAt(raw, issue.path));
    issues.push({ source, path: dottedPath(issue.path), message: `expected ${expectedOf(issue)}, got ${got}` });
  }
  return issues;
}

/** One line of an issue. */
export function formatIssue(issue: ConfigIssue): string {
  return `${issue.source}: ${issue.path === '' ? '(top level)' : issue.path}: ${issue.message}`;
}

/** A ConfigError listing every issue, one per line. */
export function configError(issues: readonly ConfigIssue[]): ConfigError {
  const lines = issues.map((issue) => `\n  ${formatIssue(issue)}`).join('');
  const noun = issues.length === 1 ? 'problem' : 'problems';
  return new ConfigError(`invalid training config (${issues.length} ${noun}):${lines}`, {
    hint: 'Keys are camelCase as in the TrainConfig reference (seed, device, model, data, optimizer, schedule, checkpoint, initFrom); fix the values listed.',
  });
}
