/**
 * A GEMM without packing, for the small block products inside flash attention (a 64×64 block of
 * keys against head dimensions of 16–128), where packing would cost as much as the product:
 * C[m×n] (=|+=) A·B with A element (i, p) at a + i·aRowBytes + p·aColBytes (row-major A, or a
 * transposed one with aRowBytes = 4) and B row-major with rows ldbBytes apart.
 * Algorithm: 4×8 register tiles as in emit-gemm.ts, reading A through four row pointers
 * (broadcast loads) and B two vectors per step straight from memory; rows past the last full
 * 4-row tile and columns past the last full 8-column tile are finished by a scalar loop.
 * Numerics: f32 accumulation in k order (fused with relaxed SIMD), added to C once.
 */
import { f32, i32, v128 } from '../wasm/instructions.js';
import type { FunctionRef, ModuleBuilder } from '../wasm/module-builder.js';
import type { SimdOps } from './simd-ops.js';

/** Emits `gemm_small(m, n, k, a, aRowBytes, aColBytes, b, ldbBytes, c, ldcBytes, accumulate)`. */
export function emitSmallGemm(module: ModuleBuilder, simd: SimdOps): FunctionRef {
  return module.func(
    'gemm_small',
    {
      params: {
        m: 'i32',
        n: 'i32',
        k: 'i32',
        a: 'i32',
        aRowBytes: 'i32',
        aColBytes: 'i32',
        b: 'i32',
        ldbBytes: 'i32',
        c: 'i32',
        ldcBytes: 'i32',
        accumulate: 'i32',
      },
    },
    (f, { m, n, k, a, aRowBytes, aColBytes, b, ldbBytes, c, ldcBytes, accumulate }) => {
      const i = f.local('i32');
      const j = f.local('i32');
      const p = f.local('i32');
      const fullRows = f.local('i32');
      const fullColumns = f.local('i32');
      const rows = [f.local('i32'), f.local('i32'), f.local('i32'), f.local('i32')];
      const bPointer = f.local('i32');
      const cPointer = f.local('i32');
      const acc = Array.from({ length: 4 }, () => [f.local('v128'), f.local('v128')]);
      const b0 = f.local('v128');
      const b1 = f.local('v128');
      const broadcast = f.local('v128');
      const sum = f.local('f32');
      const aPointer = f.local('i32');
      f.set(fullRows, i32.and(m, ~3));
      f.set(fullColumns, i32.and(n, ~7));
      f.if(i32.gtS(k, 0), () => {
        f.for(i, 0, fullRows, 4, () => {
          f.for(j, 0, fullColumns, 8, () => {
            for (let r = 0; r < 4; r++) {
              f.set(rows[r], i32.add(a, i32.mul(i32.add(i, r), aRowBytes)));
              f.set(acc[r][0], simd.constSplat(0));
              f.set(acc[r][1], simd.constSplat(0));
            }
            f.set(bPointer, i32.add(b, i32.shl(j, 2)));
            f.set(p, k);
            f.loop((repeat) => {
              f.set(b0, v128.load(bPointer, 0));
              f.set(b1, v128.load(bPointer, 16));
              for (let r = 0; r < 4; r++) {
                f.set(broadcast, simd.loadSplat(rows[r]));
                f.set(acc[r][0], simd.fma(broadcast, b0, acc[r][0]));
                f.set(acc[r][1], simd.fma(broadcast, b1, acc[r][1]));
                f.set(rows[r], i32.add(rows[r], aColBytes));
              }
              f.set(bPointer, i32.add(bPointer, ldbBytes));
              f.set(p, i32.sub(p, 1));
              f.branchIf(repeat, p);
            });
            f.set(cPointer, i32.add(c, i32.add(i32.mul(i, ldcBytes), i32.shl(j, 2))));
            for (let r = 0; r < 4; r++) {
              const row = r === 0 ? cPointer : i32.add(cPointer, i32.mul(ldcBytes, r));
              f.if(
                accumulate,
                () => {
                  f.exec(v128.store(row, simd.add(v128.load(row, 0), acc[r][0]), 0));
                  f.exec(v128.store(row, simd.add(v128.load(row, 16), acc[r][1]), 16));
                },
                () => {
                  f.exec(v128.store(row, acc[r][0], 0));
                  f.exec(v128.store(row, acc[r][1], 16));
                },
              );
            }
          });
        });
      });
      // The ragged edge: rows [fullRows, m) × all columns, then rows [0, fullRows) × columns [fullColumns, n).
      const edge = (rowStart: number | typeof fullRows, rowEnd: typeof m, columnStart: number | typeof fullColumns) => {
        f.for(i, rowStart, rowEnd, 1, () => {
          f.for(j, columnStart, n, 1, () => {
            f.set(sum, 0);
            f.set(aPointer, i32.add(a, i32.mul(i, aRowBytes)));
            f.set(bPointer, i32.add(b, i32.shl(j, 2)));
            f.for(p, 0, k, 1, () => {
              f.set(sum, f32.add(sum, f32.mul(f32.load(aPointer), f32.load(bPointer))));
              f.set(aPointer, i32.add(aPointer, aColBytes));
              f.set(bPointer, i32.add(bPointer, ldbBytes));
            });
            f.set(cPointer, i32.add(c, i32.add(i32.mul(i, ldcBytes), i32.shl(j, 2))));
            f.if(accumulate, () => f.set(sum, f32.add(f32.load(cPointer), sum)));
            f.exec(f32.store(cPointer, sum));
          });
        });
      };
      edge(fullRows, m, 0);
      edge(0, fullRows, fullColumns);
    },
  );
}
