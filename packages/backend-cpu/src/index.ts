/**
 * @kiln/backend-cpu — kiln's pure TypeScript backend: every primitive and fused kernel
 * (flash attention included), no native build, runs wherever Node.js runs.
 */
export { CpuBackend, createCpuBackend, type CpuBackendOptions } from './cpu-backend.js';
export { cpuBackendPlugin } from './plugin.js';
import { cpuBackendPlugin } from './plugin.js';

export default cpuBackendPlugin;
