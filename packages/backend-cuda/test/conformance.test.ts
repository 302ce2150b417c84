// The full conformance kit on the CUDA backend running the real kernel sources in the CPU
// simulator: every primitive, random and the fused kernels natively; f16/bf16 matmuls run the
// tensor-core (WMMA) kernel on gpu-sim's emulated warp-collective fragments (not a scalar twin).
import { describeBackendConformance } from '@kiln/testing';
import { createSimulatedCudaBackend } from '../src/simulator.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

describeBackendConformance('cuda (CPU simulator; f16/bf16 matmul = WMMA kernel on emulated warp-collective fragments)', {
  create: () => createSimulatedCudaBackend({ matmul: 'kiln' }),
  available: skipReason === undefined,
  unavailableReason: skipReason,
});
