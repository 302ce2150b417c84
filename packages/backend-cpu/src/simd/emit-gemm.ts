/**
 * The f32 GEMM in WebAssembly SIMD: C = A·B (or C += A·B) with A, B given by element strides
 * (any transpose is resolved while packing) and C row-major with leading dimension ldc.
 * Algorithm (Goto/BLIS): for each NC-column block and KC-deep slice, pack B into 8-wide panels
 * [kc][8]; for each MC-row block pack A into 4-tall panels [kc][4]; then a 4×8 micro-kernel
 * keeps the tile in 8 vector accumulators (4 rows × 2 vectors) and per k step loads 2 vectors of
 * B, broadcasts 4 values of A and does 8 multiply-adds — 14 of the 16 xmm registers, which V8
 * (it keeps one as scratch) allocates without spilling; wider tiles spill and halve the speed.
 * Edge tiles run the same kernel on zero-padded panels into a scratch tile, then copy the valid
 * part, so every element of C is computed the same way wherever the tile boundaries fall.
 * Packing has vector paths for the contiguous layouts (4×4 transposes with shuffles) and a
 * scalar path for the rest.
 * Numerics: f32 accumulation in k order within a KC slice (fused multiply-add with relaxed
 * SIMD), slices added to C in order. The result of an element does not depend on how M or N is
 * split, so a split over threads gives the single-thread result bit for bit.
 * Memory: `work` points at GEMM_WORK_BYTES of scratch owned by the caller (one per thread).
 */
import type { Local } from '../wasm/module-builder.js';
import { call, type FunctionBuilder, type FunctionRef, type ModuleBuilder } from '../wasm/module-builder.js';
import { f32, i32, v128 } from '../wasm/instructions.js';
import type { Expr } from '../wasm/expression.js';
import type { SimdOps } from './simd-ops.js';

/** Micro-tile rows. */
export const GEMM_MR = 4;
/** Micro-tile columns (two f32x4 vectors). */
export const GEMM_NR = 8;
/** Depth of one packed slice. */
export const GEMM_KC = 256;
/** Rows of one packed block of A. */
export const GEMM_MC = 128;
/** Columns of one packed block of B. */
export const GEMM_NC = 512;
const PACK_A_BYTES = GEMM_MC * GEMM_KC * 4;
const PACK_B_BYTES = GEMM_NC * GEMM_KC * 4;
const EDGE_BYTES = GEMM_MR * GEMM_NR * 4;
/** Scratch bytes one gemm call needs at `work`. */
export const GEMM_WORK_BYTES = PACK_A_BYTES + PACK_B_BYTES + EDGE_BYTES;

/** The functions emitted by emitGemm. */
export interface GemmFunctions {
  /** gemm(m, n, k, a, aRowStride, aColStride, b, bRowStride, bColStride, c, ldc, accumulate, work). */
  gemm: FunctionRef;
}

/** Byte address of element (row, column) of a strided operand. */
function elementAddress(
  base: Expr,
  row: Expr | number,
  rowStride: Expr,
  column: Expr | number,
  columnStride: Expr,
): Expr {
  return i32.add(base, i32.shl(i32.add(i32.mul(row, rowStride), i32.mul(column, columnStride)), 2));
}

/** Transposes four row vectors in place: afterwards rows[q] holds what was column q. */
function transpose4x4(f: FunctionBuilder, simd: SimdOps, rows: Local[], temporary: Local[]): void {
  f.set(temporary[0], simd.shuffle(rows[0], rows[1], [0, 4, 1, 5]));
  f.set(temporary[1], simd.shuffle(rows[0], rows[1], [2, 6, 3, 7]));
  f.set(temporary[2], simd.shuffle(rows[2], rows[3], [0, 4, 1, 5]));
  f.set(temporary[3], simd.shuffle(rows[2], rows[3], [2, 6, 3, 7]));
  f.set(rows[0], simd.shuffle(temporary[0], temporary[2], [0, 1, 4, 5]));
  f.set(rows[1], simd.shuffle(temporary[0], temporary[2], [2, 3, 6, 7]));
  f.set(rows[2], simd.shuffle(temporary[1], temporary[3], [0, 1, 4, 5]));
  f.set(rows[3], simd.shuffle(temporary[1], temporary[3], [2, 3, 6, 7]));
}

