/**
 * The f32 GEMM every matmul goes through: C = A·B with A, B given by element strides (so any
 * transpose is resolved while packing) and C row-major with leading dimension ldc.
 * Algorithm (Goto/BLIS blocking): for each NC-column block of B and KC-deep slice, pack B into
 * NR-wide panels; for each MC-row block of A, pack A into MR-tall panels; a 3×4 register-blocked
 * micro-kernel (12 accumulators in locals, k innermost) computes each MR×NR tile; edge tiles are
 * computed whole from zero-padded panels and only their valid part is written.
 * Numerics: packed panels and accumulators are float64; the result of each KC slice is added
 * into C in f32. Performance notes: the packs are fixed-size Float64Arrays held in a closure and
 * the micro-kernel masks its indices, which lets V8 fold the array and drop overflow checks
 * (~5 GFLOP/s single-threaded on a Zen 4 core). A WebAssembly SIMD kernel can replace `gemm`
 * wholesale behind the same signature.
 */

/** A strided matrix operand: element (row, column) is data[offset + row·rowStride + column·columnStride]. */
export interface MatrixOperand {
  /** The values. */
  data: Float32Array;
  /** Element index of (0, 0). */
  offset: number;
  /** Elements between consecutive rows. */
  rowStride: number;
  /** Elements between consecutive columns. */
  columnStride: number;
}

/** The signature of `gemm`. */
export type Gemm = (
  m: number,
  n: number,
  k: number,
  a: MatrixOperand,
  b: MatrixOperand,
  c: Float32Array,
  cOffset: number,
  ldc: number,
) => void;

/**
 * Builds the GEMM. The packs live in this closure rather than at module level because bundlers
 * turn top-level `const` into `var`, and V8 only folds a constant typed array (dropping its map,
 * length and overflow checks in the micro-kernel) when the binding is a real `const`.
 */
