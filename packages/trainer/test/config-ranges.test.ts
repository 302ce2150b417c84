/**
 * Numeric keys are checked against what is meaningful, not only their type (a normEps of 1e300
 * trains nothing), and every ConfigError's hint fits its problems: a range names the key's
 * typical values, a divisibility names values that divide, an unknown key the key rules.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError } from '@kiln/core';
import { loadTrainConfig } from '../src/config/load-train-config.js';

function refusal(text: string): ConfigError {
  try {
    loadTrainConfig({ text, file: 'run.yaml' });
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error(`expected a ConfigError for ${text}`);
}

describe('meaningful ranges', () => {
  it.each([
    [
      'model: { normEps: 1e300 }',
      'run.yaml: model.normEps: expected a number ≤ 0.01, got 1e+300',
      /model\.normEps is added to the mean square inside RMSNorm: typical values are 1e-5 or 1e-6/,
    ],
    [
      'model: { ropeTheta: 1 }',
      'run.yaml: model.ropeTheta: expected a number > 1, got 1',
      /typical values are 10000 to 1000000/,
    ],
    [
      'optimizer: { lr: -1 }',
      'run.yaml: optimizer.lr: expected a number > 0, got -1',
      /optimizer\.lr is the AdamW step size: typical values are 1e-4 to 3e-3/,
    ],
    ['optimizer: { lr: 5 }', 'run.yaml: optimizer.lr: expected a number < 1, got 5', /AdamW step size/],
    [
      'optimizer: { eps: 0.5 }',
      'run.yaml: optimizer.eps: expected a number ≤ 0.01, got 0.5',
      /typical values are 1e-8 to 1e-6/,
    ],
    [
      'optimizer: { beta2: 1 }',
      'run.yaml: optimizer.beta2: expected a number < 1, got 1',
      /decay rates of AdamW's moment averages/,
    ],
  ])('%s is refused with the range and why', (text, line, hint) => {
    const error = refusal(text);
    expect(error.message).toContain(line);
    expect(error.hint).toMatch(hint);
    expect(error.hint).not.toMatch(/camelCase/);
  });

  it('refuses a weight decay that wipes the weights out each step (lr × weightDecay ≥ 1)', () => {
    const error = refusal('optimizer: { lr: 0.5, weightDecay: 2 }');
    expect(error.message).toContain(
      'run.yaml: optimizer.weightDecay: expected optimizer.lr × optimizer.weightDecay < 1, got 0.5 × 2',
    );
    expect(error.hint).toMatch(/1 − lr × weightDecay/);
  });

  it('accepts the usual values', () => {
    expect(() =>
      loadTrainConfig({
        text: 'model: { normEps: 1e-6, ropeTheta: 500000 }\noptimizer: { lr: 3e-4, eps: 1e-6, beta2: 0.999 }',
      }),
    ).not.toThrow();
  });
});

describe('hints that fit the error (issue 16, item 13)', () => {
  it('dModel 60 with nHead 8: values that divide, not the key rules', () => {
    const error = refusal('model: { dModel: 60, nHead: 8 }');
    expect(error.message).toContain('run.yaml: model.dModel: expected a multiple of model.nHead (8), got 60');
    expect(error.hint).toBe(
      'The head size dModel / nHead must be a whole even number: use model.dModel 48 or 64 (multiples of 2 × nHead = 16), or model.nHead 6 or 10 (head size 10 or 6).',
    );
  });

  it('an odd head size gets the same fix', () => {
    const error = refusal('model: { dModel: 24, nHead: 8 }');
    expect(error.message).toContain(
      'expected an even head size dModel / nHead (rotary embeddings rotate pairs), got 24 / 8 = 3',
    );
    expect(error.hint).toMatch(
      /use model\.dModel 16 or 32 \(multiples of 2 × nHead = 16\), or model\.nHead 6 or 12 \(head size 4 or 2\)/,
    );
  });

  it('batch sizes name a multiple and the divisors', () => {
    const error = refusal('schedule: { batchSize: 10, microBatchSize: 4 }');
    expect(error.hint).toBe(
      'Set schedule.batchSize to a multiple of 4 (8 or 12), or schedule.microBatchSize to a divisor of 10.',
    );
  });

  it('nKvHead names the divisors of nHead', () => {
    expect(refusal('model: { nHead: 6, nKvHead: 4, dModel: 96 }').hint).toMatch(
      /^Set model\.nKvHead to a divisor of model\.nHead: 1, 2, 3, 6/,
    );
  });

  it('an unknown key keeps the key rules; a type error gets the value hint; both together get both', () => {
    expect(refusal('model: { dmodel: 64 }').hint).toMatch(/^Keys are camelCase/);
    expect(refusal('seed: "x"').hint).toMatch(
      /^Change each value listed to one of the type and within the range it names/,
    );
    const both = refusal('model: { dmodel: 64, normEps: 2 }');
    expect(both.hint).toMatch(/Keys are camelCase/);
    expect(both.hint).toMatch(/model\.normEps is added to the mean square/);
  });
});
