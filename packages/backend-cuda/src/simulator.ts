/**
 * Test-only: the CUDA backend running on the CPU simulator addon (kiln_cuda_sim.node, built in
 * the workspace from the same .cu and host sources with @kiln/gpu-sim). Not exported from the
 * package: the simulator is a test vehicle, not something to train on.
 */
import { simulatorAddon as lazySimulatorAddon } from '@kiln/core/native-backend';
import { CudaBackend, type CudaBackendOptions } from './cuda-backend.js';
import type { CudaAddon, SimulatorConfiguration } from './native/addon-types.js';
import { loadSimulatorAddon } from './native/load-addon.js';

const simulator = lazySimulatorAddon<CudaAddon, SimulatorConfiguration>(() => loadSimulatorAddon());

/** The simulator addon (throws when it was not built). */
export const simulatorAddon = (): CudaAddon => simulator.addon();

/** True when the simulator addon exists and loads. */
export const simulatorAvailable = (): boolean => simulator.available();

/** Reshapes the simulated machine (driver version, devices, memory, engine workers, injected faults). */
export function configureSimulator(configuration: SimulatorConfiguration): void {
  simulator.configure(configuration);
}

/** A CudaBackend whose kernels run in the simulator. */
export function createSimulatedCudaBackend(options: CudaBackendOptions = {}): CudaBackend {
  return new CudaBackend(simulator.addon(), options);
}
