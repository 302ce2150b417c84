// The full conformance kit on the real GPU: runs where probe() finds a usable Metal device (the
// macOS job of .github/workflows/ci.yml), and is reported skipped with probe()'s reason
// everywhere else (these CI machines run Linux).
import { describeBackendConformance } from '@kiln/testing';
import { metalBackendPlugin } from '../src/index.js';

const probe = metalBackendPlugin.probe() as { available: boolean; reason?: string };

describeBackendConformance('metal (GPU)', {
  create: () => metalBackendPlugin.create(),
  available: probe.available,
  unavailableReason: probe.reason,
});
