/**
 * Test-only: the CUDA backend running on the CPU simulator addon (kiln_cuda_sim.node, built in
 * the workspace from the same .cu and host sources with @kiln/gpu-sim). Not exported from the
 * package: the simulator is a test vehicle, not something to train on.
 */
import { CudaBackend, type CudaBackendOptions } from './cuda-backend.js';
import type { CudaAddon, SimulatorConfiguration } from './native/addon-types.js';
import { loadSimulatorAddon } from './native/load-addon.js';

let addon: CudaAddon | undefined;

/** The simulator addon (throws when it was not built). */
export function simulatorAddon(): CudaAddon {
  addon ??= loadSimulatorAddon();
  return addon;
}

/** True when the simulator addon exists and loads. */
export function simulatorAvailable(): boolean {
  try {
    simulatorAddon();
    return true;
  } catch {
    return false;
  }
}

/** Reshapes the simulated machine (driver version, devices, memory, engine workers). */
export function configureSimulator(configuration: SimulatorConfiguration): void {
  simulatorAddon().configureSimulator!(configuration);
}

/** A CudaBackend whose kernels run in the simulator. */
export function createSimulatedCudaBackend(options: CudaBackendOptions = {}): CudaBackend {
  return new CudaBackend(simulatorAddon(), options);
}
