/**
 * Flash attention (forward and backward) in WebAssembly SIMD, one (batch, head) item at a time,
 * so threads split the items and never share an output.
 * Layout: q [B, Hq, Tq, D], k/v [B, Hkv, Tk, D] (query head h reads kv head ⌊h/group⌋),
 * out/dq like q, dk/dv like k; an optional additive f32 mask with element strides (b, h, row,
 * column), 0 where broadcast; `causal` hides key j from query i when j > i + (Tk − Tq).
 * Forward: for each block of QUERY_BLOCK queries, walk blocks of KEY_BLOCK keys keeping each
 * row's running max m and sum l, rescaling the f32 output accumulator by e^(m_old − m_new) and
 * adding P·V; it writes out, and per row m and l (the host turns them into lse = m + log l, as
 * wasm has no log). Backward: per (batch, kv head), for each query head of the group and each
 * block pair: S = scale·QKᵀ (+ mask, causal), P = e^(S − lse), dV += Pᵀ·dO, dP = dO·Vᵀ,
 * dS = scale·P ⊙ (dP − Δ) with Δ = rowsum(dO ⊙ out), dQ += dS·K, dK += dSᵀ·Q. Every block
 * product is one call of the unpacked small gemm (emit-small-gemm.ts); K (and V for the
 * backward) are transposed once per item into `transposed` (per thread, 2·Tk·D floats) so that
 * every B operand is row-major. The Tq×Tk matrix is never built.
 * Numerics: f32 scores, probabilities and accumulators (dQ/dK/dV accumulate in place, in block
 * order); rows with no allowed key get out = 0, m = −∞, l = 0; NaN propagates.
 * Memory: `work` is the thread's scratch (ATTENTION_WORK_BYTES after the gemm's packs).
 */
import type { Expr } from '../wasm/expression.js';
import { f32, i32, memoryFill, v128 } from '../wasm/instructions.js';
import {
  call,
  type FunctionBuilder,
  type FunctionRef,
  type Local,
  type ModuleBuilder,
} from '../wasm/module-builder.js';
import { expF32x4, horizontalMax, horizontalSum } from './emit-math.js';
import { GEMM_WORK_BYTES } from './emit-gemm.js';
import { emitSmallGemm } from './emit-small-gemm.js';
import type { SimdOps } from './simd-ops.js';

/** Query rows per block. */
export const ATTENTION_QUERY_BLOCK = 64;
/** Keys per block. */
export const ATTENTION_KEY_BLOCK = 64;
/** Largest head dimension the SIMD kernels take (the accumulator tile is QUERY_BLOCK × D). */
export const ATTENTION_MAX_DEPTH = 256;
const TILE_BYTES = ATTENTION_QUERY_BLOCK * ATTENTION_KEY_BLOCK * 4;
const SCORES = 0;
const SCORE_GRADIENTS = TILE_BYTES;
const ACCUMULATOR = 2 * TILE_BYTES;
const ROW_MAX = ACCUMULATOR + ATTENTION_QUERY_BLOCK * ATTENTION_MAX_DEPTH * 4;
const ROW_SUM = ROW_MAX + ATTENTION_QUERY_BLOCK * 4;
const DELTA = ROW_SUM + ATTENTION_QUERY_BLOCK * 4;
/** Scratch bytes the attention kernels use after the gemm's. */
export const ATTENTION_WORK_BYTES = DELTA + ATTENTION_QUERY_BLOCK * 4;

/** Parameters both attention functions share (names of the wasm parameters). */
const SHARED_PARAMS = {
  mask: 'i32',
  maskStrideB: 'i32',
  maskStrideH: 'i32',
  maskStrideRow: 'i32',
  maskStrideCol: 'i32',
  itemBegin: 'i32',
  itemEnd: 'i32',
  queryHeads: 'i32',
  group: 'i32',
  queryLength: 'i32',
  keyLength: 'i32',
  depth: 'i32',
  scale: 'f32',
  causal: 'i32',
  work: 'i32',
  transposed: 'i32',
} as const;

/** Locals of the block loops shared by both passes. */
interface BlockLocals {
  row0: Local;
  rows: Local;
  column0: Local;
  columns: Local;
  limit: Local;
  r: Local;
  o: Local;
  scoreRow: Local;
  firstForbidden: Local;
  maskRow: Local;
  vector: Local;
  scalar: Local;
}

