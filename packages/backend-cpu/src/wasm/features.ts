/**
 * Which WebAssembly features this runtime has: SIMD128 (every Node ≥ 16.4) and relaxed SIMD
 * (fused multiply-add). Node 20's V8 (11.3) implements relaxed SIMD behind
 * `--experimental-wasm-relaxed-simd`; V8 reads its feature flags when it validates or compiles a
 * module, so setting the flag with `v8.setFlagsFromString` at run time, before compiling, turns
 * it on for this process (its worker threads included: V8 flags are per process). Newer
 * runtimes ship it on by default. Detection validates a one-instruction module each way. A host
 * application that must not have its V8 flags changed refuses it (`v8Flags: false` or
 * KILN_CPU_V8_FLAGS=0): relaxed SIMD is then used only where the runtime has it on by default.
 */
import v8 from 'node:v8';
import { f32x4Instructions, v128 } from './instructions.js';
import { ModuleBuilder } from './module-builder.js';

/** What the runtime supports. */
export interface WasmFeatures {
  /** SIMD128 validates. */
  simd: boolean;
  /** Relaxed SIMD validates (possibly after enabling the V8 flag). */
  relaxedSimd: boolean;
  /** How relaxed SIMD became available: 'default', 'flag' (setFlagsFromString), or why it is not ('refused': it needs the flag, which the host refused). */
  relaxedSimdSource: 'default' | 'flag' | 'unavailable' | 'disabled' | 'refused';
}

function probeModule(relaxed: boolean): Uint8Array {
  const module = new ModuleBuilder({ memory: { shared: false, minimumPages: 1, maximumPages: 1 } });
  const f32x4 = f32x4Instructions(relaxed);
  module.func('probe', { params: {} }, (f) => {
    const zero = f32x4.constSplat(0);
    f.exec(v128.store(0, relaxed ? f32x4.fma(zero, zero, zero) : f32x4.add(zero, zero)));
  });
  return module.toBytes();
}

let withRelaxed: WasmFeatures | undefined;

/**
 * Detects SIMD and relaxed SIMD (once per process). `allowRelaxed = false`
 * (KILN_CPU_RELAXED_SIMD=0) reports relaxed SIMD as disabled and never touches the V8 flag;
 * `allowFlag = false` (v8Flags: false) uses relaxed SIMD only where it validates without the flag.
 */
export function detectWasmFeatures(allowRelaxed = true, allowFlag = true): WasmFeatures {
  if (!allowRelaxed) {
    const simd = validates(probeModule(false));
    return { simd, relaxedSimd: false, relaxedSimdSource: simd ? 'disabled' : 'unavailable' };
  }
  if (withRelaxed !== undefined) return withRelaxed;
  if (!allowFlag) {
    const simd = validates(probeModule(false));
    if (simd && validates(probeModule(true))) return { simd, relaxedSimd: true, relaxedSimdSource: 'default' };
    return { simd, relaxedSimd: false, relaxedSimdSource: simd ? 'refused' : 'unavailable' };
  }
  const simd = validates(probeModule(false));
  const relaxedProbe = probeModule(true);
  if (!simd) {
    withRelaxed = { simd, relaxedSimd: false, relaxedSimdSource: 'unavailable' };
  } else if (validates(relaxedProbe)) {
    withRelaxed = { simd, relaxedSimd: true, relaxedSimdSource: 'default' };
  } else {
    try {
      v8.setFlagsFromString('--experimental-wasm-relaxed-simd');
    } catch {
      // A runtime without the flag: relaxed SIMD stays off.
    }
    const relaxedSimd = validates(relaxedProbe);
    withRelaxed = { simd, relaxedSimd, relaxedSimdSource: relaxedSimd ? 'flag' : 'unavailable' };
  }
  return withRelaxed;
}

function validates(bytes: Uint8Array): boolean {
  return typeof WebAssembly === 'object' && WebAssembly.validate(bytes);
}
