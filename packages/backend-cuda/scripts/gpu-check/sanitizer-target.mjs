#!/usr/bin/env node
// The program gpu-check's 'sanitizer' part runs under compute-sanitizer (memcheck, racecheck,
// synccheck): first shapes that take the sm_90a kernels on a Hopper GPU (bf16 matmuls with enough
// tiles for the wgmma kernel in nn, nt and tn — on 128×128, 128×192 and 128×256 tiles in turn,
// through KILN_CUDA_WGMMA_COLUMNS — and a tn one with few tiles and a long k that
// it splits along k, as gpt2s's q/k/v/o weight gradient; bf16 attention forward and backward at
// head dims 64 and 128, causal with GQA and partial tiles, and at D 64 with enough tiles that
// persistent blocks reuse their buffers), the f32 SIMT kernels in every layout (fed by a cp.async
// ring; fed through registers on interior problems, split along k and not, and on one with interior
// and edge blocks), the WMMA kernel in every layout at both block shapes, then the conformance kit's matmul and
// attention cases at quick sizes, all on kiln's own kernels. Prints progress lines and, last, one
// JSON line: the kit's counts and how many launches each Hopper kernel (and the split-K path) had
// in the first part. `--simulator` runs the same on the CPU simulator build with smaller matmuls
// (its device has few multiprocessors).
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { runConformance } from '@kiln/testing';
import { CudaBackend, loadCudaAddon } from '@kiln/backend-cuda';

const simulator = process.argv.includes('--simulator');
const addon = simulator
  ? createRequire(import.meta.url)(
      fileURLToPath(new URL('../../build/sim/Release/kiln_cuda_sim.node', import.meta.url)),
    )
  : loadCudaAddon().addon;
const backend = new CudaBackend(addon, { matmul: 'kiln' });
const BYTES = { f32: 4, bf16: 2 };
/** The four matmul layouts as [transposeA, transposeB]: nn, nt, tn, tt. */
const LAYOUTS = [
  [false, false],
  [false, true],
  [true, false],
  [true, true],
];
const refs = [];
const tensor = (shape, dtype, seed) => {
  const ref = { buffer: backend.alloc(shape.reduce((a, b) => a * b, 1) * BYTES[dtype]), shape, dtype };
  refs.push(ref);
  if (seed !== undefined) backend.random(ref, { kind: 'uniform', low: -1, high: 1 }, seed, 0);
  return ref;
};

