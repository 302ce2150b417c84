// The GPU backends the shared native host serves, each on its simulator: the one mirrored suite
// (native-arguments, index errors, buffer pool, codes) runs against every entry.
import { fileURLToPath } from 'node:url';
import type { CudaBackend } from '../../../backend-cuda/src/cuda-backend.js';
import type { MetalBackend } from '../../../backend-metal/src/metal-backend.js';
import {
  findPackageRoot as cudaRoot,
  localBuildPath as cudaBuildPath,
  simulatorBuildPath as cudaAddonPath,
} from '../../../backend-cuda/src/native/load-addon.js';
import {
  configureSimulator as configureCuda,
  createSimulatedCudaBackend,
  simulatorAddon as cudaAddon,
} from '../../../backend-cuda/src/simulator.js';
import {
  findPackageRoot as metalRoot,
  localBuildPath as metalBuildPath,
  simulatorBuildPath as metalAddonPath,
} from '../../../backend-metal/src/native/load-addon.js';
import {
  configureSimulator as configureMetal,
  createSimulatedMetalBackend,
  simulatorAddon as metalAddon,
} from '../../../backend-metal/src/simulator.js';
import { simulatorSkipReason } from './simulator-status.js';

/** Either GPU backend (what the shared suite calls on both). */
export type GpuBackend = CudaBackend | MetalBackend;

/** One simulated backend. */
export interface SimulatedBackend {
  /** 'cuda' or 'metal': the prefix of its native messages ("cuda backend: …"). */
  name: string;
  /** A new backend on the simulator. */
  create(options?: { memoryLimitBytes?: number }): GpuBackend;
  /** Reshapes the simulated machine (memoryBytes, …). */
  configure(configuration: { memoryBytes?: number }): void;
  /** The simulator addon's path (for child processes). */
  addonPath: string;
  /** The simulator addon's opNames(). */
  opNames(): unknown;
  /** The simulator addon's buildInfo(). */
  buildInfo(): unknown;
  /** Fields its buildInfo() must have. */
  simulatorBuild: Record<string, unknown>;
  /** The real (GPU) addon: where its local build lands, the buildInfo() fields it must have, and why it is absent here. */
  realAddon: { path: string; build: Record<string, unknown>; absentReason: string };
  /** Why this simulator cannot run here, or undefined. */
  skipReason: string | undefined;
  /** What its out-of-memory message adds about the device's memory, when it knows (16 MiB machine). */
  deviceMemoryNote?: RegExp;
}

const cudaPackage = cudaRoot(fileURLToPath(new URL('../../../backend-cuda/src/', import.meta.url)));
const metalPackage = metalRoot(fileURLToPath(new URL('../../../backend-metal/src/', import.meta.url)));

/** Both simulators. */
export const SIMULATED_BACKENDS: SimulatedBackend[] = [
  {
    name: 'cuda',
    create: (options) => createSimulatedCudaBackend(options),
    configure: (configuration) => configureCuda(configuration),
    addonPath: cudaAddonPath(cudaPackage),
    opNames: () => cudaAddon().opNames(),
    buildInfo: () => cudaAddon().buildInfo(),
    simulatorBuild: { simulator: true, build: 'CUDA simulator', runtimeVersion: 13000 },
    realAddon: {
      path: cudaBuildPath(cudaPackage),
      build: { simulator: false, build: 'CUDA', architectures: '80-real,86-real,89-real,90a-real,90-virtual' },
      absentReason: 'the CUDA addon is not built here, no nvcc',
    },
    skipReason: simulatorSkipReason(cudaPackage),
    deviceMemoryNote: /the device has [\d.]+ MiB free of 16\.00 MiB/,
  },
  {
    name: 'metal',
    create: (options) => createSimulatedMetalBackend(options),
    // Metal's default limit is the GPU's recommendedMaxWorkingSetSize: keep it out of the way.
    configure: (configuration) =>
      configureMetal({
        ...configuration,
        ...(configuration.memoryBytes !== undefined ? { recommendedMaxWorkingSetSize: configuration.memoryBytes } : {}),
      }),
    addonPath: metalAddonPath(metalPackage),
    opNames: () => metalAddon().opNames(),
    buildInfo: () => metalAddon().buildInfo(),
    simulatorBuild: { simulator: true, build: 'Metal simulator', languageVersion: '3.0' },
    realAddon: {
      path: metalBuildPath(metalPackage),
      build: { simulator: false, build: 'Metal', languageVersion: '3.0' },
      absentReason: 'the Metal addon builds on macOS only',
    },
    skipReason: simulatorSkipReason(metalPackage),
  },
];

/** "cuda simulator" or "metal simulator (the simulator addon was not built: …)". */
export function title(backend: SimulatedBackend): string {
  return `${backend.name} simulator${backend.skipReason ? ` (${backend.skipReason})` : ''}`;
}
