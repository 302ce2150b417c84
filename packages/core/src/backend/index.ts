/** The KernelBackend contract, the backend registry, discovery, resolution and the dtype fallback policy. */
export * from './kernel-backend.js';
export * from './registry.js';
export * from './discovery.js';
export * from './resolve.js';
export * from './fallback-policy.js';
export * from './kernel-ops.js';
