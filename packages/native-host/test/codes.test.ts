// op_codes.h is the one hand-written list of native codes: the files generated from it must be
// current, and the generator must refuse a list whose codes do not run 0, 1, 2, ….
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { BINARY_ORDER, DTYPE_ORDER, REDUCE_ORDER, UNARY_ORDER } from '../../core/src/native-backend/codes.js';
import { HEADER, checkAgainstCore, generatedFiles, readCodes, readCoreLists } from '../scripts/generate-codes.mjs';
import { SIMULATED_BACKENDS } from './support/backends.js';

describe('op_codes.h → generated files', () => {
  it.each(generatedFiles().map(([path, text]) => ({ path, text })))(
    '$path is up to date (node packages/native-host/scripts/generate-codes.mjs)',
    ({ path, text }) => {
      expect(readFileSync(path, 'utf8')).toBe(text);
    },
  );

  it("gives core's tables the header's order", () => {
    const codes = readCodes();
    expect({ dtype: DTYPE_ORDER, unary: UNARY_ORDER, binary: BINARY_ORDER, reduce: REDUCE_ORDER }).toEqual({
      dtype: codes.dtype,
      unary: codes.unary,
      binary: codes.binary,
      reduce: codes.reduce,
    });
    expect(codes.binary).toContain('greaterEqual');
    expect(codes.indexError).toEqual(['none', 'gather', 'scatterAdd', 'crossEntropy', 'crossEntropyBackward']);
  });

  it("refuses a header whose names or order differ from core's lists (codes.ts re-exports them)", () => {
    const codes = readCodes();
    expect(readCoreLists().binary).toEqual(codes.binary);
    const swapped = { ...codes, reduce: ['sum', 'min', 'max', 'argmax', 'argmin'] };
    expect(() => checkAgainstCore(swapped)).toThrow(
      /reduce codes list sum, min, max, argmax, argmin, but core lists sum, max, min/,
    );
    expect(() => checkAgainstCore({ ...codes, unary: [...codes.unary, 'cube'] })).toThrow(/unary codes list/);
  });

  it('refuses codes out of order and a wrong count', () => {
    const header = readFileSync(HEADER, 'utf8');
    expect(() => readCodes(header.replace('#define KILN_UNARY_ABS 1', '#define KILN_UNARY_ABS 2'))).toThrow(
      /KILN_UNARY_ABS is 2, expected 1/,
    );
    expect(() => readCodes(header.replace('#define KILN_REDUCE_COUNT 5', '#define KILN_REDUCE_COUNT 6'))).toThrow(
      /KILN_REDUCE_COUNT is 6, but 5 codes are listed/,
    );
  });
});

describe.each(SIMULATED_BACKENDS)('opNames() of the $name simulator addon', (target) => {
  it.skipIf(target.skipReason !== undefined)(
    `lists the generated codes${target.skipReason ? ` (${target.skipReason})` : ''}`,
    () => {
      expect(target.opNames()).toEqual({
        dtype: DTYPE_ORDER,
        unary: UNARY_ORDER,
        binary: BINARY_ORDER,
        reduce: REDUCE_ORDER,
      });
    },
  );
});
