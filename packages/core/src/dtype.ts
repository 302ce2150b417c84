/** Storage element types. f16/bf16 are real 2-byte formats; i32 holds indices and labels. */
export type DType = 'f32' | 'f16' | 'bf16' | 'i32';

/** Every dtype, in a stable order (for sweeps and support matrices). */
export const DTYPES: readonly DType[] = ['f32', 'f16', 'bf16', 'i32'];

/** Floating-point dtypes (the ones gradients flow through). */
export const FLOAT_DTYPES: readonly DType[] = ['f32', 'f16', 'bf16'];

/** Bytes per element of each dtype. */
export const DTYPE_BYTES: Readonly<Record<DType, number>> = { f32: 4, f16: 2, bf16: 2, i32: 4 };

/** True for f32, f16 and bf16. */
export function isFloatDType(dtype: DType): boolean {
  return dtype !== 'i32';
}

/** True when `value` names a dtype kiln knows. */
export function isDType(value: unknown): value is DType {
  return value === 'f32' || value === 'f16' || value === 'bf16' || value === 'i32';
}

/** Host-side array kiln uses to hand values to users: f32/f16/bf16 as Float32Array, i32 as Int32Array. */
export type HostArray = Float32Array | Int32Array;
