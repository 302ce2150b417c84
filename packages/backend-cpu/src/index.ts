/**
 * @kiln/backend-cpu — kiln's CPU backend: every primitive and fused kernel (flash attention
 * included) as WebAssembly SIMD generated from TypeScript at load time, with worker threads, and
 * plain TypeScript kernels as the fallback; no native build, runs wherever Node.js runs.
 */
export { CpuBackend, createCpuBackend, type CpuBackendOptions } from './cpu-backend.js';
export { cpuBackendPlugin } from './plugin.js';
import { cpuBackendPlugin } from './plugin.js';

export default cpuBackendPlugin;
