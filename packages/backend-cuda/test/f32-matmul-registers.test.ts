// ptxas's verdict on the f32 matmul kernels (kernels/matmul.cu, matmul_f32_async.cu,
// matmul_f32_tf32.cu) for sm_80 and sm_90a, compiled as the addon's release build compiles them:
// none spills to local memory, but for one known case. They run at the register budget their
// launch bounds allow (128 or 255 a thread), where a small source change tips them into spilling
// inside the k loop — a refactor in session 32 made the 8×16 kernel load 600 bytes a thread from
// local memory — and no functional test sees it. The known case: on sm_80 the 8×8 register-fed
// kernel keeps a few work-item constants in local memory (stored before the k loop, reloaded by
// the epilogue only: no local access inside the loop, by its SASS in session 32); it may spill no
// more than it did then (its interior instantiation spills less); and on sm_80 the 8×16 kernel in
// k16 steps ("8x16-k16") keeps two work-item constants in local memory, one of them reloaded once
// per k16 step (2048 FMAs) — 24 bytes in session 36's SASS; on sm_90a it spills nothing (nor do
// the "overlap" variants anywhere). Needs nvcc (the CUDA toolkit); it compiles, it runs nothing.
import { describe, expect, it } from 'vitest';
import { ptxasReport, ptxasSkipReason as skipReason } from './ptxas-report.js';

describe.skipIf(skipReason !== undefined)(
  `f32 matmul kernels under ptxas${skipReason ? ` (skipped: ${skipReason})` : ''}`,
  () => {
    for (const arch of ['80', '90a']) {
      it(`sm_${arch}: no f32 matmul kernel spills`, { timeout: 600_000 }, () => {
        const entries = ['matmul.cu', 'matmul_f32_async.cu', 'matmul_f32_tf32.cu'].flatMap((file) =>
          ptxasReport(file, arch).filter((entry) => /matmul_f32_(async_)?kernel/.test(entry.kernel)),
        );
        // matmul.cu: the 8×16 and 8×8 register-fed kernels; the cp.async ring in k8 and k16 slices;
        // TF32 — the register-fed ones and TF32 each bounds-checked and interior (kInterior), the
        // interior ones of TF32 (kInteriorPerLayout) and 8×16 ("8x16-per-layout") once per layout
        // too, and 8×16's interior variants (k16 steps, overlap, both): 2 + 6 + 5 + 2 + 3.
        expect(entries.length, entries.map((entry) => entry.kernel).join('\n')).toBe(18);
        // SimtMath<4, serpentine, no overlap> in k16 steps.
        const k16 = (kernel: string) => kernel.includes('SimtMathILi4ELb1ELb0E') && kernel.includes('ELi16E');
        expect(
          entries.filter((entry) => k16(entry.kernel)),
          'the k16 kernel',
        ).toHaveLength(1);
        const allowed = (kernel: string) =>
          arch !== '80' ? 0 : kernel.includes('SimtMathILi2E') ? 356 : k16(kernel) ? 24 : 0;
        const spilling = entries.filter((entry) => entry.spilled > allowed(entry.kernel));
        expect(
          spilling.map((entry) => `${entry.kernel}: ${entry.registers} registers, ${entry.spilled} bytes spilled`),
        ).toEqual([]);
      });
    }
  },
);
