// The include directory of the header-only engine, for build scripts (cmake-js -D…, g++ -I…).
import { fileURLToPath } from 'node:url';

/** Absolute path of `include/` (add it to the compiler's include path; then `#include <gpu_sim/cuda/runtime.hpp>`). */
export const includeDirectory = fileURLToPath(new URL('./include', import.meta.url));
