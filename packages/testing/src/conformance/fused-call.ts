/** Calls a fused kernel on both sides: natively, or through core's composed fallback on the backend under test. */
import type { FusedKernelName, KernelBackend } from '@kiln/core';
import { composedKernels } from '@kiln/core';
import type { CaseContext, Side } from './case-context.js';
import type { KernelMode } from './case-builder.js';

/** The arguments of fused kernel K (after the backend, for the composed form). */
export type FusedArguments<K extends FusedKernelName> = Parameters<NonNullable<KernelBackend[K]>>;

type AnyKernel = (...args: unknown[]) => void;

/** Runs fused kernel `kernel` on the tested side (natively or composed per `mode`), then natively on the reference. */
export function runFused<K extends FusedKernelName>(
  context: CaseContext,
  mode: KernelMode,
  kernel: K,
  argumentsFor: (side: Side) => FusedArguments<K>,
): void {
  context.onBoth((backend, side) => {
    const args = argumentsFor(side) as unknown[];
    if (side === 'tested' && mode === 'composed') {
      (composedKernels[kernel] as unknown as AnyKernel)(backend, ...args);
      return;
    }
    const method = backend[kernel] as unknown as AnyKernel | undefined;
    if (typeof method !== 'function')
      throw new TypeError(`${context.caseId}: ${side} backend '${backend.name}' has no ${kernel} method`);
    method.apply(backend, args);
  });
}

/** Runs fused kernel `kernel` on the reference only (to produce inputs such as a forward's saved outputs). */
export function runOnReference<K extends FusedKernelName>(
  context: CaseContext,
  kernel: K,
  args: FusedArguments<K>,
): void {
  const method = context.reference[kernel] as unknown as AnyKernel | undefined;
  if (typeof method !== 'function')
    throw new TypeError(`${context.caseId}: the reference backend has no ${kernel} method`);
  method.apply(context.reference, args as unknown[]);
}
