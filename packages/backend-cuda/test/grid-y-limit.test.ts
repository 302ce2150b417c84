// Kernels that put rows (or row tiles) in grid y take those past the device's grid-y limit
// (cudaDeviceProp::maxGridSize[1], 65535 on every NVIDIA GPU) in steps of gridDim.y. On a GPU that
// takes a matmul of more than 65535 row tiles; here the simulator is set to maxGridY 2, so every
// case below has more rows than grid y may hold, and the simulator refuses a launch with more.
// The device reports compute capability 8.0, so the half matmuls take mma.sync (or WMMA) and
// never the sm_90a wgmma kernel, whose persistent grid is one-dimensional.
// Each case runs on a device with the default limit and on the limited one: the bits must be the
// same (same tiles, same order), and the matmuls still match their references. Covered: the f32
// SIMT and TF32 matmuls, the mma.sync and WMMA half matmuls, the split-K mma.sync with its
// reduction, a shared-B batch folded into one tall matmul, the long-row reduce, rmsNormBackward's
// weight-gradient chunks (its two-pass path, for rows longer than 16384; the one-pass kernel's grid
// is one-dimensional), rope and the transpose copy.
import type { DType, StridedView } from '@kiln/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CudaBackend } from '../src/cuda-backend.js';
import { configureSimulator, createSimulatedCudaBackend } from '../src/simulator.js';
import { expectF32MatmulMatchesReference } from './f32-matmul-check.js';
import { expectHalfMatmulMatchesReference, type HalfDType, type HalfMatmulCase } from './half-matmul-check.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

/** The limit the second device reports (every case needs more than this in grid y). */
const LIMITED_GRID_Y = 2;
const DEFAULT_GRID_Y = 65535;
const TF32_BOUND = (k: number) => 2 ** -10 + 2 ** -20 + k * 2 ** -24;

/** Deterministic f32 values in [-1, 1). */
function values(count: number, seed: number): Float32Array {
  const out = new Float32Array(count);
  let state = seed;
  for (let i = 0; i < count; i++) {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    out[i] = (state >>> 8) / 2 ** 23 - 1;
  }
  return out;
}

