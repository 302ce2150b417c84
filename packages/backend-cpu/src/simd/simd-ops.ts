/** The f32×4 instruction set a kernel emitter writes with (relaxed or not). */
import { f32x4Instructions } from '../wasm/instructions.js';
import type { FunctionBuilder, Local } from '../wasm/module-builder.js';

/** f32x4 instructions; `fma` is fused when built relaxed. */
export type SimdOps = ReturnType<typeof f32x4Instructions>;

/** A vector of four equal f32 constants, computed once per function (see FunctionBuilder.hoist). */
export function vectorConstant(f: FunctionBuilder, simd: SimdOps, value: number): Local {
  return f.hoist(`f32x4:${Object.is(value, -0) ? '-0' : String(value)}`, simd.constSplat(value));
}