function emitMicroKernel(module: ModuleBuilder, simd: SimdOps): FunctionRef {
  // C[4×8] (row stride ldcBytes) = or += Σ_p packedA[p][0..3] ⊗ packedB[p][0..7].
  return module.func(
    'gemm_micro_4x8',
    { params: { kc: 'i32', a: 'i32', b: 'i32', c: 'i32', ldcBytes: 'i32', accumulate: 'i32' }, exported: false },
    (f, { kc, a, b, c, ldcBytes, accumulate }) => {
      const acc = Array.from({ length: GEMM_MR }, () => [f.local('v128'), f.local('v128')]);
      const b0 = f.local('v128');
      const b1 = f.local('v128');
      const broadcast = f.local('v128');
      f.loop((repeat) => {
        f.set(b0, v128.load(b, 0));
        f.set(b1, v128.load(b, 16));
        for (let r = 0; r < GEMM_MR; r++) {
          f.set(broadcast, simd.loadSplat(a, 4 * r));
          f.set(acc[r][0], simd.fma(broadcast, b0, acc[r][0]));
          f.set(acc[r][1], simd.fma(broadcast, b1, acc[r][1]));
        }
        f.set(a, i32.add(a, 4 * GEMM_MR));
        f.set(b, i32.add(b, 4 * GEMM_NR));
        f.set(kc, i32.sub(kc, 1));
        f.branchIf(repeat, kc);
      });
      f.if(
        accumulate,
        () => {
          for (let r = 0; r < GEMM_MR; r++) {
            const row = r === 0 ? c : i32.add(c, i32.mul(ldcBytes, r));
            f.exec(v128.store(row, simd.add(v128.load(row, 0), acc[r][0]), 0));
            f.exec(v128.store(row, simd.add(v128.load(row, 16), acc[r][1]), 16));
          }
        },
        () => {
          for (let r = 0; r < GEMM_MR; r++) {
            const row = r === 0 ? c : i32.add(c, i32.mul(ldcBytes, r));
            f.exec(v128.store(row, acc[r][0], 0));
            f.exec(v128.store(row, acc[r][1], 16));
          }
        },
      );
    },
  );
}

function emitPackA(module: ModuleBuilder, simd: SimdOps): FunctionRef {
  // Rows [0, mc) × depth [0, kc) of A (element (i, p) at a + 4·(i·rowStride + p·colStride))
  // into panels of 4 rows: target[panel][p][r], rows past mc zero.
  return module.func(
    'gemm_pack_a',
    { params: { a: 'i32', rowStride: 'i32', colStride: 'i32', mc: 'i32', kc: 'i32', target: 'i32' }, exported: false },
    (f, { a, rowStride, colStride, mc, kc, target }) => {
      const i0 = f.local('i32');
      const p = f.local('i32');
      const rows = f.local('i32');
      const source = f.local('i32');
      const vectors = [f.local('v128'), f.local('v128'), f.local('v128'), f.local('v128')];
      const temporary = [f.local('v128'), f.local('v128'), f.local('v128'), f.local('v128')];
      const rowBytes = f.local('i32');
      f.for(i0, 0, mc, GEMM_MR, () => {
        f.set(rows, i32.minS(GEMM_MR, i32.sub(mc, i0)));
        f.set(source, elementAddress(a, i0, rowStride, 0, colStride));
        f.set(rowBytes, i32.shl(rowStride, 2));
        f.if(
          i32.and(i32.eq(rows, GEMM_MR), i32.eq(colStride, 1)),
          () => {
            // Rows contiguous in p: 4×4 blocks transposed with shuffles.
            f.set(p, 0);
            f.while(
              () => i32.leS(i32.add(p, 4), kc),
              () => {
                for (let r = 0; r < 4; r++)
                  f.set(vectors[r], v128.load(r === 0 ? source : i32.add(source, i32.mul(rowBytes, r))));
                transpose4x4(f, simd, vectors, temporary);
                for (let q = 0; q < 4; q++) f.exec(v128.store(target, vectors[q], 16 * q));
                f.set(source, i32.add(source, 16));
                f.set(target, i32.add(target, 64));
                f.set(p, i32.add(p, 4));
              },
            );
            f.while(
              () => i32.ltS(p, kc),
              () => {
                for (let r = 0; r < 4; r++)
                  f.exec(f32.store(target, f32.load(r === 0 ? source : i32.add(source, i32.mul(rowBytes, r))), 4 * r));
                f.set(source, i32.add(source, 4));
                f.set(target, i32.add(target, 16));
                f.set(p, i32.add(p, 1));
              },
            );
          },
          () => {
            f.if(
              i32.and(i32.eq(rows, GEMM_MR), i32.eq(rowStride, 1)),
              () => {
                // Stored transposed: the 4 values of one p are contiguous.
                f.for(p, 0, kc, 1, () => {
                  f.exec(v128.store(target, v128.load(source)));
                  f.set(source, i32.add(source, i32.shl(colStride, 2)));
                  f.set(target, i32.add(target, 16));
                });
              },
              () => {
                // Any strides, or an edge panel: one element at a time, zero past the last row.
                f.for(p, 0, kc, 1, () => {
                  for (let r = 0; r < 4; r++) {
                    f.if(
                      i32.ltS(r, rows),
                      () =>
                        f.exec(
                          f32.store(target, f32.load(r === 0 ? source : i32.add(source, i32.mul(rowBytes, r))), 4 * r),
                        ),
                      () => f.exec(f32.store(target, 0, 4 * r)),
                    );
                  }
                  f.set(source, i32.add(source, i32.shl(colStride, 2)));
                  f.set(target, i32.add(target, 16));
                });
              },
            );
          },
        );
      });
    },
  );
}

