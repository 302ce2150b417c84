// The full conformance kit on a real GPU: runs where probe() finds a usable device, and is
// reported skipped with probe()'s reason everywhere else (this CI machine has no GPU or driver).
import { describeBackendConformance } from '@kiln/testing';
import { cudaBackendPlugin } from '../src/index.js';

const probe = cudaBackendPlugin.probe() as { available: boolean; reason?: string };

describeBackendConformance('cuda (GPU)', {
  create: () => cudaBackendPlugin.create(),
  available: probe.available,
  unavailableReason: probe.reason,
});