// 18 × 18 = 324 output tiles of 128 × 128: two per multiprocessor on a 132-SM H100 or H200 (3 × 3 on the simulator);
// each layout on another tile width (the native layer reads KILN_CUDA_WGMMA_COLUMNS at each matmul).
const side = simulator ? 328 : 2304;
const depth = simulator ? 40 : 320;
for (const [transposeA, transposeB, columns] of [
  [false, false, '128'],
  [false, true, '192'],
  [true, false, '256'],
]) {
  process.env.KILN_CUDA_WGMMA_COLUMNS = columns;
  const a = tensor(transposeA ? [depth, side] : [side, depth], 'bf16', 3);
  const b = tensor(transposeB ? [side, depth] : [depth, side], 'bf16', 4);
  const out = tensor([side, side], 'bf16');
  backend.matmul(a, b, out, {
    batch: 1,
    m: side,
    n: side,
    k: depth,
    transposeA,
    transposeB,
    batchStrideA: side * depth,
    batchStrideB: side * depth,
  });
}
delete process.env.KILN_CUDA_WGMMA_COLUMNS;
// Few tiles, long k: the wgmma kernel's split-K (768×768×8192 is 36 tiles in 3 ranges on 132 SMs; 1 tile in 3 on the simulator's 4).
{
  const [m, n, k] = simulator ? [104, 72, 1800] : [768, 768, 8192];
  const a = tensor([k, m], 'bf16', 9);
  const b = tensor([k, n], 'bf16', 10);
  const out = tensor([m, n], 'bf16');
  backend.matmul(a, b, out, {
    batch: 1,
    m,
    n,
    k,
    transposeA: true,
    transposeB: false,
    batchStrideA: m * k,
    batchStrideB: k * n,
  });
}
// The f32 SIMT kernels (KILN_CUDA_F32_KERNEL), every layout. Fed by a cp.async ring of k8 and of
// k16 slices (sm_80 and newer): 16-byte aligned rows and not, partial tiles in m, n and k — their
// zero-fill copies keep addresses past the operands with src-size 0, which memcheck must accept.
// Fed through registers (8×16 and its interior variants, 8×8), on interior problems (kInterior: loads
// without bounds checks), one tile row and one long k split into ranges: the load after k's last
// slice must not read past the end;
// and a problem of 2 × 3 blocks, 2 of them interior (kInteriorBlocks: 8×16 loads those unchecked)
// beside 4 edge blocks, which must stay bounds-checked.
const f32Cases = [
  ...(Number(backend.capabilities.device.computeCapability?.split('.')[0]) >= 8
    ? [
        {
          kernels: ['8x16-cp.async', '8x16-cp.async-k16'],
          shapes: [
            [136, 132, 44],
            [131, 133, 37],
          ],
        },
      ]
    : []),
  {
    kernels: ['8x16', '8x16-k16', '8x16-overlap', '8x16-k16-overlap', '8x8'],
    shapes: [[128, 256, 64], simulator ? [128, 128, 1024] : [128, 128, 8192], [200, 260, 64]],
  },
];
for (const { kernels, shapes } of f32Cases) {
  for (const kernel of kernels) {
    process.env.KILN_CUDA_F32_KERNEL = kernel;
    for (const [m, n, k] of shapes) {
      for (const [transposeA, transposeB] of LAYOUTS) {
        const a = tensor(transposeA ? [k, m] : [m, k], 'f32', 11);
        const b = tensor(transposeB ? [n, k] : [k, n], 'f32', 12);
        const out = tensor([m, n], 'f32');
        backend.matmul(a, b, out, {
          batch: 1,
          m,
          n,
          k,
          transposeA,
          transposeB,
          batchStrideA: m * k,
          batchStrideB: k * n,
        });
      }
    }
  }
}
delete process.env.KILN_CUDA_F32_KERNEL;
// The WMMA kernel in every layout at both block shapes: bf16 with k = 37 (rows not whole 16-byte
// chunks) and too little work to be worth padding (matmul_pad.cu: under 4 Mflop per multiprocessor);
// 128×128 blocks once there are 8 per multiprocessor's worth of the 16 a launch may use (2100² on
// 132 SMs, 300² on the simulator's 4), 64×64 below. Partial tiles in m, n and k.
for (const [m, n] of [simulator ? [300, 260] : [2100, 2100], [70, 100]]) {
  const k = 37;
  for (const [transposeA, transposeB] of LAYOUTS) {
    const a = tensor(transposeA ? [k, m] : [m, k], 'bf16', 13);
    const b = tensor(transposeB ? [n, k] : [k, n], 'bf16', 14);
    const out = tensor([m, n], 'bf16');
    backend.matmul(a, b, out, { batch: 1, m, n, k, transposeA, transposeB, batchStrideA: m * k, batchStrideB: k * n });
  }
}
// Attention at D 64 and 128 (causal, GQA, partial tiles), and on the GPU a D 64 shape with more
// query and key tiles than two per multiprocessor, so that persistent blocks take several work
// units and reuse their q and resident buffers (on the simulator's 4 SMs the small shapes do).
const attentionShapes = [[64, 1, 4, 2, 300], [128, 1, 4, 2, 300], ...(simulator ? [] : [[64, 1, 40, 40, 1024]])];
for (const [headDim, batch, headsQ, headsKV, length] of attentionShapes) {
  const qShape = [batch, headsQ, length, headDim];
  const kShape = [batch, headsKV, length, headDim];
  const [q, k, v, dOut] = [
    tensor(qShape, 'bf16', 5),
    tensor(kShape, 'bf16', 6),
    tensor(kShape, 'bf16', 7),
    tensor(qShape, 'bf16', 8),
  ];
  const [out, lse] = [tensor(qShape, 'bf16'), tensor([batch, headsQ, length], 'f32')];
  const [dq, dk, dv] = [tensor(qShape, 'bf16'), tensor(kShape, 'bf16'), tensor(kShape, 'bf16')];
  const params = { scale: 1 / Math.sqrt(headDim), causal: true };
  backend.attention(q, k, v, null, out, lse, params);
  backend.attentionBackward(q, k, v, null, out, lse, dOut, dq, dk, dv, params);
}
await backend.synchronize();
for (const ref of refs) backend.free(ref.buffer);
const hopper = {
  matmul: backend.hopperMatmulLaunches,
  splitKMatmul: backend.splitKMatmulLaunches,
  attentionForward: backend.hopperAttentionLaunches,
  attentionBackward: backend.hopperAttentionBackwardLaunches,
};
console.log(`sanitizer-target: Hopper-sized cases done ${JSON.stringify(hopper)}`);
const kit = await runConformance(backend, { sizes: 'quick', kernels: ['matmul', 'attention', 'attentionBackward'] });
console.log(`sanitizer-target: kit ${kit.passed} passed, ${kit.failed} failed`);
console.log(
  JSON.stringify({
    kit: { passed: kit.passed, failed: kit.failed, skipped: kit.skipped },
    // Launches of the Hopper-sized part (the kit's quick sizes take none of these kernels).
    hopper,
  }),
);
backend.dispose();
