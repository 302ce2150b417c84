/**
 * What core does when a backend has no kernel for a dtype (say bf16 softmax): cast the inputs to
 * f32, run the f32 kernel, cast back. The policy decides whether that is an error, a one-time
 * warning per (backend, kernel, dtype), or silent. State lives on globalThis so two installed
 * copies of @kiln/core agree.
 */
import type { DType } from '../dtype.js';
import { InvalidArgumentError, UnsupportedKernelError } from '../errors.js';
import type { KernelName } from './kernel-backend.js';

/** 'error': throw UnsupportedKernelError; 'warn': run in f32 and warn once; 'allow': run in f32 silently. */
export type FallbackPolicy = 'error' | 'warn' | 'allow';

/** Every fallback policy, in order of strictness. */
export const FALLBACK_POLICIES: readonly FallbackPolicy[] = ['error', 'warn', 'allow'];

/** Receives each warning message kiln emits about fallbacks. */
export type WarningHandler = (message: string) => void;

interface FallbackState {
  policy: FallbackPolicy | undefined;
  handler: WarningHandler | undefined;
  warned: Set<string>;
}

const STATE_KEY = Symbol.for('kiln.fallback-policy');

function state(): FallbackState {
  const global = globalThis as Record<symbol, FallbackState | undefined>;
  global[STATE_KEY] ??= { policy: undefined, handler: undefined, warned: new Set() };
  return global[STATE_KEY];
}

/** Set the process-wide policy; undefined goes back to KILN_FALLBACK or the default 'warn'. */
export function setFallbackPolicy(policy: FallbackPolicy | undefined): void {
  if (policy !== undefined && !isFallbackPolicy(policy)) {
    throw invalidPolicy(`setFallbackPolicy(${JSON.stringify(policy)})`);
  }
  state().policy = policy;
}

/** The policy in force: the explicit setting, else KILN_FALLBACK from `env`, else 'warn'. */
export function getFallbackPolicy(env: NodeJS.ProcessEnv = defaultEnv()): FallbackPolicy {
  const explicit = state().policy;
  if (explicit !== undefined) return explicit;
  const fromEnv = env.KILN_FALLBACK?.trim().toLowerCase();
  if (fromEnv === undefined || fromEnv === '') return 'warn';
  if (!isFallbackPolicy(fromEnv)) throw invalidPolicy(`KILN_FALLBACK=${JSON.stringify(env.KILN_FALLBACK)}`);
  return fromEnv;
}

/**
 * Called by core before composing an f32 fallback for `kernel` on `dtype`: throws under 'error',
 * warns once per (backend, kernel, dtype) under 'warn', does nothing under 'allow'.
 */
export function reportDTypeFallback(backendName: string, kernel: KernelName, dtype: DType): void {
  const policy = getFallbackPolicy();
  if (policy === 'allow') return;
  const what = `${backendName} has no ${kernel} kernel for ${dtype}`;
  if (policy === 'error') {
    throw new UnsupportedKernelError(what, {
      hint: `Set KILN_FALLBACK=warn (or setFallbackPolicy('warn')) to run it in f32 and cast back, or use f32 tensors.`,
    });
  }
  const current = state();
  const key = `${backendName}\u0000${kernel}\u0000${dtype}`;
  if (current.warned.has(key)) return;
  current.warned.add(key);
  const message = `${what}; kiln runs it in f32 and casts back (slower, more memory). Set KILN_FALLBACK=allow to silence this or KILN_FALLBACK=error to forbid it.`;
  (current.handler ?? defaultWarningHandler)(message);
}

/** Route fallback warnings to `handler`; undefined restores the default (process.emitWarning, code KILN_FALLBACK). */
export function setWarningHandler(handler: WarningHandler | undefined): void {
  if (handler !== undefined && typeof handler !== 'function') {
    throw new InvalidArgumentError(`setWarningHandler expects a function or undefined, got ${typeof handler}`, {
      hint: 'Pass (message) => { ... } or undefined to restore the default.',
    });
  }
  state().handler = handler;
}

/** Forget which fallbacks were already warned about, so they warn again (for tests). */
export function resetFallbackWarnings(): void {
  state().warned.clear();
}

/** True when `value` is 'error', 'warn' or 'allow'. */
export function isFallbackPolicy(value: unknown): value is FallbackPolicy {
  return value === 'error' || value === 'warn' || value === 'allow';
}

function invalidPolicy(where: string): InvalidArgumentError {
  return new InvalidArgumentError(
    `${where} is not a fallback policy; allowed values: ${FALLBACK_POLICIES.join(', ')}`,
    {
      hint: "Use 'error' to forbid f32 fallbacks, 'warn' (default) to warn once, or 'allow' to run them silently.",
    },
  );
}

function defaultWarningHandler(message: string): void {
  if (typeof process !== 'undefined' && typeof process.emitWarning === 'function') {
    process.emitWarning(message, { code: 'KILN_FALLBACK' });
  } else {
    console.warn(message);
  }
}

function defaultEnv(): NodeJS.ProcessEnv {
  return typeof process !== 'undefined' ? process.env : {};
}
