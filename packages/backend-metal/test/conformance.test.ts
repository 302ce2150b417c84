// The full conformance kit on the Metal backend running the real .metal kernels in the CPU
// simulator (every primitive, random, flash attention and the other fused kernels natively), through
// the same host code and dispatch plan as the Metal addon.
import type { KernelName } from '@kiln/core';
import { describeBackendConformance } from '@kiln/testing';
import { createSimulatedMetalBackend } from '../src/simulator.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();
// scripts/tsan-kit.mjs narrows the kit to the primitives (KILN_KIT_KERNELS): under ThreadSanitizer the whole kit takes over 30 minutes.
const kernels = process.env.KILN_KIT_KERNELS ? (process.env.KILN_KIT_KERNELS.split(',') as KernelName[]) : undefined;

describeBackendConformance('metal (CPU simulator)', {
  create: () => createSimulatedMetalBackend(),
  available: skipReason === undefined,
  unavailableReason: skipReason,
  ...(kernels ? { kernels } : {}),
});
