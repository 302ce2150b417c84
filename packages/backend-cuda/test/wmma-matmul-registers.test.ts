// ptxas's verdict on the WMMA f16/bf16 matmul kernels (kernels/matmul_wmma_f16.cu, _bf16.cu): the
// 64×64 ones do not spill; the 128×128 ones run at the 128 registers a thread that two blocks per
// multiprocessor allow (64 f32 accumulators, the operand fragments and the next slice's chunks) and
// spill a little, f16 at most 16 bytes and bf16 (whose fragment loads go through generic loads and
// a call) more — no more than when their operands were first staged as stored and read by
// row_major / col_major fragments (session 34, against 204–348 bytes before). A regression guard:
// a small source change can tip them into spilling inside the k loop, which no functional test sees.
// sm_75 is the WMMA kernel's main target (Turing); from sm_80 it runs only operands that are not in
// whole 16-byte chunks, too small to be worth padding. Needs nvcc (the CUDA toolkit); it compiles, it runs nothing.
import { describe, expect, it } from 'vitest';
import { ptxasReport, ptxasSkipReason as skipReason } from './ptxas-report.js';

/** The most bytes (stores + loads) a 128×128 instantiation may spill, per file and architecture. */
const ALLOWED: Record<string, Record<string, number>> = {
  'matmul_wmma_f16.cu': { '75': 16, '80': 8, '90a': 0 },
  'matmul_wmma_bf16.cu': { '80': 168, '90a': 128 },
};

describe.skipIf(skipReason !== undefined)(
  `WMMA matmul kernels under ptxas${skipReason ? ` (skipped: ${skipReason})` : ''}`,
  () => {
    for (const [file, arches] of Object.entries(ALLOWED)) {
      for (const [arch, allowed] of Object.entries(arches)) {
        it(`${file} for sm_${arch}: 8 kernels (2 block shapes × 4 layouts); 64×64 spill nothing, 128×128 at most ${allowed} bytes`, {
          timeout: 600_000,
        }, () => {
          const entries = ptxasReport(file, arch).filter((entry) => entry.kernel.includes('matmul_wmma_kernel'));
          expect(entries.length, entries.map((entry) => entry.kernel).join('\n')).toBe(8);
          const over = entries.filter((entry) => entry.spilled > (entry.kernel.includes('Li128ELi128E') ? allowed : 0));
          expect(
            over.map((entry) => `${entry.kernel}: ${entry.registers} registers, ${entry.spilled} bytes spilled`),
          ).toEqual([]);
        });
      }
    }
  },
);
