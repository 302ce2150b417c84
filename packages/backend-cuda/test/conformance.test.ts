// The full conformance kit on the CUDA backend running the real kernel sources in the CPU
// simulator: every primitive, random and the fused kernels natively; f16/bf16 matmuls run the
// pipelined mma.sync tensor-core kernel (the simulated device reports compute capability 9.0;
// operands whose rows are not whole 16-byte chunks take the WMMA kernel) on gpu-sim's emulated
// warp-collective fragments, ldmatrix and cp.async (not a scalar twin).
import { describeBackendConformance } from '@kiln/testing';
import { createSimulatedCudaBackend } from '../src/simulator.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

describeBackendConformance('cuda (CPU simulator; f16/bf16 matmul = mma.sync kernel, WMMA for unaligned operands, on emulated warp-collective fragments)', {
  create: () => createSimulatedCudaBackend({ matmul: 'kiln' }),
  available: skipReason === undefined,
  unavailableReason: skipReason,
});
