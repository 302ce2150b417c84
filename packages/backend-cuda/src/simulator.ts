/**
 * Test-only: the CUDA backend running on the CPU simulator addon (kiln_cuda_sim.node, built in
 * the workspace from the same .cu and host sources with @kiln/gpu-sim). Not exported from the
 * package: the simulator is a test vehicle, not something to train on.
 */
import { InvalidArgumentError } from '@kiln/core';
import { simulatorAddon as lazySimulatorAddon } from '@kiln/core/native-backend';
import { CudaBackend, type CudaBackendOptions } from './cuda-backend.js';
import type {
  BankConflicts,
  CudaAddon,
  NativeSimulatorConfiguration,
  SimulatorConfiguration,
} from './native/addon-types.js';
import { loadSimulatorAddon } from './native/load-addon.js';

const simulator = lazySimulatorAddon<CudaAddon, NativeSimulatorConfiguration>(() => loadSimulatorAddon());

/** The simulator addon (throws when it was not built). */
export const simulatorAddon = (): CudaAddon => simulator.addon();

/** True when the simulator addon exists and loads. */
export const simulatorAvailable = (): boolean => simulator.available();

/** Reshapes the simulated machine (driver version, devices, memory, multiprocessors, grid y limit, compute capability, engine workers, injected faults). */
export function configureSimulator(configuration: SimulatorConfiguration): void {
  const unknown = Object.keys(configuration ?? {}).filter((key) => !SIMULATOR_KEYS.has(key));
  if (unknown.length > 0) {
    throw new InvalidArgumentError(
      `configureSimulator: unknown option ${unknown.map((key) => JSON.stringify(key)).join(', ')} (known: ${[...SIMULATOR_KEYS].join(', ')})`,
      { hint: 'Check the spelling; the simulator has no other settings.' },
    );
  }
  const { computeCapability, ...machine } = configuration;
  simulator.configure(
    computeCapability === undefined ? machine : { ...machine, ...parseComputeCapability(computeCapability) },
  );
}

/** The options configureSimulator accepts (SimulatorConfiguration's keys). */
const SIMULATOR_KEYS: ReadonlySet<string> = new Set([
  'driverVersion',
  'deviceCount',
  'memoryBytes',
  'multiprocessors',
  'maxGridY',
  'workers',
  'injectLaunchFault',
  'injectSynchronizeFault',
  'computeCapability',
] satisfies ReadonlyArray<keyof SimulatorConfiguration>);

/** 'major.minor' (e.g. '8.0', '9.0') as the addon's integers; throws InvalidArgumentError naming any other value. */
function parseComputeCapability(
  value: unknown,
): Required<Pick<NativeSimulatorConfiguration, 'computeCapabilityMajor' | 'computeCapabilityMinor'>> {
  const match = typeof value === 'string' ? /^([1-9]\d?)\.(\d)$/.exec(value) : null;
  if (match === null) {
    throw new InvalidArgumentError(
      `configureSimulator: computeCapability must be a 'major.minor' string such as '8.0' or '9.0', got ${JSON.stringify(value) ?? String(value)}`,
      { hint: "Pass the version as text, e.g. computeCapability: '8.0' for an A100." },
    );
  }
  return { computeCapabilityMajor: Number(match[1]), computeCapabilityMinor: Number(match[2]) };
}

/**
 * The ldmatrix shared-memory bank conflicts the simulator counted since the last call, then zeroed
 * (synchronize the backend first: queued kernels are not counted yet).
 */
export function takeBankConflicts(): BankConflicts {
  const addon = simulator.addon();
  if (addon.takeBankConflicts === undefined)
    throw new InvalidArgumentError('takeBankConflicts: the loaded addon is not the simulator build');
  return addon.takeBankConflicts();
}

/** A CudaBackend whose kernels run in the simulator. */
export function createSimulatedCudaBackend(options: CudaBackendOptions = {}): CudaBackend {
  return new CudaBackend(simulator.addon(), options);
}
