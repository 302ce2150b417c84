// The shared conformance kit: every primitive and fused kernel against core's float64 reference.
import { describeBackendConformance } from '@kiln/core/testing';
import { createCpuBackend } from '../src/index.js';

describeBackendConformance('cpu', { create: () => createCpuBackend() });
