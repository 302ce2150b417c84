// The whole test of a backend: kiln's conformance kit runs every primitive against core's float64
// reference (random inputs, odd and empty shapes, every dtype), core's composed fused kernels on
// top of them, gradient checks, argument errors and a leak check after every case.
import { describeBackendConformance } from '@kiln/testing';
import { BACKEND_NAME, plugin } from '../src/index.js';

describeBackendConformance(BACKEND_NAME, {
  create: () => plugin.create(),
  // A real device backend skips (with the reason) where its hardware is absent.
  available: async () => (await plugin.probe()).available,
  unavailableReason: 'the example device is not available here',
});
