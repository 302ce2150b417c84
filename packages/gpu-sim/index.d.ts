/** Absolute path of `include/` (add it to the compiler's include path; then `#include <gpu_sim/cuda/runtime.hpp>`). */
export declare const includeDirectory: string;
