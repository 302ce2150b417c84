// The matmul and attention kits on a simulated GPU without simdgroup matrices (AMD and Intel
// Macs): the plan then picks the threadgroup-tiled matmul and the scalar flash-attention forward,
// which the full kit (on an Apple9-like GPU) never runs.
import { describeBackendConformance } from '@kiln/testing';
import { configureSimulator, createSimulatedMetalBackend } from '../src/simulator.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

describeBackendConformance('metal (CPU simulator, GPU without simdgroup matrices)', {
  create: () => {
    configureSimulator({ simdgroupMatrix: false, family: 'mac2', name: 'AMD Radeon Pro 5500M (simulated)' });
    return createSimulatedMetalBackend();
  },
  available: skipReason === undefined,
  unavailableReason: skipReason,
  kernels: ['matmul', 'attention', 'attentionBackward'],
});
