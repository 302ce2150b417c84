import { describe, expect, it } from 'vitest';
import type { KernelBackend, KernelName, TensorRef } from '../src/backend/kernel-backend.js';
import { createReferenceBackend, runConformance, type ConformanceReport, type ReferenceBackend } from '../src/testing/index.js';

// No known core issues: ops validate their arguments (disposed inputs included) before allocating.
const CORE_ISSUES = {};

/** The reference backend with some kernels replaced. */
function broken(overrides: (base: ReferenceBackend) => Partial<KernelBackend>): KernelBackend {
  const base = createReferenceBackend({ name: 'broken' });
  return { ...base, ...overrides(base) };
}

function readF32(base: ReferenceBackend, ref: { buffer: TensorRef['buffer'] }): Float32Array {
  const bytes = base.downloadSync!(ref.buffer);
  return new Float32Array(bytes.slice().buffer);
}

function writeF32(base: ReferenceBackend, ref: TensorRef, values: Float32Array): void {
  if (values.length > 0) base.upload(ref.buffer, new Uint8Array(values.buffer, values.byteOffset, values.byteLength));
}

function failuresOf(report: ConformanceReport): { id: string; kernel: KernelName; message: string }[] {
  return report.results.filter((result) => result.status === 'failed');
}

async function expectCaught(backend: KernelBackend, kernel: KernelName, expectedId: string, messagePart: string): Promise<void> {
  const report = await runConformance(backend, { sizes: 'quick', skip: CORE_ISSUES });
  const failures = failuresOf(report);
  expect(failures.length).toBeGreaterThan(0);
  // Op-level cases ('[op …]') compose several kernels, so a broken kernel may fail them too; kernel cases must pinpoint it.
  expect([...new Set(failures.filter((failure) => !failure.id.includes('[op ')).map((failure) => failure.kernel))]).toEqual([kernel]);
  const named = failures.find((failure) => failure.id === expectedId);
  expect(named, `expected '${expectedId}' among ${failures.map((failure) => failure.id).join('; ')}`).toBeDefined();
  expect(named!.message).toContain(messagePart);
}

describe('the conformance kit', () => {
  it('passes the unbroken reference backend with zero failures', async () => {
    const report = await runConformance(createReferenceBackend(), { sizes: 'quick', skip: CORE_ISSUES });
    expect(failuresOf(report)).toEqual([]);
    expect(report.passed).toBeGreaterThan(1000);
  });

  it('catches a matmul that skips the last k', async () => {
    const backend = broken((base) => ({
      matmul(a, b, out, params) {
        if (a.dtype !== 'f32') return base.matmul(a, b, out, params);
        const [left, right] = [readF32(base, a), readF32(base, b)];
        const { batch, m, n, k, transposeA, transposeB, batchStrideA, batchStrideB } = params;
        const result = new Float32Array(batch * m * n);
        for (let index = 0; index < batch; index++) {
          for (let row = 0; row < m; row++) {
            for (let col = 0; col < n; col++) {
              let total = 0;
              for (let inner = 0; inner < k - 1; inner++) {
                const x = left[index * batchStrideA + (transposeA ? inner * m + row : row * k + inner)];
                const y = right[index * batchStrideB + (transposeB ? col * k + inner : inner * n + col)];
                total += x * y;
              }
              result[(index * m + row) * n + col] = total;
            }
          }
        }
        writeF32(base, out, result);
      },
    }));
    await expectCaught(backend, 'matmul', 'matmul f32 [batch=1,m=17,k=1,n=33]', 'differs from the float64 reference');
  });

  it('catches a softmax that does not subtract the row max (overflows in f32)', async () => {
    const backend = broken((base) => ({
      softmax(x, out, rows, cols) {
        if (x.dtype !== 'f32') return base.softmax!(x, out, rows, cols);
        const input = readF32(base, x);
        const result = new Float32Array(rows * cols);
        for (let row = 0; row < rows; row++) {
          let sum = Math.fround(0);
          for (let col = 0; col < cols; col++) sum = Math.fround(sum + (result[row * cols + col] = Math.exp(input[row * cols + col])));
          for (let col = 0; col < cols; col++) result[row * cols + col] /= sum;
        }
        writeF32(base, out, result);
      },
    }));
    await expectCaught(backend, 'softmax', 'softmax f32 [rows=4,cols=37 large-logits]', 'got NaN');
  });

  it('catches an attention that ignores the causal flag', async () => {
    const backend = broken((base) => ({
      attention: (q, k, v, mask, out, lse, params) => base.attention!(q, k, v, mask, out, lse, { ...params, causal: false }),
    }));
    await expectCaught(backend, 'attention', 'attention f32 [B=2,Hq=2,Hkv=2,Tq=5,Tk=5,D=8,causal]', "output 'out'");
  });

  it('catches an rmsNormBackward whose dWeight forgets rstd', async () => {
    const backend = broken((base) => ({
      rmsNormBackward(x, weight, rstd, dy, dx, dWeight, rows, cols) {
        base.rmsNormBackward!(x, weight, rstd, dy, dx, dWeight, rows, cols);
        if (x.dtype !== 'f32') return;
        const [input, gradient] = [readF32(base, x), readF32(base, dy)];
        const wrong = new Float32Array(cols);
        for (let index = 0; index < rows * cols; index++) wrong[index % cols] += gradient[index] * input[index];
        writeF32(base, dWeight, wrong);
      },
    }));
    await expectCaught(backend, 'rmsNormBackward', 'rmsNormBackward f32 [rows=5,cols=7,eps=0.00001]', "output 'dWeight'");
  });

  it('catches a sum reduction that drops the last element', async () => {
    const backend = broken((base) => ({
      reduce(op, x, out, outer, size, inner) {
        if (op !== 'sum' || x.dtype !== 'f32') return base.reduce(op, x, out, outer, size, inner);
        const input = readF32(base, x);
        const result = new Float32Array(outer * inner);
        for (let o = 0; o < outer; o++) {
          for (let s = 0; s < size - 1; s++) for (let i = 0; i < inner; i++) result[o * inner + i] += input[(o * size + s) * inner + i];
        }
        writeF32(base, out, result);
      },
    }));
    await expectCaught(backend, 'reduce', 'reduce f32 [sum outer=2,size=7,inner=3]', 'differs from the float64 reference');
  });

  it('catches a kernel that allocates scratch memory and never frees it', async () => {
    const backend = broken((base) => ({
      unary(op, x, out) {
        base.alloc(64);
        base.unary(op, x, out);
      },
    }));
    await expectCaught(backend, 'unary', 'unary f32 [exp 7×13]', 'leaked memory: bufferCount');
  });

  it('catches an adamw without bias correction', async () => {
    const backend = broken((base) => ({
      adamw(param, grad, m, v, params) {
        if (param.dtype !== 'f32') return base.adamw!(param, grad, m, v, params);
        const [p, g, first, second] = [readF32(base, param), readF32(base, grad), readF32(base, m), readF32(base, v)];
        for (let i = 0; i < p.length; i++) {
          first[i] = params.beta1 * first[i] + (1 - params.beta1) * g[i];
          second[i] = params.beta2 * second[i] + (1 - params.beta2) * g[i] * g[i];
          p[i] = p[i] * (1 - params.lr * params.weightDecay) - (params.lr * first[i]) / (Math.sqrt(second[i]) + params.eps);
        }
        writeF32(base, param, p);
        writeF32(base, m, first);
        writeF32(base, v, second);
      },
    }));
    await expectCaught(backend, 'adamw', 'adamw f32 [length=37,steps=3,lr=0.01,weightDecay=0.1]', "output 'param after step 1'");
  });
});