/** A device buffer holding `data` as f32, shaped. */
function f32Tensor(backend: CudaBackend, shape: number[], data: Float32Array) {
  const buffer = backend.alloc(data.byteLength);
  backend.upload(buffer, new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
  return { buffer, shape, dtype: 'f32' as DType };
}

/** Downloads each tensor's bytes and frees every buffer given. */
async function collect(
  backend: CudaBackend,
  outputs: { buffer: unknown }[],
  inputs: { buffer: unknown }[],
): Promise<Uint8Array[]> {
  const bytes: Uint8Array[] = [];
  for (const output of outputs) bytes.push((await backend.download(output.buffer as never)).slice());
  for (const tensor of [...outputs, ...inputs]) backend.free(tensor.buffer as never);
  return bytes;
}

interface GridCase {
  name: string;
  /** Which of the two devices (plain, or the one with allowTf32) runs it. */
  tf32?: boolean;
  /** Runs the case and returns its outputs' bytes; checks against a reference where it has one. */
  run(backend: CudaBackend): Promise<Uint8Array[]>;
}

const halfBytes = (bits: Uint16Array) => new Uint8Array(bits.buffer.slice(0));
const f32Bytes = (data: Float32Array) => new Uint8Array(data.buffer.slice(0));

/** A half matmul case: checked against its reference, its output bits returned. */
const halfMatmul = (name: string, dtype: HalfDType, shape: HalfMatmulCase): GridCase => ({
  name,
  run: async (backend) => [halfBytes(await expectHalfMatmulMatchesReference(backend, dtype, shape))],
});

const CASES: GridCase[] = [
  {
    name: 'f32 SIMT matmul, 300 rows (3 tiles of 128), 2 batches, nt',
    run: async (backend) => {
      const shape = { batch: 2, m: 300, n: 70, k: 40, transposeA: false, transposeB: true };
      return [f32Bytes((await expectF32MatmulMatchesReference(backend, shape)).got)];
    },
  },
  {
    name: 'TF32 matmul, 300 rows, tn',
    tf32: true,
    run: async (backend) => {
      const shape = { batch: 1, m: 300, n: 40, k: 24, transposeA: true, transposeB: false };
      return [f32Bytes((await expectF32MatmulMatchesReference(backend, shape, TF32_BOUND(shape.k))).got)];
    },
  },
  halfMatmul('bf16 mma.sync matmul, 300 rows (3 tiles of 128), 2 batches', 'bf16', {
    batch: 2,
    m: 300,
    n: 40,
    k: 72,
    transposeA: false,
    transposeB: false,
  }),
  halfMatmul('f16 WMMA matmul (k = 21: not whole 16-byte chunks), 200 rows, tt', 'f16', {
    batch: 1,
    m: 200,
    n: 17,
    k: 21,
    transposeA: true,
    transposeB: true,
  }),
  {
    name: 'bf16 split-K mma.sync matmul, 136 rows (3 tiles of 64), k = 2048',
    run: async (backend) => {
      const before = backend.splitKMatmulLaunches;
      const shape = { batch: 1, m: 136, n: 24, k: 2048, transposeA: true, transposeB: false };
      const bits = await expectHalfMatmulMatchesReference(backend, 'bf16', shape);
      expect(backend.splitKMatmulLaunches - before, 'split-K launches').toBe(1);
      return [halfBytes(bits)];
    },
  },
  halfMatmul('bf16 batch of 5 sharing B, folded into one matmul of 320 rows', 'bf16', {
    batch: 5,
    m: 64,
    n: 32,
    k: 48,
    transposeA: false,
    transposeB: true,
    broadcastB: true,
  }),
  {
    name: 'sum over rows of 20000 (5 rows in grid y, chunked)',
    run: async (backend) => {
      const data = values(5 * 20000, 17);
      const x = f32Tensor(backend, [5, 20000], data);
      const out = f32Tensor(backend, [5], new Float32Array(5));
      backend.reduce('sum', x, out, 5, 20000, 1);
      const [bytes] = await collect(backend, [out], [x]);
      const got = new Float32Array(bytes!.buffer);
      for (let row = 0; row < 5; row++) {
        let expected = 0;
        for (let i = 0; i < 20000; i++) expected += data[row * 20000 + i]!;
        expect(Math.abs(got[row]! - expected), `row ${row}`).toBeLessThanOrEqual(1e-2);
      }
      return [bytes!];
    },
  },
  {
    name: 'rmsNormBackward of 130 rows of 16392 (two-pass: 3 weight-gradient chunks of 64 rows)',
    run: async (backend) => {
      const rows = 130;
      const cols = 16392;
      const x = f32Tensor(backend, [rows, cols], values(rows * cols, 23));
      const weight = f32Tensor(backend, [cols], values(cols, 29));
      const dy = f32Tensor(backend, [rows, cols], values(rows * cols, 31));
      const normalized = f32Tensor(backend, [rows, cols], new Float32Array(rows * cols));
      const rstd = f32Tensor(backend, [rows], new Float32Array(rows));
      const dx = f32Tensor(backend, [rows, cols], new Float32Array(rows * cols));
      const dWeight = f32Tensor(backend, [cols], new Float32Array(cols));
      backend.rmsNorm!(x, weight, normalized, rstd, rows, cols, 1e-5);
      backend.rmsNormBackward!(x, weight, rstd, dy, dx, dWeight, rows, cols);
      return collect(backend, [dx, dWeight], [x, weight, dy, normalized, rstd]);
    },
  },
  {
    name: 'rope of [2, 20, 6, 16] (40 rows of B·H, 5 chunks of 8)',
    run: async (backend) => {
      const shape = [2, 20, 6, 16];
      const x = f32Tensor(backend, shape, values(2 * 20 * 6 * 16, 37));
      const out = f32Tensor(backend, shape, new Float32Array(2 * 20 * 6 * 16));
      backend.rope!(x, out, 3, 10000, false);
      return collect(backend, [out], [x]);
    },
  },
  {
    name: 'transpose copy of 70 × 200 (7 tiles of 32 in grid y)',
    run: async (backend) => {
      const data = values(70 * 200, 41);
      const src = f32Tensor(backend, [70, 200], data);
      const dst = f32Tensor(backend, [70, 200], new Float32Array(70 * 200));
      const before = backend.transposeCopyLaunches;
      const from: StridedView = { ...src, strides: [1, 70], offset: 0 };
      const to: StridedView = { ...dst, strides: [200, 1], offset: 0 };
      backend.copy(from, to);
      expect(backend.transposeCopyLaunches - before, 'transpose copy launches').toBe(1);
      const [bytes] = await collect(backend, [dst], [src]);
      const got = new Float32Array(bytes!.buffer);
      for (let p = 0; p < 70; p++) {
        for (let q = 0; q < 200; q++) expect(got[p * 200 + q], `[${p}][${q}]`).toBe(data[p + q * 70]);
      }
      return [bytes!];
    },
  },
];

describe.skipIf(skipReason !== undefined)(
  `row tiles past the device's grid-y limit on the CUDA simulator${skipReason ? ` (skipped: ${skipReason})` : ''}`,
  () => {
    /** Outputs of each case on a device with the default limit, in CASES order. */
    const expected: Uint8Array[][] = [];
    let plain: CudaBackend | undefined;
    let tf32: CudaBackend | undefined;

    beforeAll(async () => {
      configureSimulator({ computeCapability: '8.0' });
      const open = () => [
        createSimulatedCudaBackend({ matmul: 'kiln' }),
        createSimulatedCudaBackend({ matmul: 'kiln', allowTf32: true }),
      ];
      const [fullPlain, fullTf32] = open();
      try {
        for (const { run, tf32: useTf32 } of CASES) expected.push(await run(useTf32 ? fullTf32! : fullPlain!));
      } finally {
        fullPlain!.dispose();
        fullTf32!.dispose();
      }
      // The device reads the limit when it opens.
      configureSimulator({ maxGridY: LIMITED_GRID_Y });
      [plain, tf32] = open();
    });
    afterAll(() => {
      plain?.dispose();
      tf32?.dispose();
      configureSimulator({ maxGridY: DEFAULT_GRID_Y, computeCapability: '9.0' });
    });

    for (const [index, { name, run, tf32: useTf32 }] of CASES.entries()) {
      it(`${name}: the same bits with grid y limited to ${LIMITED_GRID_Y}`, async () => {
        const got = await run(useTf32 ? tf32! : plain!);
        expect(got.length).toBe(expected[index]!.length);
        for (const [output, bytes] of got.entries())
          expect(Buffer.compare(Buffer.from(bytes), Buffer.from(expected[index]![output]!)), `output ${output}`).toBe(
            0,
          );
      });
    }

    it('refuses a grid-y limit outside 1 … 65535, naming the option', () => {
      expect(() => configureSimulator({ maxGridY: 0 })).toThrow(/maxGridY/);
      expect(() => configureSimulator({ maxGridY: 70000 })).toThrow(/maxGridY/);
    });
  },
);
