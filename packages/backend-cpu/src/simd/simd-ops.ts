/** The f32×4 instruction set a kernel emitter writes with (relaxed or not). */
import { f32x4Instructions } from '../wasm/instructions.js';

/** f32x4 instructions; `fma` is fused when built relaxed. */
export type SimdOps = ReturnType<typeof f32x4Instructions>;
