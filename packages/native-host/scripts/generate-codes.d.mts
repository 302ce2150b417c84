/** The native codes of op_codes.h, by group, names in core's spelling. */
export interface NativeCodes {
  dtype: string[];
  unary: string[];
  binary: string[];
  reduce: string[];
  indexError: string[];
}
/** include/kiln/op_codes.h. */
export declare const HEADER: string;
/** include/kiln/op_names.h (generated). */
export declare const NAMES_HEADER: string;
/** packages/core/src/native-backend/codes.ts (generated). */
export declare const CODES_TS: string;
/** The groups of op_codes.h (or of `text`), checked to run 0, 1, 2, …. */
export declare function readCodes(text?: string): NativeCodes;
/** The text of kiln/op_names.h. */
export declare function namesHeader(codes: NativeCodes): string;
/** src/backend/kernel-ops.ts of @kiln/core (the op lists codes.ts re-exports). */
export declare const KERNEL_OPS_TS: string;
/** src/dtype.ts of @kiln/core (DTYPES). */
export declare const DTYPE_TS: string;
/** Core's lists read from their source text (or from `opsText` and `dtypeText`). */
export declare function readCoreLists(
  opsText?: string,
  dtypeText?: string,
): Pick<NativeCodes, 'dtype' | 'unary' | 'binary' | 'reduce'>;
/** Throws unless the header's groups list core's names in core's order. */
export declare function checkAgainstCore(
  codes: Pick<NativeCodes, 'dtype' | 'unary' | 'binary' | 'reduce'>,
  core?: Pick<NativeCodes, 'dtype' | 'unary' | 'binary' | 'reduce'>,
): void;
/** The text of core's codes.ts (re-exports core's lists; call checkAgainstCore first). */
export declare function codesModule(): string;
/** [path, expected text] of every generated file. */
export declare function generatedFiles(): Array<[string, string]>;
