/**
 * Test-only: the Metal backend running on the CPU simulator addon (kiln_metal_sim.node, built in
 * the workspace from the same host sources and the .metal kernels compiled as C++ through
 * @kiln/gpu-sim). Not exported from the package: the simulator is a test vehicle, not something
 * to train on.
 */
import { simulatorAddon as lazySimulatorAddon } from '@kiln/core/native-backend';
import { MetalBackend, type MetalBackendOptions } from './metal-backend.js';
import type { MetalAddon, SimulatorConfiguration } from './native/addon-types.js';
import { loadSimulatorAddon } from './native/load-addon.js';

const simulator = lazySimulatorAddon<MetalAddon, SimulatorConfiguration>(() => loadSimulatorAddon());

/** The simulator addon (throws when it was not built). */
export const simulatorAddon = (): MetalAddon => simulator.addon();

/** True when the simulator addon exists and loads. */
export const simulatorAvailable = (): boolean => simulator.available();

/** Reshapes the simulated machine (GPUs, OS version, family, memory, engine workers, injected errors). */
export function configureSimulator(configuration: SimulatorConfiguration): void {
  simulator.configure(configuration);
}

/** A MetalBackend whose kernels run in the simulator. */
export function createSimulatedMetalBackend(options: MetalBackendOptions = {}): MetalBackend {
  return new MetalBackend(simulator.addon(), options);
}
