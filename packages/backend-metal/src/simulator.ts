/**
 * Test-only: the Metal backend running on the CPU simulator addon (kiln_metal_sim.node, built in
 * the workspace from the same host sources and the .metal kernels compiled as C++ through
 * @kiln/gpu-sim). Not exported from the package: the simulator is a test vehicle, not something
 * to train on.
 */
import { MetalBackend, type MetalBackendOptions } from './metal-backend.js';
import type { MetalAddon, SimulatorConfiguration } from './native/addon-types.js';
import { loadSimulatorAddon } from './native/load-addon.js';

let addon: MetalAddon | undefined;

/** The simulator addon (throws when it was not built). */
export function simulatorAddon(): MetalAddon {
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

/** Reshapes the simulated machine (GPUs, OS version, family, memory, engine workers, injected errors). */
export function configureSimulator(configuration: SimulatorConfiguration): void {
  simulatorAddon().configureSimulator!(configuration);
}

/** A MetalBackend whose kernels run in the simulator. */
export function createSimulatedMetalBackend(options: MetalBackendOptions = {}): MetalBackend {
  return new MetalBackend(simulatorAddon(), options);
}
