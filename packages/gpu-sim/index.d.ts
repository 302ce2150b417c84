/** Absolute path of `include/` (add it to the compiler's include path; then `#include <gpu_sim/cuda/runtime.hpp>`). */
export declare const includeDirectory: string;
/** Absolute path of the Metal shim directory (add it to the include path of rewritten .metal files: `#include <metal_stdlib>`). */
export declare const metalShimDirectory: string;
/** An error in a .metal file found by the rewrite step (names file, line and parameter). */
export declare class MetalRewriteError extends Error {}
/** Rewrites one .metal source for the simulator (see metal-rewrite.js). */
export declare function rewriteMetalSource(
  source: string,
  options: { path: string; displayName?: string },
): {
  /** The C++ to compile (same line numbers, #line to the original, bindings appended). */
  code: string;
  /** Host names of the kernels it registers. */
  kernels: string[];
  /** Names of its function constants. */
  functionConstants: string[];
};
/** Rewrites every .metal file and .h header of a directory into another (name.metal → name.metal.cpp). */
export declare function rewriteMetalDirectory(
  inputDirectory: string,
  outputDirectory: string,
): Promise<{
  sources: string[];
  headers: string[];
  kernels: Record<string, string[]>;
}>;
