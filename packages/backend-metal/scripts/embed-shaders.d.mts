/** @kiln/native-host's include/ directory (kiln/op_codes.h): staged into the package when packed, else the workspace's. */
export declare const NATIVE_HOST_INCLUDE: string;
/** The source of `file` (in `directory`, else in the shared include directory) with its quoted includes inlined, each header once. */
export declare function inlineIncludes(directory: string, file: string, seen?: Set<string>): string;
/** Writes kiln_metal_shaders.cpp into `outDirectory` (only when it changed); returns its path. */
export declare function embedShaders(kernelDirectory: string, outDirectory: string): string;
