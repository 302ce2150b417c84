// CudaBackend.matmulDispatch and the per-shape choice of matmul 'auto' on the CUDA simulator, with
// cuBLAS loaded from kiln's test double (test/fixtures/fake-cublas.cpp): f16/bf16 problems that
// kiln's wgmma or mma.sync kernel runs without splitting k go to kiln's kernel on a device running
// the sm_90a kernels (kiln_matmul_preferred_over_cublas), everything else to cuBLAS; matmul
// 'cublas' sends everything to cuBLAS, and a compute capability 8.0 device too. Each case also
// runs the matmul and checks, through the kernel timer's launch names, that the library the
// dispatch named is the one that ran (and which kiln kernel, unsplit or split).
import type { DType, MatmulParams, TensorRef } from '@kiln/core';
import { InvalidArgumentError, KilnError } from '@kiln/core';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CudaBackend } from '../src/cuda-backend.js';
import { configureSimulator, createSimulatedCudaBackend } from '../src/simulator.js';
import { buildFakeCublas } from './fake-cublas.js';
import type { HalfMatmulCase } from './half-matmul-check.js';
import { launchedKernels } from './simulated-device.js';
import { simulatorSkipReason } from './simulator-status.js';

const directory = mkdtempSync(join(tmpdir(), 'kiln-dispatch-cublas-'));
const skipReason = simulatorSkipReason() ?? buildFakeCublas(directory);
afterAll(() => rmSync(directory, { recursive: true, force: true }));

const BYTES: Record<string, number> = { f32: 4, f16: 2, bf16: 2 };

/** Operands and output of `problem` in `dtype` (zeros: only the dispatch and the route matter here). */
function operands(backend: CudaBackend, dtype: DType, problem: HalfMatmulCase) {
  const { batch, m, n, k } = problem;
  const tensor = (shape: number[]): TensorRef => ({
    buffer: backend.alloc(shape.reduce((a, b) => a * b, 1) * BYTES[dtype]!),
    shape,
    dtype,
  });
  const a = tensor([batch, m, k]);
  const b = tensor([batch, k, n]);
  const out = tensor([batch, m, n]);
  const params: MatmulParams = { ...problem, batchStrideA: m * k, batchStrideB: k * n };
  return {
    a,
    b,
    out,
    params,
    free: () => {
      for (const ref of [a, b, out]) backend.free(ref.buffer);
    },
  };
}

/** What the kernel timer names for one run of the problem: 'cuBLAS', or kiln's route such as 'kiln wgmma' or 'kiln wgmma, split-K 3'. */
async function routeOf(backend: CudaBackend, dtype: DType, problem: HalfMatmulCase): Promise<string> {
  const call = operands(backend, dtype, problem);
  try {
    const { names } = await launchedKernels(backend, async () => {
      backend.matmul(call.a, call.b, call.out, call.params);
      await backend.synchronize();
    });
    const route = names.map((name) => /\((kiln [^)]*|cuBLAS)\)$/.exec(name)?.[1]).find((found) => found !== undefined);
    if (route === undefined) throw new Error(`no matmul among the timed launches: ${names.join('; ')}`);
    return route;
  } finally {
    call.free();
  }
}

function dispatchOf(backend: CudaBackend, dtype: DType, problem: HalfMatmulCase) {
  const call = operands(backend, dtype, problem);
  try {
    return backend.matmulDispatch(call.a, call.b, call.out, call.params);
  } finally {
    call.free();
  }
}

/** 3 batches of 2×2 tiles of 128×128 (test/matmul-wgmma.test.ts): wgmma, unsplit. */
const WGMMA_UNSPLIT: HalfMatmulCase = { batch: 3, m: 136, n: 200, k: 264, transposeA: false, transposeB: false };
/** Under two tiles per simulated multiprocessor: mma.sync, unsplit. */
const MMA_UNSPLIT: HalfMatmulCase = { batch: 1, m: 136, n: 200, k: 64, transposeA: false, transposeB: false };
/** One tile, long k (as gpt2s's q/k/v/o weight gradient): wgmma split into 3 k ranges. */
const SPLIT_K: HalfMatmulCase = { batch: 1, m: 104, n: 72, k: 1800, transposeA: true, transposeB: false };
/** Rows of 7 and 9 elements, too small to pad: the WMMA kernel. */
const WMMA: HalfMatmulCase = { batch: 1, m: 8, n: 7, k: 9, transposeA: false, transposeB: false };

