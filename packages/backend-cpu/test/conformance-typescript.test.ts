// The shared conformance kit on the fallback path: the plain TypeScript kernels (KILN_CPU_SIMD=0).
import { describeBackendConformance } from '@kiln/testing';
import { createCpuBackend } from '../src/index.js';

describeBackendConformance('cpu (typescript)', { create: () => createCpuBackend({ simd: false }) });
