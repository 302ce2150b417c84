// The full conformance kit on the CUDA backend running the real kernel sources in the CPU
// simulator (every primitive, random, and the composed fallbacks of every fused kernel).
import { describeBackendConformance } from '@kiln/core/testing';
import { createSimulatedCudaBackend } from '../src/simulator.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

describeBackendConformance('cuda (CPU simulator)', {
  create: () => createSimulatedCudaBackend(),
  available: skipReason === undefined,
  unavailableReason: skipReason,
});
