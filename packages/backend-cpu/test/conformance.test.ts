// The shared conformance kit on the default path: WebAssembly SIMD kernels (relaxed-SIMD FMA where
// the runtime has it) with the default thread count, every primitive and fused kernel against
// core's float64 reference.
import { describeBackendConformance } from '@kiln/testing';
import { createCpuBackend } from '../src/index.js';

describeBackendConformance('cpu (wasm simd)', {
  create: () => createCpuBackend({ simd: true }),
  available: () => createCpuBackend({ simd: true }).settings.path === 'wasm-simd',
  unavailableReason: 'this runtime does not validate WebAssembly SIMD128',
});