function createGemm(): Gemm {
  const MR = 3;
  const NR = 4;
  const KC = 256;
  const MC = 96;
  const NC = 1024;
  const PACK_A_MASK = 0x7fff; // ≥ MC·KC − 1
  const PACK_B_MASK = 0x3ffff; // ≥ NC·KC − 1
  // Padded past the mask so that index + MR or + NR stays inside the array.
  const PACK_A = new Float64Array(PACK_A_MASK + 1 + 16);
  const PACK_B = new Float64Array(PACK_B_MASK + 1 + 16);
  const EDGE_TILE = new Float32Array(MR * NR);

  function microKernel(
    kc: number,
    aIndex: number,
    bIndex: number,
    c: Float32Array,
    cIndex: number,
    ldc: number,
    accumulate: boolean,
  ): void {
    let c00 = 0,
      c01 = 0,
      c02 = 0,
      c03 = 0;
    let c10 = 0,
      c11 = 0,
      c12 = 0,
      c13 = 0;
    let c20 = 0,
      c21 = 0,
      c22 = 0,
      c23 = 0;
    let ai = aIndex;
    let bi = bIndex;
    for (let p = 0; p < kc; p++) {
      const x = ai & PACK_A_MASK;
      const y = bi & PACK_B_MASK;
      const b0 = PACK_B[y],
        b1 = PACK_B[y + 1],
        b2 = PACK_B[y + 2],
        b3 = PACK_B[y + 3];
      const a0 = PACK_A[x],
        a1 = PACK_A[x + 1],
        a2 = PACK_A[x + 2];
      c00 += a0 * b0;
      c01 += a0 * b1;
      c02 += a0 * b2;
      c03 += a0 * b3;
      c10 += a1 * b0;
      c11 += a1 * b1;
      c12 += a1 * b2;
      c13 += a1 * b3;
      c20 += a2 * b0;
      c21 += a2 * b1;
      c22 += a2 * b2;
      c23 += a2 * b3;
      ai = x + MR;
      bi = y + NR;
    }
    const r1 = cIndex + ldc;
    const r2 = r1 + ldc;
    if (accumulate) {
      c[cIndex] += c00;
      c[cIndex + 1] += c01;
      c[cIndex + 2] += c02;
      c[cIndex + 3] += c03;
      c[r1] += c10;
      c[r1 + 1] += c11;
      c[r1 + 2] += c12;
      c[r1 + 3] += c13;
      c[r2] += c20;
      c[r2 + 1] += c21;
      c[r2 + 2] += c22;
      c[r2 + 3] += c23;
    } else {
      c[cIndex] = c00;
      c[cIndex + 1] = c01;
      c[cIndex + 2] = c02;
      c[cIndex + 3] = c03;
      c[r1] = c10;
      c[r1 + 1] = c11;
      c[r1 + 2] = c12;
      c[r1 + 3] = c13;
      c[r2] = c20;
      c[r2 + 1] = c21;
      c[r2 + 2] = c22;
      c[r2 + 3] = c23;
    }
  }

  /** Pack rows [row0, row0+mc) × depth [depth0, depth0+kc) of A into MR-tall panels (zero-padded). */
  function packA(a: MatrixOperand, row0: number, depth0: number, mc: number, kc: number): void {
    const { data, rowStride, columnStride } = a;
    let q = 0;
    for (let i = 0; i < mc; i += MR) {
      const rows = Math.min(MR, mc - i);
      const panelBase = a.offset + (row0 + i) * rowStride + depth0 * columnStride;
      for (let p = 0; p < kc; p++) {
        const base = panelBase + p * columnStride;
        for (let r = 0; r < rows; r++) PACK_A[q + r] = data[base + r * rowStride];
        for (let r = rows; r < MR; r++) PACK_A[q + r] = 0;
        q += MR;
      }
    }
  }

  /** Pack depth [depth0, depth0+kc) × columns [column0, column0+nc) of B into NR-wide panels (zero-padded). */
  function packB(b: MatrixOperand, depth0: number, column0: number, kc: number, nc: number): void {
    const { data, rowStride, columnStride } = b;
    let q = 0;
    for (let j = 0; j < nc; j += NR) {
      const columns = Math.min(NR, nc - j);
      const panelBase = b.offset + depth0 * rowStride + (column0 + j) * columnStride;
      for (let p = 0; p < kc; p++) {
        const base = panelBase + p * rowStride;
        for (let t = 0; t < columns; t++) PACK_B[q + t] = data[base + t * columnStride];
        for (let t = columns; t < NR; t++) PACK_B[q + t] = 0;
        q += NR;
      }
    }
  }

  function gemm(
    m: number,
    n: number,
    k: number,
    a: MatrixOperand,
    b: MatrixOperand,
    c: Float32Array,
    cOffset: number,
    ldc: number,
  ): void {
    if (m === 0 || n === 0) return;
    if (k === 0) {
      for (let i = 0; i < m; i++) c.fill(0, cOffset + i * ldc, cOffset + i * ldc + n);
      return;
    }
    for (let jc = 0; jc < n; jc += NC) {
      const nc = Math.min(NC, n - jc);
      for (let pc = 0; pc < k; pc += KC) {
        const kc = Math.min(KC, k - pc);
        const accumulate = pc > 0;
        packB(b, pc, jc, kc, nc);
        for (let ic = 0; ic < m; ic += MC) {
          const mc = Math.min(MC, m - ic);
          packA(a, ic, pc, mc, kc);
          for (let jr = 0; jr < nc; jr += NR) {
            const nr = Math.min(NR, nc - jr);
            const bIndex = jr * kc;
            for (let ir = 0; ir < mc; ir += MR) {
              const mr = Math.min(MR, mc - ir);
              const cIndex = cOffset + (ic + ir) * ldc + jc + jr;
              if (mr === MR && nr === NR) {
                microKernel(kc, ir * kc, bIndex, c, cIndex, ldc, accumulate);
                continue;
              }
              microKernel(kc, ir * kc, bIndex, EDGE_TILE, 0, NR, false);
              for (let r = 0; r < mr; r++) {
                for (let t = 0; t < nr; t++) {
                  const target = cIndex + r * ldc + t;
                  c[target] = accumulate ? c[target] + EDGE_TILE[r * NR + t] : EDGE_TILE[r * NR + t];
                }
              }
            }
          }
        }
      }
    }
  }

  return gemm;
}

/** C[m×n] (row-major, leading dimension ldc, from cOffset) = A[m×k] · B[k×n]. */
export const gemm: Gemm = createGemm();
