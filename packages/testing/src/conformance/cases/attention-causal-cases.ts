/**
 * Causal attention backward across Tq < Tk and Tq > Tk with sequences longer than one key block
 * (flash kernels walk keys in blocks of 64 and queries in tiles of 16 to 64): every key block's
 * range of visible queries (and every query tile's range of visible keys) starts somewhere other
 * than a block boundary, so a key-block range that starts or stops one block off leaves dV and dK
 * wrong. Rows that see no key (Tq > Tk) have an unspecified dq, which is not compared.
 */
import { FLOAT_DTYPES } from '@kiln/core';
import type { CaseSettings } from '../case-builder.js';
import type { ConformanceCase } from '../types.js';
import { backwardCases, forwardCases, type AttentionGeometry } from './attention-cases.js';

/** Tq/Tk pairs: one or both above one 64-key block, the diagonal crossing block boundaries off-grid; GQA so heads are summed too. */
const CAUSAL_CROSS_LENGTHS: readonly [number, number][] = [
  [40, 100],
  [100, 40],
  [5, 3],
  [20, 70],
  [70, 150],
];

/** The geometries of the cross-length causal cases (B=1, Hq=2 sharing one kv head, D=16). */
export const CAUSAL_CROSS_GEOMETRIES: readonly AttentionGeometry[] = CAUSAL_CROSS_LENGTHS.map(([lengthQ, lengthK]) => ({
  batch: 1,
  headsQ: 2,
  headsKV: 1,
  lengthQ,
  lengthK,
  headDim: 16,
  causal: true,
}));

/** Forward and backward cases of every cross-length causal geometry. */
export function causalAttentionCases(settings: CaseSettings): ConformanceCase[] {
  const cases: ConformanceCase[] = [];
  for (const dtype of FLOAT_DTYPES) {
    for (const geometry of CAUSAL_CROSS_GEOMETRIES)
      cases.push(...forwardCases(settings, dtype, geometry), ...backwardCases(settings, dtype, geometry));
  }
  return cases;
}
