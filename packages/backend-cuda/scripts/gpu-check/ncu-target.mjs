#!/usr/bin/env node
// The program gpu-check's 'ncu' part profiles (scripts/gpu-check/ncu.mjs): each sm_90a kernel launched
// once on kiln's own kernels — attention forward + backward (bf16, causal) at B8 H16 T2048 D128 and at
// gpt2s's B8 H12 T1024 D64, then bf16 matmuls 4096³ nn, gpt2s's dW (2048×768×8192 tn; the q/k/v/o
// one, 768×768×8192, split along k) and lm_head (8192×256×768 nt), and last the f32 SIMT matmul
// at 4096³ (issue 19's f32 target), once as chosen, once on each interior variant ("8x16-k16",
// "8x16-overlap", "8x16-k16-overlap") and once on each cp.async-ring variant. Prints how many Hopper launches ran (0 on a GPU that is not Hopper).
import { CudaBackend, loadCudaAddon } from '@kiln/backend-cuda';
const backend = new CudaBackend(loadCudaAddon().addon, { matmul: 'kiln' });
const BYTES = { f32: 4, bf16: 2 };
const tensor = (shape, dtype, seed) => {
  const ref = { buffer: backend.alloc(shape.reduce((a, b) => a * b, 1) * BYTES[dtype]), shape, dtype };
  if (seed !== undefined) backend.random(ref, { kind: 'uniform', low: -1, high: 1 }, seed, 0);
  return ref;
};
for (const [batch, heads, length, headDim] of [
  [8, 16, 2048, 128],
  [8, 12, 1024, 64],
]) {
  const qShape = [batch, heads, length, headDim];
  const [q, k, v, dOut] = [
    tensor(qShape, 'bf16', 1),
    tensor(qShape, 'bf16', 2),
    tensor(qShape, 'bf16', 3),
    tensor(qShape, 'bf16', 4),
  ];
  const [out, lse] = [tensor(qShape, 'bf16'), tensor([batch, heads, length], 'f32')];
  const [dq, dk, dv] = [tensor(qShape, 'bf16'), tensor(qShape, 'bf16'), tensor(qShape, 'bf16')];
  const params = { scale: 1 / Math.sqrt(headDim), causal: true };
  backend.attention(q, k, v, null, out, lse, params);
  backend.attentionBackward(q, k, v, null, out, lse, dOut, dq, dk, dv, params);
  await backend.synchronize();
}
for (const [m, n, k, transposeA, transposeB] of [
  [4096, 4096, 4096, false, false],
  [2048, 768, 8192, true, false],
  [768, 768, 8192, true, false],
  [8192, 256, 768, false, true],
]) {
  const a = tensor(transposeA ? [k, m] : [m, k], 'bf16', 5);
  const b = tensor(transposeB ? [n, k] : [k, n], 'bf16', 6);
  const out = tensor([m, n], 'bf16');
  backend.matmul(a, b, out, { batch: 1, m, n, k, transposeA, transposeB, batchStrideA: m * k, batchStrideB: k * n });
  await backend.synchronize();
}
{
  const [a, b, out] = [tensor([4096, 4096], 'f32', 7), tensor([4096, 4096], 'f32', 8), tensor([4096, 4096], 'f32')];
  const params = { batch: 1, m: 4096, n: 4096, k: 4096, transposeA: false, transposeB: false };
  backend.matmul(a, b, out, { ...params, batchStrideA: 4096 * 4096, batchStrideB: 4096 * 4096 });
  await backend.synchronize();
  // The same on the interior variants, then on the cp.async-ring variants, k8 and k16 slices (KILN_CUDA_F32_KERNEL, read at each call; sm_80 and newer).
  for (const kernel of ['8x16-k16', '8x16-overlap', '8x16-k16-overlap']) {
    process.env.KILN_CUDA_F32_KERNEL = kernel;
    backend.matmul(a, b, out, { ...params, batchStrideA: 4096 * 4096, batchStrideB: 4096 * 4096 });
    await backend.synchronize();
  }
  delete process.env.KILN_CUDA_F32_KERNEL;
  if (Number(backend.capabilities.device.computeCapability?.split('.')[0]) >= 8) {
    for (const kernel of ['8x16-cp.async', '8x16-cp.async-k16']) {
      process.env.KILN_CUDA_F32_KERNEL = kernel;
      backend.matmul(a, b, out, { ...params, batchStrideA: 4096 * 4096, batchStrideB: 4096 * 4096 });
      await backend.synchronize();
    }
    delete process.env.KILN_CUDA_F32_KERNEL;
  }
}
console.log(
  `ncu-target: done; Hopper launches matmul ${backend.hopperMatmulLaunches}, attention ${backend.hopperAttentionLaunches}/${backend.hopperAttentionBackwardLaunches}`,
);
backend.dispose();
