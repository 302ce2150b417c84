/**
 * The kernel module: every SIMD kernel emitted into one WebAssembly module that imports the
 * shared heap, compiled once per process and variant (relaxed FMA or not). Compilation goes
 * straight to V8's optimizing tier (TurboFan): the baseline tier (Liftoff) runs these loops
 * 3–5× slower, and a kernel called once on a big tensor would never leave it, because V8 only
 * swaps in optimized code at the next call. The flag is restored right after compiling, so
 * other wasm in the process keeps V8's defaults.
 */
import v8 from 'node:v8';
import { f32x4Instructions } from '../wasm/instructions.js';
import { ModuleBuilder } from '../wasm/module-builder.js';
import { WASM32_MAX_PAGES } from './wasm-heap.js';
import { emitGemm } from './emit-gemm.js';
import { emitRowKernels } from './emit-rows.js';
import { emitElementwise } from './emit-elementwise.js';
import { emitAttention } from './emit-attention.js';
import { emitUnaryAndReduce } from './emit-unary-reduce.js';

/** The compiled kernel module and the names of its exports. */
export interface KernelModule {
  /** Shared with the worker threads. */
  module: WebAssembly.Module;
  /** Every exported function name. */
  exportNames: string[];
  /** Size of the module in bytes. */
  byteLength: number;
}

/** The module's bytes (exposed for tests and for plugin authors reading the emitter). */
export function buildKernelModuleBytes(relaxed: boolean): Uint8Array {
  const module = new ModuleBuilder({ memory: { shared: true, minimumPages: 1, maximumPages: WASM32_MAX_PAGES } });
  const simd = f32x4Instructions(relaxed);
  emitGemm(module, simd);
  emitRowKernels(module, simd);
  emitElementwise(module, simd);
  emitAttention(module, simd);
  emitUnaryAndReduce(module, simd);
  return module.toBytes();
}

/** Compiles the kernel module with the optimizing compiler. */
export function compileKernelModule(relaxed: boolean, v8Flags = true): KernelModule {
  const bytes = buildKernelModuleBytes(relaxed);
  // Without leave to change V8's flags, V8's own tiering compiles it (slower first calls only).
  if (!v8Flags) {
    const module = new WebAssembly.Module(bytes);
    const exportNames = WebAssembly.Module.exports(module)
      .filter((entry) => entry.kind === 'function')
      .map((entry) => entry.name);
    return { module, exportNames, byteLength: bytes.byteLength };
  }
  v8.setFlagsFromString('--no-liftoff');
  let module: WebAssembly.Module;
  try {
    module = new WebAssembly.Module(bytes);
  } finally {
    // Back to the default, unless this process was started without Liftoff on purpose.
    const startedWithout = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)].includes(
      '--no-liftoff',
    );
    if (!startedWithout) v8.setFlagsFromString('--liftoff');
  }
  const exportNames = WebAssembly.Module.exports(module)
    .filter((entry) => entry.kind === 'function')
    .map((entry) => entry.name);
  return { module, exportNames, byteLength: bytes.byteLength };
}