function blockLocals(f: FunctionBuilder): BlockLocals {
  return {
    row0: f.local('i32'),
    rows: f.local('i32'),
    column0: f.local('i32'),
    columns: f.local('i32'),
    limit: f.local('i32'),
    r: f.local('i32'),
    o: f.local('i32'),
    scoreRow: f.local('i32'),
    firstForbidden: f.local('i32'),
    maskRow: f.local('i32'),
    vector: f.local('v128'),
    scalar: f.local('f32'),
  };
}

type SharedParams = { [K in keyof typeof SHARED_PARAMS]: Local };

/** One past the last key the query block may see (all keys when not causal). */
function emitKeyLimit(f: FunctionBuilder, p: SharedParams, l: BlockLocals): void {
  f.set(l.limit, p.keyLength);
  f.if(p.causal, () => {
    // row0 + rows − 1 + (Tk − Tq) + 1, clamped to [0, Tk].
    f.set(l.limit, i32.add(i32.add(l.row0, l.rows), i32.sub(p.keyLength, p.queryLength)));
    f.if(i32.ltS(l.limit, 0), () => f.set(l.limit, 0));
    f.if(i32.gtS(l.limit, p.keyLength), () => f.set(l.limit, p.keyLength));
  });
}

/**
 * scores[r, c] = scale·(q_r·k_c) (+ mask) with −∞ where causal forbids, for the current block;
 * `qBlock` is the byte address of the query block's first row, `kTransposed` of Kᵀ [D, Tk].
 */
function emitScores(
  f: FunctionBuilder,
  simd: SimdOps,
  small: FunctionRef,
  p: SharedParams,
  l: BlockLocals,
  qBlock: Expr,
  kTransposed: Local,
  maskBase: Local,
  scores: Expr,
): void {
  f.exec(
    call(
      small,
      l.rows,
      l.columns,
      p.depth,
      qBlock,
      i32.shl(p.depth, 2),
      4,
      i32.add(kTransposed, i32.shl(l.column0, 2)),
      i32.shl(p.keyLength, 2),
      scores,
      ATTENTION_KEY_BLOCK * 4,
      0,
    ),
  );
  f.set(l.vector, simd.splat(p.scale));
  f.for(l.r, 0, l.rows, 1, () => {
    f.set(l.scoreRow, i32.add(scores, i32.mul(l.r, ATTENTION_KEY_BLOCK * 4)));
    const columnBytes = i32.shl(l.columns, 2);
    f.for(l.o, 0, i32.and(columnBytes, ~15), 16, () =>
      f.exec(v128.store(i32.add(l.scoreRow, l.o), simd.mul(v128.load(i32.add(l.scoreRow, l.o)), l.vector))),
    );
    f.for(l.o, i32.and(columnBytes, ~15), columnBytes, 4, () =>
      f.exec(f32.store(i32.add(l.scoreRow, l.o), f32.mul(f32.load(i32.add(l.scoreRow, l.o)), p.scale))),
    );
    f.if(p.mask, () => {
      f.set(
        l.maskRow,
        i32.add(
          maskBase,
          i32.shl(i32.add(i32.mul(i32.add(l.row0, l.r), p.maskStrideRow), i32.mul(l.column0, p.maskStrideCol)), 2),
        ),
      );
      f.for(l.o, 0, columnBytes, 4, () => {
        f.exec(f32.store(i32.add(l.scoreRow, l.o), f32.add(f32.load(i32.add(l.scoreRow, l.o)), f32.load(l.maskRow))));
        f.set(l.maskRow, i32.add(l.maskRow, i32.shl(p.maskStrideCol, 2)));
      });
    });
    f.if(p.causal, () => {
      // Keys past row0 + r + (Tk − Tq) are hidden.
      f.set(
        l.firstForbidden,
        i32.sub(i32.add(i32.add(l.row0, l.r), i32.sub(p.keyLength, p.queryLength)), i32.sub(l.column0, 1)),
      );
      f.if(i32.ltS(l.firstForbidden, 0), () => f.set(l.firstForbidden, 0));
      f.for(l.o, i32.shl(l.firstForbidden, 2), columnBytes, 4, () =>
        f.exec(f32.store(i32.add(l.scoreRow, l.o), -Infinity)),
      );
    });
  });
}

