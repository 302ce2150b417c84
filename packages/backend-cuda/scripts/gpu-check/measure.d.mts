/** ‖got − reference‖ / ‖reference‖; Infinity when either holds a non-finite value. */
export function relativeL2(got: ArrayLike<number>, reference: ArrayLike<number>): number;
/** Largest relative L2 difference between kiln's product and cuBLAS's that counts as agreement. */
export function matmulAgreementLimit(dtype: 'f32' | 'f16' | 'bf16', allowTf32: boolean): number;
/** The report's name for the kiln kernel a matmul's kernel-timer rows name ('SIMT split-K 3', 'wgmma', 'WMMA'), or undefined. */
export function kilnKernelOfTimings(timings: ReadonlyArray<{ name: string }>): string | undefined;