describe.skipIf(skipReason !== undefined)(
  `matmul dispatch with cuBLAS loaded (kiln's test double) on the CUDA simulator${skipReason ? ` (skipped: ${skipReason})` : ''}`,
  () => {
    let auto: CudaBackend;
    let kilnOnly: CudaBackend;
    beforeAll(() => {
      auto = createSimulatedCudaBackend({ cublasPath: directory });
      kilnOnly = createSimulatedCudaBackend({ matmul: 'kiln' });
    });
    afterAll(() => {
      auto?.dispose();
      kilnOnly?.dispose();
    });

    it("'auto' runs f16/bf16 problems kiln's wgmma or mma.sync kernel takes unsplit on that kernel", async () => {
      for (const dtype of ['bf16', 'f16'] as const) {
        for (const [problem, kernel] of [
          [WGMMA_UNSPLIT, 'kiln wgmma'],
          [MMA_UNSPLIT, 'kiln mma.sync'],
        ] as const) {
          expect(dispatchOf(auto, dtype, problem), `${dtype} ${kernel}`).toEqual({
            library: 'kiln',
            kilnPreferred: true,
          });
          const calls = auto.cublasCalls;
          expect(await routeOf(auto, dtype, problem)).toBe(kernel);
          expect(auto.cublasCalls, `${dtype} ${kernel}: cuBLAS calls`).toBe(calls);
        }
      }
    });

    it("'auto' leaves split-K problems, f32 and problems only WMMA takes to cuBLAS", async () => {
      expect(await routeOf(kilnOnly, 'bf16', SPLIT_K)).toBe('kiln wgmma, split-K 3');
      expect(await routeOf(kilnOnly, 'bf16', WMMA)).toBe('kiln WMMA');
      for (const [dtype, problem, name] of [
        ['bf16', SPLIT_K, 'split-K'],
        ['f32', WGMMA_UNSPLIT, 'f32'],
        ['bf16', WMMA, 'WMMA'],
      ] as const) {
        expect(dispatchOf(auto, dtype, problem), name).toEqual({ library: 'cublas', kilnPreferred: false });
        const calls = auto.cublasCalls;
        expect(await routeOf(auto, dtype, problem), name).toBe('cuBLAS');
        expect(auto.cublasCalls, `${name}: cuBLAS calls`).toBe(calls + 1);
      }
    });

    it("says so in capabilities and kiln info; matmul: 'kiln' keeps every problem whatever it prefers", () => {
      expect(auto.capabilities.matmul.path).toBe('cublas');
      expect(auto.matmulPath).toBe(
        `cuBLAS 13.1.0 (${directory}/libcublas.so.13): f32 (TF32 off), f16/bf16 per shape (kiln's own kernels where they need no split along k, cuBLAS elsewhere)`,
      );
      expect(dispatchOf(kilnOnly, 'bf16', SPLIT_K)).toEqual({ library: 'kiln', kilnPreferred: false });
      expect(dispatchOf(kilnOnly, 'bf16', WGMMA_UNSPLIT)).toEqual({ library: 'kiln', kilnPreferred: true });
    });

    it("matmul: 'cublas' sends every problem to cuBLAS", async () => {
      const cublas = createSimulatedCudaBackend({ cublasPath: directory, matmul: 'cublas' });
      try {
        expect(dispatchOf(cublas, 'bf16', WGMMA_UNSPLIT)).toEqual({ library: 'cublas', kilnPreferred: true });
        expect(await routeOf(cublas, 'bf16', WGMMA_UNSPLIT)).toBe('cuBLAS');
        expect(cublas.matmulPath).toBe(
          `cuBLAS 13.1.0 (${directory}/libcublas.so.13): f32 (TF32 off), f16/bf16 with f32 accumulation`,
        );
      } finally {
        cublas.dispose();
      }
    });

    it('checks its arguments as matmul does, with typed errors', () => {
      const call = operands(auto, 'bf16', WGMMA_UNSPLIT);
      try {
        expect(() => auto.matmulDispatch(call.a, call.b, call.out, { ...call.params, m: 137 })).toThrow(
          /matmul: out bf16 \[3, 136, 200\] has 81600 elements, expected 82200 \(batch · m · n\)/,
        );
        const floats = { ...call.out, dtype: 'f32' as const };
        expect(() => auto.matmulDispatch(call.a, call.b, floats, call.params)).toThrow(KilnError);
        expect(() =>
          auto.matmulDispatch(call.a, call.b, call.out, { ...call.params, transposeA: 'no' as unknown as boolean }),
        ).toThrow(InvalidArgumentError);
      } finally {
        call.free();
      }
    });

    it('refuses a disposed backend by name', () => {
      const other = createSimulatedCudaBackend();
      other.dispose();
      const call = operands(auto, 'bf16', WGMMA_UNSPLIT);
      try {
        expect(() => other.matmulDispatch(call.a, call.b, call.out, call.params)).toThrow(/matmulDispatch/);
      } finally {
        call.free();
      }
    });

    describe('on a simulated compute capability 8.0 device (no sm_90a kernels)', () => {
      let ampere: CudaBackend;
      beforeAll(() => {
        configureSimulator({ computeCapability: '8.0' });
        ampere = createSimulatedCudaBackend({ cublasPath: directory });
      });
      afterAll(() => {
        ampere?.dispose();
        configureSimulator({ computeCapability: '9.0' });
      });

      it("'auto' sends every problem to cuBLAS (kiln was not measured faster there)", async () => {
        expect(dispatchOf(ampere, 'bf16', WGMMA_UNSPLIT)).toEqual({ library: 'cublas', kilnPreferred: false });
        expect(dispatchOf(ampere, 'f16', MMA_UNSPLIT)).toEqual({ library: 'cublas', kilnPreferred: false });
        expect(await routeOf(ampere, 'bf16', MMA_UNSPLIT)).toBe('cuBLAS');
        expect(ampere.matmulPath).toMatch(/f16\/bf16 with f32 accumulation$/);
      });
    });
  },
);