function emitPackB(module: ModuleBuilder, simd: SimdOps): FunctionRef {
  // Depth [0, kc) × columns [0, nc) of B (element (p, j) at b + 4·(p·rowStride + j·colStride))
  // into panels of 8 columns: target[panel][p][t], columns past nc zero.
  return module.func(
    'gemm_pack_b',
    { params: { b: 'i32', rowStride: 'i32', colStride: 'i32', kc: 'i32', nc: 'i32', target: 'i32' }, exported: false },
    (f, { b, rowStride, colStride, kc, nc, target }) => {
      const j0 = f.local('i32');
      const p = f.local('i32');
      const columns = f.local('i32');
      const source = f.local('i32');
      const half = f.local('i32');
      const out = f.local('i32');
      const columnBytes = f.local('i32');
      const vectors = [f.local('v128'), f.local('v128'), f.local('v128'), f.local('v128')];
      const temporary = [f.local('v128'), f.local('v128'), f.local('v128'), f.local('v128')];
      f.for(j0, 0, nc, GEMM_NR, () => {
        f.set(columns, i32.minS(GEMM_NR, i32.sub(nc, j0)));
        f.set(source, elementAddress(b, 0, rowStride, j0, colStride));
        f.set(columnBytes, i32.shl(colStride, 2));
        f.if(
          i32.and(i32.eq(columns, GEMM_NR), i32.eq(colStride, 1)),
          () => {
            // Row-major B: the 8 values of one p are contiguous.
            f.for(p, 0, kc, 1, () => {
              f.exec(v128.store(target, v128.load(source, 0), 0));
              f.exec(v128.store(target, v128.load(source, 16), 16));
              f.set(source, i32.add(source, i32.shl(rowStride, 2)));
              f.set(target, i32.add(target, 32));
            });
          },
          () => {
            f.if(
              i32.and(i32.eq(columns, GEMM_NR), i32.eq(rowStride, 1)),
              () => {
                // Stored transposed (columns contiguous in p): two 4×4 transposes per 4 steps of p.
                f.set(p, 0);
                f.while(
                  () => i32.leS(i32.add(p, 4), kc),
                  () => {
                    f.for(half, 0, 2, 1, () => {
                      const columnBase = i32.add(source, i32.mul(i32.shl(half, 2), columnBytes));
                      f.set(out, columnBase);
                      for (let t = 0; t < 4; t++)
                        f.set(vectors[t], v128.load(t === 0 ? out : i32.add(out, i32.mul(columnBytes, t))));
                      transpose4x4(f, simd, vectors, temporary);
                      f.set(out, i32.add(target, i32.shl(half, 4)));
                      for (let q = 0; q < 4; q++) f.exec(v128.store(out, vectors[q], 32 * q));
                    });
                    f.set(source, i32.add(source, 16));
                    f.set(target, i32.add(target, 128));
                    f.set(p, i32.add(p, 4));
                  },
                );
                f.while(
                  () => i32.ltS(p, kc),
                  () => {
                    for (let t = 0; t < GEMM_NR; t++)
                      f.exec(
                        f32.store(target, f32.load(t === 0 ? source : i32.add(source, i32.mul(columnBytes, t))), 4 * t),
                      );
                    f.set(source, i32.add(source, 4));
                    f.set(target, i32.add(target, 32));
                    f.set(p, i32.add(p, 1));
                  },
                );
              },
              () => {
                f.for(p, 0, kc, 1, () => {
                  for (let t = 0; t < GEMM_NR; t++) {
                    f.if(
                      i32.ltS(t, columns),
                      () =>
                        f.exec(
                          f32.store(
                            target,
                            f32.load(t === 0 ? source : i32.add(source, i32.mul(columnBytes, t))),
                            4 * t,
                          ),
                        ),
                      () => f.exec(f32.store(target, 0, 4 * t)),
                    );
                  }
                  f.set(source, i32.add(source, i32.shl(rowStride, 2)));
                  f.set(target, i32.add(target, 32));
                });
              },
            );
          },
        );
      });
    },
  );
}

