import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  getFallbackPolicy,
  reportDTypeFallback,
  resetFallbackWarnings,
  setFallbackPolicy,
  setWarningHandler,
} from '../src/backend/fallback-policy.js';
import { InvalidArgumentError, UnsupportedKernelError } from '../src/errors.js';

describe('fallback policy', () => {
  let savedEnv: string | undefined;
  const messages: string[] = [];

  beforeEach(() => {
    savedEnv = process.env.KILN_FALLBACK;
    delete process.env.KILN_FALLBACK;
    messages.length = 0;
    setWarningHandler((message) => messages.push(message));
  });

  afterEach(() => {
    if (savedEnv === undefined) delete process.env.KILN_FALLBACK;
    else process.env.KILN_FALLBACK = savedEnv;
    setFallbackPolicy(undefined);
    setWarningHandler(undefined);
    resetFallbackWarnings();
  });

  it("defaults to 'warn', reads KILN_FALLBACK, and lets an explicit setting win", () => {
    expect(getFallbackPolicy({})).toBe('warn');
    expect(getFallbackPolicy({ KILN_FALLBACK: 'error' })).toBe('error');
    expect(getFallbackPolicy({ KILN_FALLBACK: ' Allow ' })).toBe('allow');
    expect(getFallbackPolicy({ KILN_FALLBACK: '' })).toBe('warn');
    setFallbackPolicy('allow');
    expect(getFallbackPolicy({ KILN_FALLBACK: 'error' })).toBe('allow');
    setFallbackPolicy(undefined);
    expect(getFallbackPolicy({ KILN_FALLBACK: 'error' })).toBe('error');
  });

  it('uses process.env by default', () => {
    process.env.KILN_FALLBACK = 'error';
    expect(getFallbackPolicy()).toBe('error');
  });

  it('rejects an invalid KILN_FALLBACK or setting, naming the allowed values', () => {
    expect(() => getFallbackPolicy({ KILN_FALLBACK: 'loud' })).toThrow(InvalidArgumentError);
    expect(() => getFallbackPolicy({ KILN_FALLBACK: 'loud' })).toThrow(/KILN_FALLBACK="loud".*error, warn, allow/);
    expect(() => setFallbackPolicy('sometimes' as never)).toThrow(/error, warn, allow/);
    expect(() => setWarningHandler('console' as never)).toThrow(InvalidArgumentError);
  });

  it("'error' throws UnsupportedKernelError naming backend, kernel and dtype, with a hint", () => {
    setFallbackPolicy('error');
    let caught: unknown;
    try {
      reportDTypeFallback('metal', 'softmax', 'bf16');
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(UnsupportedKernelError);
    expect((caught as UnsupportedKernelError).message).toContain('metal has no softmax kernel for bf16');
    expect((caught as UnsupportedKernelError).hint).toMatch(/KILN_FALLBACK=warn/);
    expect(messages).toEqual([]);
  });

  it("'warn' warns once per (backend, kernel, dtype)", () => {
    reportDTypeFallback('metal', 'softmax', 'bf16');
    reportDTypeFallback('metal', 'softmax', 'bf16');
    reportDTypeFallback('metal', 'softmax', 'f16');
    reportDTypeFallback('metal', 'rmsNorm', 'bf16');
    reportDTypeFallback('cuda', 'softmax', 'bf16');
    expect(messages).toHaveLength(4);
    expect(messages[0]).toContain('metal has no softmax kernel for bf16');
    expect(messages[0]).toMatch(/f32/);
    resetFallbackWarnings();
    reportDTypeFallback('metal', 'softmax', 'bf16');
    expect(messages).toHaveLength(5);
  });

  it("'allow' is silent", () => {
    setFallbackPolicy('allow');
    reportDTypeFallback('metal', 'softmax', 'bf16');
    expect(messages).toEqual([]);
  });

  it('the default handler emits a process warning with code KILN_FALLBACK', () => {
    setWarningHandler(undefined);
    const emit = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    try {
      reportDTypeFallback('cpu', 'attention', 'f16');
      expect(emit).toHaveBeenCalledTimes(1);
      expect(emit.mock.calls[0][0]).toContain('cpu has no attention kernel for f16');
      expect(emit.mock.calls[0][1]).toEqual({ code: 'KILN_FALLBACK' });
    } finally {
      emit.mockRestore();
    }
  });

  it('keeps its state on globalThis, shared by every copy of core', () => {
    setFallbackPolicy('error');
    const shared = (globalThis as Record<symbol, { policy?: string }>)[Symbol.for('kiln.fallback-policy')];
    expect(shared?.policy).toBe('error');
  });
});
