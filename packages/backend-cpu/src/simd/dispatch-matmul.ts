/**
 * matmul on the SIMD path: every product is one call of the wasm gemm per thread share.
 * Shares: a batch large enough is split by whole matrices; otherwise each matrix is split by
 * rows (multiples of the 4-row micro-tile) when m ≥ n, else by columns (multiples of 8). The
 * gemm computes each element the same way whatever the split, so results are bit-identical
 * for any thread count.
 */
import type { MatmulParams, TensorRef } from '@kiln/core';
import type { WasmCall } from './thread-pool.js';
import { GEMM_MR, GEMM_NR } from './emit-gemm.js';
import { splitRange, type SimdContext } from './simd-context.js';

/** One gemm problem in heap addresses and element strides. */
interface GemmProblem {
  m: number;
  n: number;
  k: number;
  a: number;
  aRow: number;
  aCol: number;
  b: number;
  bRow: number;
  bCol: number;
  c: number;
  ldc: number;
}

function gemmCall(problem: GemmProblem, scratch: number): WasmCall {
  const { m, n, k, a, aRow, aCol, b, bRow, bCol, c, ldc } = problem;
  return { fn: 'gemm', args: [m, n, k, a, aRow, aCol, b, bRow, bCol, c, ldc, 0, scratch] };
}

/** The part of `problem` with rows [r0, r1) or columns [c0, c1). */
function rowsOf(problem: GemmProblem, r0: number, r1: number): GemmProblem {
  return { ...problem, m: r1 - r0, a: problem.a + 4 * r0 * problem.aRow, c: problem.c + 4 * r0 * problem.ldc };
}
function columnsOf(problem: GemmProblem, c0: number, c1: number): GemmProblem {
  return { ...problem, n: c1 - c0, b: problem.b + 4 * c0 * problem.bCol, c: problem.c + 4 * c0 };
}

/** Runs a list of gemm problems over the backend's threads. */
export function runGemms(context: SimdContext, problems: GemmProblem[]): void {
  let work = 0;
  for (const problem of problems) work += problem.m * problem.n * problem.k;
  const threads = context.threadsFor(work);
  if (threads === 1) {
    const scratch = context.scratch;
    for (const problem of problems) context.kernels.gemm(...gemmCall(problem, scratch).args);
    return;
  }
  const shares: GemmProblem[][] = Array.from({ length: threads }, () => []);
  if (problems.length >= 2 * threads) {
    splitRange(problems.length, threads).forEach(([start, end], thread) =>
      shares[thread].push(...problems.slice(start, end)),
    );
  } else {
    for (const problem of problems) {
      const byRows = problem.m >= problem.n;
      const ranges = byRows ? splitRange(problem.m, threads, GEMM_MR) : splitRange(problem.n, threads, GEMM_NR);
      ranges.forEach(([start, end], thread) =>
        shares[thread].push(byRows ? rowsOf(problem, start, end) : columnsOf(problem, start, end)),
      );
    }
  }
  context.parallel(threads, (thread, scratch) => shares[thread].map((problem) => gemmCall(problem, scratch)));
}

/** matmul of f32 tensors; false when the SIMD path does not take the call. */
export function simdMatmul(
  context: SimdContext,
  a: TensorRef,
  b: TensorRef,
  out: TensorRef,
  params: MatmulParams,
): boolean {
  if (!context.allF32(a, b, out)) return false;
  const { batch, m, n, k, transposeA, transposeB, batchStrideA, batchStrideB } = params;
  const base: GemmProblem = {
    m,
    n,
    k,
    a: context.address(a, 'matmul'),
    aRow: transposeA ? 1 : k,
    aCol: transposeA ? m : 1,
    b: context.address(b, 'matmul'),
    bRow: transposeB ? 1 : n,
    bCol: transposeB ? k : 1,
    c: context.address(out, 'matmul'),
    ldc: n,
  };
  if (batch === 0 || m === 0 || n === 0) return true;
  if (batch > 1 && batchStrideB === 0 && !transposeA && batchStrideA === m * k) {
    // [batch·m, k]·[k, n]: one tall product packs B once.
    runGemms(context, [{ ...base, m: batch * m }]);
    return true;
  }
  const problems: GemmProblem[] = [];
  for (let index = 0; index < batch; index++) {
    problems.push({
      ...base,
      a: base.a + 4 * index * batchStrideA,
      b: base.b + 4 * index * batchStrideB,
      c: base.c + 4 * index * m * n,
    });
  }
  runGemms(context, problems);
  return true;
}