/** Emits the GEMM and its helpers into `module`. */
export function emitGemm(module: ModuleBuilder, simd: SimdOps): GemmFunctions {
  const micro = emitMicroKernel(module, simd);
  const packA = emitPackA(module, simd);
  const packB = emitPackB(module, simd);
  const gemm = module.func(
    'gemm',
    {
      params: {
        m: 'i32',
        n: 'i32',
        k: 'i32',
        a: 'i32',
        aRowStride: 'i32',
        aColStride: 'i32',
        b: 'i32',
        bRowStride: 'i32',
        bColStride: 'i32',
        c: 'i32',
        ldc: 'i32',
        accumulate: 'i32',
        work: 'i32',
      },
    },
    (f, p) => {
      const { m, n, k, a, aRowStride, aColStride, b, bRowStride, bColStride, c, ldc, accumulate, work } = p;
      const packedA = f.local('i32');
      const packedB = f.local('i32');
      const edge = f.local('i32');
      const jc = f.local('i32');
      const pc = f.local('i32');
      const ic = f.local('i32');
      const jr = f.local('i32');
      const ir = f.local('i32');
      const nc = f.local('i32');
      const kc = f.local('i32');
      const mc = f.local('i32');
      const nr = f.local('i32');
      const mr = f.local('i32');
      const sliceAccumulates = f.local('i32');
      const tile = f.local('i32');
      const row = f.local('i32');
      const column = f.local('i32');
      const target = f.local('i32');
      const value = f.local('f32');
      f.if(i32.or(i32.leS(m, 0), i32.leS(n, 0)), () => f.return());
      f.set(packedA, work);
      f.set(packedB, i32.add(work, PACK_A_BYTES));
      f.set(edge, i32.add(work, PACK_A_BYTES + PACK_B_BYTES));
      f.if(i32.leS(k, 0), () => {
        // An empty sum: C = 0 (or C unchanged when accumulating).
        f.if(i32.eqz(accumulate), () => {
          f.for(row, 0, m, 1, () => {
            f.for(column, 0, n, 1, () =>
              f.exec(f32.store(i32.add(c, i32.shl(i32.add(i32.mul(row, ldc), column), 2)), 0)),
            );
          });
        });
        f.return();
      });
      f.for(jc, 0, n, GEMM_NC, () => {
        f.set(nc, i32.minS(GEMM_NC, i32.sub(n, jc)));
        f.for(pc, 0, k, GEMM_KC, () => {
          f.set(kc, i32.minS(GEMM_KC, i32.sub(k, pc)));
          f.set(sliceAccumulates, i32.or(accumulate, i32.gtS(pc, 0)));
          f.exec(
            call(packB, elementAddress(b, pc, bRowStride, jc, bColStride), bRowStride, bColStride, kc, nc, packedB),
          );
          f.for(ic, 0, m, GEMM_MC, () => {
            f.set(mc, i32.minS(GEMM_MC, i32.sub(m, ic)));
            f.exec(
              call(packA, elementAddress(a, ic, aRowStride, pc, aColStride), aRowStride, aColStride, mc, kc, packedA),
            );
            f.for(jr, 0, nc, GEMM_NR, () => {
              f.set(nr, i32.minS(GEMM_NR, i32.sub(nc, jr)));
              f.for(ir, 0, mc, GEMM_MR, () => {
                f.set(mr, i32.minS(GEMM_MR, i32.sub(mc, ir)));
                f.set(tile, i32.add(c, i32.shl(i32.add(i32.mul(i32.add(ic, ir), ldc), i32.add(jc, jr)), 2)));
                const panelA = i32.add(packedA, i32.shl(i32.mul(ir, kc), 2));
                const panelB = i32.add(packedB, i32.shl(i32.mul(jr, kc), 2));
                f.if(
                  i32.and(i32.eq(mr, GEMM_MR), i32.eq(nr, GEMM_NR)),
                  () => {
                    f.exec(call(micro, kc, panelA, panelB, tile, i32.shl(ldc, 2), sliceAccumulates));
                  },
                  () => {
                    f.exec(call(micro, kc, panelA, panelB, edge, 4 * GEMM_NR, 0));
                    f.for(row, 0, mr, 1, () => {
                      f.for(column, 0, nr, 1, () => {
                        f.set(target, i32.add(tile, i32.shl(i32.add(i32.mul(row, ldc), column), 2)));
                        f.set(value, f32.load(i32.add(edge, i32.shl(i32.add(i32.mul(row, GEMM_NR), column), 2))));
                        f.if(sliceAccumulates, () => f.set(value, f32.add(f32.load(target), value)));
                        f.exec(f32.store(target, value));
                      });
                    });
                  },
                );
              });
            });
          });
        });
      });
    },
  );
  return { gemm };
}