/** target [D, T] = source [T, D] (byte addresses). */
function emitTranspose(
  f: FunctionBuilder,
  source: Expr,
  target: Expr,
  length: Local,
  depth: Local,
  t: Local,
  d: Local,
  from: Local,
): void {
  f.set(from, source);
  f.for(t, 0, length, 1, () => {
    f.for(d, 0, depth, 1, () => {
      f.exec(f32.store(i32.add(target, i32.shl(i32.add(i32.mul(d, length), t), 2)), f32.load(from)));
      f.set(from, i32.add(from, 4));
    });
  });
}

/** Scalar e^x through the vector macro (lane 0). */
function scalarExp(f: FunctionBuilder, simd: SimdOps, x: Expr): Expr {
  return simd.extractLane(expF32x4(f, simd, simd.splat(x)), 0);
}

function emitForward(module: ModuleBuilder, simd: SimdOps, small: FunctionRef): void {
  module.func(
    'attention_forward',
    {
      params: { q: 'i32', k: 'i32', v: 'i32', out: 'i32', statMax: 'i32', statSum: 'i32', ...SHARED_PARAMS },
    },
    (f, params) => {
      const { q, k, v, out, statMax, statSum } = params;
      const p = params as unknown as SharedParams;
      const l = blockLocals(f);
      const item = f.local('i32');
      const qBase = f.local('i32');
      const kvOffset = f.local('i32');
      const kBase = f.local('i32');
      const vBase = f.local('i32');
      const maskBase = f.local('i32');
      const statBase = f.local('i32');
      const scratch = f.local('i32');
      const scores = f.local('i32');
      const accumulator = f.local('i32');
      const rowMax = f.local('i32');
      const rowSum = f.local('i32');
      const headBytes = f.local('i32');
      const depthBytes = f.local('i32');
      const previousMax = f.local('f32');
      const newMax = f.local('f32');
      const correction = f.local('f32');
      const sum = f.local('f32');
      const accumulatorRow = f.local('i32');
      const sums = f.local('v128');
      const shift = f.local('v128');
      f.set(scratch, i32.add(p.work, GEMM_WORK_BYTES));
      f.set(scores, i32.add(scratch, SCORES));
      f.set(accumulator, i32.add(scratch, ACCUMULATOR));
      f.set(rowMax, i32.add(scratch, ROW_MAX));
      f.set(rowSum, i32.add(scratch, ROW_SUM));
      f.set(depthBytes, i32.shl(p.depth, 2));
      f.set(headBytes, i32.mul(p.queryLength, depthBytes));
      f.for(item, p.itemBegin, p.itemEnd, 1, () => {
        f.set(qBase, i32.mul(item, headBytes));
        // kv head of query head h = item mod Hq in batch b = item / Hq: b·Hkv + h/group.
        f.set(
          kvOffset,
          i32.mul(
            i32.add(
              i32.mul(i32.divS(item, p.queryHeads), i32.divS(p.queryHeads, p.group)),
              i32.divS(i32.remS(item, p.queryHeads), p.group),
            ),
            i32.mul(p.keyLength, depthBytes),
          ),
        );
        f.set(kBase, i32.add(k, kvOffset));
        f.set(vBase, i32.add(v, kvOffset));
        emitTranspose(f, kBase, p.transposed, p.keyLength, p.depth, l.r, l.o, l.firstForbidden);
        f.set(
          maskBase,
          i32.add(
            p.mask,
            i32.shl(
              i32.add(
                i32.mul(i32.divS(item, p.queryHeads), p.maskStrideB),
                i32.mul(i32.remS(item, p.queryHeads), p.maskStrideH),
              ),
              2,
            ),
          ),
        );
        f.set(statBase, i32.shl(i32.mul(item, p.queryLength), 2));
        f.for(l.row0, 0, p.queryLength, ATTENTION_QUERY_BLOCK, () => {
          f.set(l.rows, i32.minS(ATTENTION_QUERY_BLOCK, i32.sub(p.queryLength, l.row0)));
          f.for(l.r, 0, l.rows, 1, () => {
            f.exec(f32.store(i32.add(rowMax, i32.shl(l.r, 2)), -Infinity));
            f.exec(f32.store(i32.add(rowSum, i32.shl(l.r, 2)), 0));
          });
          f.exec(memoryFill(accumulator, 0, i32.mul(l.rows, depthBytes)));
          emitKeyLimit(f, p, l);
          f.for(l.column0, 0, l.limit, ATTENTION_KEY_BLOCK, () => {
            f.set(l.columns, i32.minS(ATTENTION_KEY_BLOCK, i32.sub(l.limit, l.column0)));
            emitScores(
              f,
              simd,
              small,
              p,
              l,
              i32.add(i32.add(q, qBase), i32.mul(l.row0, depthBytes)),
              p.transposed,
              maskBase,
              scores,
            );
            const columnBytes = i32.shl(l.columns, 2);
            f.for(l.r, 0, l.rows, 1, () => {
              f.set(l.scoreRow, i32.add(scores, i32.mul(l.r, ATTENTION_KEY_BLOCK * 4)));
              f.set(sums, simd.constSplat(-Infinity));
              f.for(l.o, 0, i32.and(columnBytes, ~15), 16, () =>
                f.set(sums, simd.max(sums, v128.load(i32.add(l.scoreRow, l.o)))),
              );
              f.set(newMax, horizontalMax(simd, sums));
              f.for(l.o, i32.and(columnBytes, ~15), columnBytes, 4, () =>
                f.set(newMax, f32.max(newMax, f32.load(i32.add(l.scoreRow, l.o)))),
              );
              f.set(previousMax, f32.load(i32.add(rowMax, i32.shl(l.r, 2))));
              f.set(newMax, f32.max(previousMax, newMax));
              f.if(
                f32.eq(newMax, -Infinity),
                () => {
                  // Nothing allowed in this row so far: its probabilities are 0.
                  f.exec(memoryFill(l.scoreRow, 0, columnBytes));
                },
                () => {
                  f.set(correction, scalarExp(f, simd, f32.sub(previousMax, newMax)));
                  f.set(sum, f32.mul(f32.load(i32.add(rowSum, i32.shl(l.r, 2))), correction));
                  f.if(f32.ne(correction, 1), () => {
                    f.set(accumulatorRow, i32.add(accumulator, i32.mul(l.r, depthBytes)));
                    f.set(shift, simd.splat(correction));
                    f.for(l.o, 0, i32.and(depthBytes, ~15), 16, () =>
                      f.exec(
                        v128.store(
                          i32.add(accumulatorRow, l.o),
                          simd.mul(v128.load(i32.add(accumulatorRow, l.o)), shift),
                        ),
                      ),
                    );
                    f.for(l.o, i32.and(depthBytes, ~15), depthBytes, 4, () =>
                      f.exec(
                        f32.store(
                          i32.add(accumulatorRow, l.o),
                          f32.mul(f32.load(i32.add(accumulatorRow, l.o)), correction),
                        ),
                      ),
                    );
                  });
                  f.set(shift, simd.splat(newMax));
                  f.set(sums, simd.constSplat(0));
                  f.for(l.o, 0, i32.and(columnBytes, ~15), 16, () => {
                    const e = expF32x4(f, simd, simd.sub(v128.load(i32.add(l.scoreRow, l.o)), shift), {
                      nonPositive: true,
                    });
                    f.exec(v128.store(i32.add(l.scoreRow, l.o), e));
                    f.set(sums, simd.add(sums, e));
                  });
                  f.set(sum, f32.add(sum, horizontalSum(simd, sums)));
                  f.for(l.o, i32.and(columnBytes, ~15), columnBytes, 4, () => {
                    f.set(l.scalar, scalarExp(f, simd, f32.sub(f32.load(i32.add(l.scoreRow, l.o)), newMax)));
                    f.exec(f32.store(i32.add(l.scoreRow, l.o), l.scalar));
                    f.set(sum, f32.add(sum, l.scalar));
                  });
                  f.exec(f32.store(i32.add(rowSum, i32.shl(l.r, 2)), sum));
                  f.exec(f32.store(i32.add(rowMax, i32.shl(l.r, 2)), newMax));
                },
              );
            });
            // accumulator += P·V_block
            f.exec(
              call(
                small,
                l.rows,
                p.depth,
                l.columns,
                scores,
                ATTENTION_KEY_BLOCK * 4,
                4,
                i32.add(vBase, i32.mul(l.column0, depthBytes)),
                depthBytes,
                accumulator,
                depthBytes,
                1,
              ),
            );
          });
          // out = accumulator / l, or 0 for rows that saw no allowed key; m and l to the host.
          f.for(l.r, 0, l.rows, 1, () => {
            f.set(sum, f32.load(i32.add(rowSum, i32.shl(l.r, 2))));
            f.set(newMax, f32.load(i32.add(rowMax, i32.shl(l.r, 2))));
            f.set(accumulatorRow, i32.add(accumulator, i32.mul(l.r, depthBytes)));
            f.set(l.scoreRow, i32.add(i32.add(out, qBase), i32.mul(i32.add(l.row0, l.r), depthBytes)));
            f.if(
              i32.or(f32.eq(newMax, -Infinity), f32.eq(sum, 0)),
              () => f.set(correction, 0),
              () => f.set(correction, f32.div(1, sum)),
            );
            f.set(shift, simd.splat(correction));
            f.for(l.o, 0, i32.and(depthBytes, ~15), 16, () =>
              f.exec(v128.store(i32.add(l.scoreRow, l.o), simd.mul(v128.load(i32.add(accumulatorRow, l.o)), shift))),
            );
            f.for(l.o, i32.and(depthBytes, ~15), depthBytes, 4, () =>
              f.exec(f32.store(i32.add(l.scoreRow, l.o), f32.mul(f32.load(i32.add(accumulatorRow, l.o)), correction))),
            );
            const statIndex = i32.add(statBase, i32.shl(i32.add(l.row0, l.r), 2));
            f.exec(f32.store(i32.add(statMax, statIndex), newMax));
            f.exec(f32.store(i32.add(statSum, statIndex), sum));
          });
        });
      });
    },
  );
}

