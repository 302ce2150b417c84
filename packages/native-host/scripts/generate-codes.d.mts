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
/** The text of core's codes.ts. */
export declare function codesModule(codes: NativeCodes): string;
/** [path, expected text] of every generated file. */
export declare function generatedFiles(): Array<[string, string]>;
