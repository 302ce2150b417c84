// The include directories of the header-only engine and the Metal rewrite step, for build scripts.
import { fileURLToPath } from 'node:url';

export { MetalRewriteError, rewriteMetalDirectory, rewriteMetalSource } from './metal-rewrite.js';

/** Absolute path of `include/` (add it to the compiler's include path; then `#include <gpu_sim/cuda/runtime.hpp>`). */
export const includeDirectory = fileURLToPath(new URL('./include', import.meta.url));

/** Absolute path of the Metal shim directory (add it to the include path of rewritten .metal files: `#include <metal_stdlib>`). */
export const metalShimDirectory = fileURLToPath(new URL('./include/gpu_sim/metal', import.meta.url));
