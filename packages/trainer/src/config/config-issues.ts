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
  /** How to fix this issue (configError joins the distinct hints of its issues). */
  hint?: string;
}

/** The hint of an unknown key. */
const KEY_HINT =
  'Keys are camelCase as in the TrainConfig reference (seed, device, model, data, optimizer, schedule, checkpoint, initFrom); fix the keys listed.';
/** The hint of a value of the wrong type or outside its range, when its key has no hint of its own. */
const VALUE_HINT =
  "Change each value listed to one of the type and within the range it names (docs/configuration.md gives each key's meaning and typical values).";

/** Why a key's range is what it is, for the keys whose limits are about meaning rather than type. */
const RANGE_HINTS: Readonly<Record<string, string>> = {
  'model.normEps':
    'model.normEps is added to the mean square inside RMSNorm: typical values are 1e-5 or 1e-6; a large one flattens every activation and the model cannot learn.',
  'model.ropeTheta':
    'model.ropeTheta is the base of the rotary frequencies: typical values are 10000 to 1000000; at 1 or below every pair rotates alike and positions cannot be told apart.',
  'optimizer.lr':
    'optimizer.lr is the AdamW step size: typical values are 1e-4 to 3e-3; a step of 1 or more moves every weight by about its whole scale.',
  'optimizer.eps':
    "optimizer.eps keeps AdamW's division finite: typical values are 1e-8 to 1e-6; a large one shrinks every update to nothing.",
  'optimizer.beta1':
    "optimizer.beta1 and beta2 are the decay rates of AdamW's moment averages: at least 0 and below 1 (typical 0.9 and 0.95 to 0.999).",
  'optimizer.beta2':
    "optimizer.beta1 and beta2 are the decay rates of AdamW's moment averages: at least 0 and below 1 (typical 0.9 and 0.95 to 0.999).",
};

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
      return (
        TYPE_NAMES[issue.expected === 'number' && isIntegerAt(issue.path) ? 'int' : issue.expected] ?? issue.expected
      );
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
        const advice =
          suggestion === undefined ? `known keys here: ${known.join(', ')}` : `did you mean '${suggestion}'?`;
        issues.push({
          source,
          path: dottedPath([...issue.path, key]),
          message: `unknown key, ${advice}`,
          hint: KEY_HINT,
        });
      }
      continue;
    }
    const got = describeValue(valueAt(raw, issue.path));
    const path = dottedPath(issue.path);
    issues.push({
      source,
      path,
      message: `expected ${expectedOf(issue)}, got ${got}`,
      hint: RANGE_HINTS[path] ?? VALUE_HINT,
    });
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
  // Each issue brings the hint that fits it (a key, a range, a divisibility): the distinct ones, in order.
  const hints = [...new Set(issues.map((issue) => issue.hint ?? VALUE_HINT))];
  return new ConfigError(`invalid training config (${issues.length} ${noun}):${lines}`, { hint: hints.join(' ') });
}
