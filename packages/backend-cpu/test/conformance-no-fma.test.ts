// The shared conformance kit on the SIMD path built without relaxed SIMD (multiply then add
// instead of fused multiply-add: what runtimes without relaxed SIMD run), on one thread.
import { describeBackendConformance } from '@kiln/testing';
import { createCpuBackend } from '../src/index.js';

describeBackendConformance('cpu (wasm simd, no fma, 1 thread)', {
  create: () => createCpuBackend({ simd: true, relaxedSimd: false, threads: 1 }),
  available: () => createCpuBackend({ simd: true, relaxedSimd: false }).settings.path === 'wasm-simd',
  unavailableReason: 'this runtime does not validate WebAssembly SIMD128',
});
