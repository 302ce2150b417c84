/** safetensors read/write and crash-safe file writes. */
export * from './safetensors.js';
export * from './atomic-file.js';