function emitBackward(module: ModuleBuilder, simd: SimdOps, small: FunctionRef): void {
  module.func(
    'attention_backward',
    {
      params: {
        q: 'i32',
        k: 'i32',
        v: 'i32',
        out: 'i32',
        lse: 'i32',
        dOut: 'i32',
        dq: 'i32',
        dk: 'i32',
        dv: 'i32',
        ...SHARED_PARAMS,
      },
    },
    (f, params) => {
      const { q, k, v, out, lse, dOut, dq, dk, dv } = params;
      const p = params as unknown as SharedParams;
      const l = blockLocals(f);
      const item = f.local('i32');
      const head = f.local('i32');
      const batch = f.local('i32');
      const keyHeads = f.local('i32');
      const kvOffset = f.local('i32');
      const qOffset = f.local('i32');
      const qBlock = f.local('i32');
      const kBase = f.local('i32');
      const vBase = f.local('i32');
      const vTransposed = f.local('i32');
      const maskBase = f.local('i32');
      const lseRow = f.local('i32');
      const scratch = f.local('i32');
      const scores = f.local('i32');
      const gradients = f.local('i32');
      const delta = f.local('i32');
      const depthBytes = f.local('i32');
      const kvBytes = f.local('i32');
      const rowLse = f.local('f32');
      const rowDelta = f.local('f32');
      const gradientRow = f.local('i32');
      const accumulator = f.local('v128');
      const shift = f.local('v128');
      f.set(scratch, i32.add(p.work, GEMM_WORK_BYTES));
      f.set(scores, i32.add(scratch, SCORES));
      f.set(gradients, i32.add(scratch, SCORE_GRADIENTS));
      f.set(delta, i32.add(scratch, DELTA));
      f.set(depthBytes, i32.shl(p.depth, 2));
      f.set(kvBytes, i32.mul(p.keyLength, depthBytes));
      f.set(keyHeads, i32.divS(p.queryHeads, p.group));
      f.for(item, p.itemBegin, p.itemEnd, 1, () => {
        // item = b·Hkv + kv head.
        f.set(batch, i32.divS(item, keyHeads));
        f.set(kvOffset, i32.mul(item, kvBytes));
        f.set(kBase, i32.add(k, kvOffset));
        f.set(vBase, i32.add(v, kvOffset));
        f.set(vTransposed, i32.add(p.transposed, kvBytes));
        emitTranspose(f, kBase, p.transposed, p.keyLength, p.depth, l.r, l.o, l.firstForbidden);
        emitTranspose(f, vBase, vTransposed, p.keyLength, p.depth, l.r, l.o, l.firstForbidden);
        f.exec(memoryFill(i32.add(dk, kvOffset), 0, kvBytes));
        f.exec(memoryFill(i32.add(dv, kvOffset), 0, kvBytes));
        f.for(
          head,
          i32.mul(i32.remS(item, keyHeads), p.group),
          i32.mul(i32.add(i32.remS(item, keyHeads), 1), p.group),
          1,
          () => {
            f.set(qOffset, i32.mul(i32.add(i32.mul(batch, p.queryHeads), head), i32.mul(p.queryLength, depthBytes)));
            f.set(
              maskBase,
              i32.add(p.mask, i32.shl(i32.add(i32.mul(batch, p.maskStrideB), i32.mul(head, p.maskStrideH)), 2)),
            );
            f.set(
              lseRow,
              i32.add(lse, i32.shl(i32.mul(i32.add(i32.mul(batch, p.queryHeads), head), p.queryLength), 2)),
            );
            f.exec(memoryFill(i32.add(dq, qOffset), 0, i32.mul(p.queryLength, depthBytes)));
            f.for(l.row0, 0, p.queryLength, ATTENTION_QUERY_BLOCK, () => {
              f.set(l.rows, i32.minS(ATTENTION_QUERY_BLOCK, i32.sub(p.queryLength, l.row0)));
              f.set(qBlock, i32.add(qOffset, i32.mul(l.row0, depthBytes)));
              // Δ_r = Σ dO ⊙ out over the row.
              f.for(l.r, 0, l.rows, 1, () => {
                f.set(gradientRow, i32.add(qBlock, i32.mul(l.r, depthBytes)));
                f.set(accumulator, simd.constSplat(0));
                f.for(l.o, 0, i32.and(depthBytes, ~15), 16, () =>
                  f.set(
                    accumulator,
                    simd.fma(
                      v128.load(i32.add(i32.add(dOut, gradientRow), l.o)),
                      v128.load(i32.add(i32.add(out, gradientRow), l.o)),
                      accumulator,
                    ),
                  ),
                );
                f.set(rowDelta, horizontalSum(simd, accumulator));
                f.for(l.o, i32.and(depthBytes, ~15), depthBytes, 4, () =>
                  f.set(
                    rowDelta,
                    f32.add(
                      rowDelta,
                      f32.mul(
                        f32.load(i32.add(i32.add(dOut, gradientRow), l.o)),
                        f32.load(i32.add(i32.add(out, gradientRow), l.o)),
                      ),
                    ),
                  ),
                );
                f.exec(f32.store(i32.add(delta, i32.shl(l.r, 2)), rowDelta));
              });
              emitKeyLimit(f, p, l);
              f.for(l.column0, 0, l.limit, ATTENTION_KEY_BLOCK, () => {
                f.set(l.columns, i32.minS(ATTENTION_KEY_BLOCK, i32.sub(l.limit, l.column0)));
                const columnBytes = i32.shl(l.columns, 2);
                emitScores(f, simd, small, p, l, i32.add(q, qBlock), p.transposed, maskBase, scores);
                // P = e^(S − lse) (0 for rows without an allowed key).
                f.for(l.r, 0, l.rows, 1, () => {
                  f.set(l.scoreRow, i32.add(scores, i32.mul(l.r, ATTENTION_KEY_BLOCK * 4)));
                  f.set(rowLse, f32.load(i32.add(lseRow, i32.shl(i32.add(l.row0, l.r), 2))));
                  f.if(
                    f32.eq(rowLse, -Infinity),
                    () => f.exec(memoryFill(l.scoreRow, 0, columnBytes)),
                    () => {
                      f.set(shift, simd.splat(rowLse));
                      f.for(l.o, 0, i32.and(columnBytes, ~15), 16, () =>
                        f.exec(
                          v128.store(
                            i32.add(l.scoreRow, l.o),
                            expF32x4(f, simd, simd.sub(v128.load(i32.add(l.scoreRow, l.o)), shift), {
                              nonPositive: true,
                            }),
                          ),
                        ),
                      );
                      f.for(l.o, i32.and(columnBytes, ~15), columnBytes, 4, () =>
                        f.exec(
                          f32.store(
                            i32.add(l.scoreRow, l.o),
                            scalarExp(f, simd, f32.sub(f32.load(i32.add(l.scoreRow, l.o)), rowLse)),
                          ),
                        ),
                      );
                    },
                  );
                });
                // dV_block += Pᵀ·dO_block
                f.exec(
                  call(
                    small,
                    l.columns,
                    p.depth,
                    l.rows,
                    scores,
                    4,
                    ATTENTION_KEY_BLOCK * 4,
                    i32.add(dOut, qBlock),
                    depthBytes,
                    i32.add(i32.add(dv, kvOffset), i32.mul(l.column0, depthBytes)),
                    depthBytes,
                    1,
                  ),
                );
                // dP = dO_block·V_blockᵀ
                f.exec(
                  call(
                    small,
                    l.rows,
                    l.columns,
                    p.depth,
                    i32.add(dOut, qBlock),
                    depthBytes,
                    4,
                    i32.add(vTransposed, i32.shl(l.column0, 2)),
                    i32.shl(p.keyLength, 2),
                    gradients,
                    ATTENTION_KEY_BLOCK * 4,
                    0,
                  ),
                );
                // dS = scale·P ⊙ (dP − Δ)
                f.set(shift, simd.splat(p.scale));
                f.for(l.r, 0, l.rows, 1, () => {
                  f.set(l.scoreRow, i32.mul(l.r, ATTENTION_KEY_BLOCK * 4));
                  f.set(rowDelta, f32.load(i32.add(delta, i32.shl(l.r, 2))));
                  f.set(accumulator, simd.splat(rowDelta));
                  f.for(l.o, 0, i32.and(columnBytes, ~15), 16, () => {
                    const at = i32.add(l.scoreRow, l.o);
                    f.exec(
                      v128.store(
                        i32.add(gradients, at),
                        simd.mul(
                          simd.mul(shift, v128.load(i32.add(scores, at))),
                          simd.sub(v128.load(i32.add(gradients, at)), accumulator),
                        ),
                      ),
                    );
                  });
                  f.for(l.o, i32.and(columnBytes, ~15), columnBytes, 4, () => {
                    const at = i32.add(l.scoreRow, l.o);
                    f.exec(
                      f32.store(
                        i32.add(gradients, at),
                        f32.mul(
                          f32.mul(p.scale, f32.load(i32.add(scores, at))),
                          f32.sub(f32.load(i32.add(gradients, at)), rowDelta),
                        ),
                      ),
                    );
                  });
                });
                // dQ_block += dS·K_block
                f.exec(
                  call(
                    small,
                    l.rows,
                    p.depth,
                    l.columns,
                    gradients,
                    ATTENTION_KEY_BLOCK * 4,
                    4,
                    i32.add(kBase, i32.mul(l.column0, depthBytes)),
                    depthBytes,
                    i32.add(dq, qBlock),
                    depthBytes,
                    1,
                  ),
                );
                // dK_block += dSᵀ·Q_block
                f.exec(
                  call(
                    small,
                    l.columns,
                    p.depth,
                    l.rows,
                    gradients,
                    4,
                    ATTENTION_KEY_BLOCK * 4,
                    i32.add(q, qBlock),
                    depthBytes,
                    i32.add(i32.add(dk, kvOffset), i32.mul(l.column0, depthBytes)),
                    depthBytes,
                    1,
                  ),
                );
              });
            });
          },
        );
      });
    },
  );
}

/** Emits gemm_small, attention_forward and attention_backward into `module`. */
export function emitAttention(module: ModuleBuilder, simd: SimdOps): void {
  const small = emitSmallGemm(module, simd);
  emitForward(module, simd, small);
  emitBackward(module, simd, small);
}
