// The full conformance kit on the CUDA backend running the real kernel sources in the CPU
// simulator: every primitive, random and the fused kernels natively; f16/bf16 matmuls run the
// sm_90a wgmma + TMA kernel for problems of at least two 128×128 tiles per simulated
// multiprocessor with TMA-aligned operands (the simulated device reports compute capability 9.0
// with sm_90a code), the pipelined mma.sync tensor-core kernel for the rest (operands whose rows
// are not whole 16-byte chunks take the WMMA kernel), on gpu-sim's emulated warpgroup and warp
// collectives, mbarriers, TMA, ldmatrix and cp.async (not a scalar twin).
import { describeBackendConformance } from '@kiln/testing';
import { createSimulatedCudaBackend } from '../src/simulator.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

describeBackendConformance(
  'cuda (CPU simulator; f16/bf16 matmul = wgmma + TMA for large problems, mma.sync below, WMMA for unaligned operands, on emulated tensor-core collectives)',
  {
    create: () => createSimulatedCudaBackend({ matmul: 'kiln' }),
    available: skipReason === undefined,
    unavailableReason: skipReason,
  },
);
