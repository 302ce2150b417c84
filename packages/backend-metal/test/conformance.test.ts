// The full conformance kit on the Metal backend running the real .metal kernels in the CPU
// simulator (every primitive, random, and the composed fallbacks of every fused kernel), through
// the same host code and dispatch plan as the Metal addon.
import { describeBackendConformance } from '@kiln/core/testing';
import { createSimulatedMetalBackend } from '../src/simulator.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

describeBackendConformance('metal (CPU simulator)', {
  create: () => createSimulatedMetalBackend(),
  available: skipReason === undefined,
  unavailableReason: skipReason,
});
