// The cuBLAS path without a GPU: test/fixtures/fake-cublas.cpp is built into libcublas.so.13 and
// libcublasLt.so.13 (a column-major cuBLAS test double on host memory), the simulated backend is
// pointed at it (cublasPath or KILN_CUBLAS_PATH), and the kit's matmul cases run through it —
// so kiln's row-major → column-major mapping (operand order, transposes, leading dimensions,
// batch strides including 0) is checked against cuBLAS's documented semantics. Also: discovery
// reasons, matmul: 'cublas' without cuBLAS, and the simulator refusing a library that is not the
// test double.
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidArgumentError } from '@kiln/core';
import { describeBackendConformance } from '@kiln/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { createSimulatedCudaBackend } from '../src/simulator.js';
import { buildFakeCublas } from './fake-cublas.js';
import { simulatorSkipReason } from './simulator-status.js';

const simulatorReason = simulatorSkipReason();
const directory = mkdtempSync(join(tmpdir(), 'kiln-fake-cublas-'));
const realLookingDirectory = join(directory, 'not-a-test-double');

/** The test double, and beside it a library without the kiln_simulated_cublas marker named like cuBLAS: the simulator must refuse it. */
function buildLibraries(): string | undefined {
  const reason = buildFakeCublas(directory);
  if (reason !== undefined) return reason;
  mkdirSync(realLookingDirectory);
  copyFileSync(join(directory, 'libcublasLt.so.13'), join(realLookingDirectory, 'libcublas.so.13'));
  return undefined;
}

const skipReason = simulatorReason ?? buildLibraries();
afterAll(() => rmSync(directory, { recursive: true, force: true }));

describeBackendConformance('cuda (CPU simulator) with matmuls through cuBLAS (kiln test double)', {
  // matmul 'cublas': every dtype through the double ('auto' gives unsplit f16/bf16 problems to kiln's sm_90a-device kernels).
  create: () => createSimulatedCudaBackend({ cublasPath: directory, matmul: 'cublas' }),
  available: skipReason === undefined,
  unavailableReason: skipReason,
  kernels: ['matmul'],
});

describe.skipIf(skipReason !== undefined)(`cuBLAS discovery${skipReason ? ` (${skipReason})` : ''}`, () => {
  it('a cublasPath directory loads cuBLAS: f32 matmuls go through it (f16/bf16 per shape: test/matmul-dispatch.test.ts) and the path says so', async () => {
    const backend = createSimulatedCudaBackend({ cublasPath: directory });
    try {
      expect(backend.capabilities.matmul.path).toBe('cublas');
      expect(backend.matmulPath).toBe(
        `cuBLAS 13.1.0 (${directory}/libcublas.so.13): f32 (TF32 off), f16/bf16 per shape (kiln's own kernels where they need no split along k, cuBLAS elsewhere)`,
      );
      const a = backend.alloc(6 * 4);
      backend.upload(a, new Uint8Array(new Float32Array([1, 2, 3, 4, 5, 6]).buffer));
      const out = backend.alloc(4 * 4);
      // [2, 3] · [2, 3]ᵀ
      backend.matmul(
        { buffer: a, shape: [2, 3], dtype: 'f32' },
        { buffer: a, shape: [2, 3], dtype: 'f32' },
        { buffer: out, shape: [2, 2], dtype: 'f32' },
        { batch: 1, m: 2, n: 2, k: 3, transposeA: false, transposeB: true, batchStrideA: 6, batchStrideB: 6 },
      );
      expect([...new Float32Array((await backend.download(out)).slice().buffer)]).toEqual([14, 32, 32, 77]);
      expect(backend.cublasCalls).toBe(1);
    } finally {
      backend.dispose();
    }
  });

  it('KILN_CUBLAS_PATH (a directory or the file) is the default place to look', () => {
    const previous = process.env.KILN_CUBLAS_PATH;
    try {
      for (const path of [directory, join(directory, 'libcublas.so.13')]) {
        process.env.KILN_CUBLAS_PATH = path;
        const backend = createSimulatedCudaBackend();
        expect(backend.capabilities.matmul.path).toBe('cublas');
        expect(backend.capabilities.matmul.cublas.location).toBe(join(directory, 'libcublas.so.13'));
        backend.dispose();
      }
      process.env.KILN_CUBLAS_PATH = join(directory, 'missing');
      const fallback = createSimulatedCudaBackend();
      expect(fallback.capabilities.matmul.path).toBe('kiln');
      expect(fallback.matmulPath).toContain(`KILN_CUBLAS_PATH=${join(directory, 'missing')} does not exist`);
      fallback.dispose();
    } finally {
      if (previous === undefined) delete process.env.KILN_CUBLAS_PATH;
      else process.env.KILN_CUBLAS_PATH = previous;
    }
  });

  it("matmul: 'cublas' without a loadable cuBLAS throws, naming where it looked", () => {
    expect(() => createSimulatedCudaBackend({ matmul: 'cublas', cublasPath: join(directory, 'nowhere') })).toThrow(
      InvalidArgumentError,
    );
    expect(() => createSimulatedCudaBackend({ matmul: 'cublas', cublasPath: join(directory, 'nowhere') })).toThrow(
      /cublasPath=.*nowhere does not exist/,
    );
  });

  it('the simulator refuses a library that is not the test double (a real cuBLAS needs a GPU)', () => {
    const backend = createSimulatedCudaBackend({ cublasPath: realLookingDirectory });
    expect(backend.capabilities.matmul.path).toBe('kiln');
    expect(backend.capabilities.matmul.cublas.reason).toMatch(/is a real cuBLAS, which needs a GPU/);
    backend.dispose();
  });

  it("matmul: 'kiln' skips cuBLAS; allowTf32 is reported", () => {
    const kiln = createSimulatedCudaBackend({ matmul: 'kiln', cublasPath: directory });
    expect(kiln.capabilities.matmul.path).toBe('kiln');
    expect(kiln.capabilities.matmul.cublas.reason).toMatch(/matmul: 'kiln'/);
    kiln.dispose();
    const tf32 = createSimulatedCudaBackend({ cublasPath: directory, allowTf32: true });
    expect(tf32.capabilities.matmul.f32).toMatch(/TF32 tensor cores allowed/);
    tf32.dispose();
    expect(() => createSimulatedCudaBackend({ matmul: 'fast' as 'kiln' })).toThrow(/'auto', 'cublas' or 'kiln'/);
  });
});
