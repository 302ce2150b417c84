// What the conformance kit cannot see of the fused kernels on the simulator: cross-entropy's
// in-kernel target check (the device error flag rejects the next synchronize, then the NaN rows
// are readable), rmsNormBackward's dWeight being identical run to run over several row chunks,
// the live matmul path in capabilities, and typed errors for bad fused-kernel arguments.
import * as kiln from '@kiln/core';
import { DTypeError, InvalidArgumentError, ShapeError, type FusedKernelName, type KernelBackend, type TensorRef } from '@kiln/core';
import { createReferenceBackend } from '@kiln/testing';
import { afterAll, describe, expect, it } from 'vitest';
import type { CudaBackend } from '../src/cuda-backend.js';
import { createSimulatedCudaBackend } from '../src/simulator.js';
import { blank, put, read, series } from '../../native-host/test/support/tensors.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

/** A backend with every fused kernel (the simulated CUDA backend, or the reference). */
type Backend = KernelBackend & Required<Pick<KernelBackend, Exclude<FusedKernelName, 'attention' | 'attentionBackward'>>>;

describe.skipIf(skipReason !== undefined)(`fused kernels on the simulator${skipReason ? ` (${skipReason})` : ''}`, () => {
  const backend = createSimulatedCudaBackend({ matmul: 'kiln' });
  const reference = createReferenceBackend() as Backend;
  afterAll(() => {
    backend.dispose();
    reference.dispose?.();
  });

  it('crossEntropy: an out-of-range target rejects the next synchronize, then its row reads as NaN and the others as defined', async () => {
    const [rows, classes] = [5, 7];
    const logits = series(rows * classes, 7);
    const targets = [3, -1, 7, -100, 0];
    const onCuda = { logits: put(backend, [rows, classes], logits), targets: put(backend, [rows], targets, 'i32'), loss: blank(backend, [rows]) };
    backend.crossEntropy(onCuda.logits, onCuda.targets, onCuda.loss, rows, classes, -1);
    const rejection = await backend.synchronize().then(() => undefined, (error: unknown) => error);
    expect(rejection).toBeInstanceOf(InvalidArgumentError);
    expect((rejection as Error).message).toMatch(/crossEntropy: target (7 of row 2|-100 of row 3) is out of range \[0, 7\) and is not the ignore index/);
    const loss = await read(backend, onCuda.loss);
    const onReference = { logits: put(reference, [rows, classes], logits), targets: put(reference, [rows], targets, 'i32'), loss: blank(reference, [rows]) };
    reference.crossEntropy(onReference.logits, onReference.targets, onReference.loss, rows, classes, -1);
    const expected = await read(reference, onReference.loss);
    expect(Number.isNaN(loss[2]) && Number.isNaN(loss[3])).toBe(true);
    expect(loss[1]).toBe(0);
    for (const row of [0, 4]) expect(loss[row]).toBeCloseTo(expected[row], 5);

    const dLogits = blank(backend, [rows, classes]);
    backend.crossEntropyBackward(onCuda.logits, onCuda.targets, dLogits, rows, classes, -1, 0.5);
    await expect(backend.download(dLogits.buffer)).rejects.toThrow(/crossEntropyBackward: target .* is out of range \[0, 7\)/);
    const gradient = await read(backend, dLogits);
    expect(gradient.slice(2 * classes, 4 * classes).every(Number.isNaN)).toBe(true);
    expect(gradient.slice(classes, 2 * classes).every((value) => value === 0)).toBe(true);
    for (const ref of [...Object.values(onCuda), dLogits]) backend.free(ref.buffer);
    for (const ref of Object.values(onReference)) reference.free(ref.buffer);
  });

  it('crossEntropyBackward with 0 classes: a target that is not ignoreIndex is out of range, and the next synchronize rejects', async () => {
    const targets = put(backend, [2], [0, -1], 'i32');
    const logits = { buffer: backend.alloc(4), shape: [2, 0], dtype: 'f32' as const };
    const dLogits = { buffer: backend.alloc(4), shape: [2, 0], dtype: 'f32' as const };
    backend.crossEntropyBackward(logits, targets, dLogits, 2, 0, -1, 1);
    await expect(backend.synchronize()).rejects.toThrow(/crossEntropyBackward: target 0 of row 0 is out of range \[0, 0\)/);
    await backend.synchronize();
    for (const ref of [targets, logits, dLogits]) backend.free(ref.buffer);
  });

  it('declares checksIndices, so core leaves target checks to the kernel: crossEntropy through core rejects at the read', async () => {
    expect(backend.capabilities.checksIndices).toBe(true);
    const logits = kiln.tensor([[1, 2, 3], [0, 0, 0]], undefined, { backend });
    const targets = kiln.tensor([2, 7], [2], { dtype: 'i32', backend });
    const loss = kiln.crossEntropy(logits, targets);
    await expect(loss.data()).rejects.toThrow(/crossEntropy: target 7 of row 1 is out of range \[0, 3\)/);
    for (const tensor of [logits, targets, loss]) tensor.dispose();
    await expect(backend.synchronize()).resolves.toBeUndefined();
  });

  it('rmsNormBackward: dWeight summed over several row chunks matches the reference and is identical on every run', async () => {
    const [rows, cols] = [300, 70];
    const inputs = { x: series(rows * cols, 1), weight: series(cols, 2), dy: series(rows * cols, 3) };
    const run = async (target: Backend) => {
      const x = put(target, [rows, cols], inputs.x);
      const weight = put(target, [cols], inputs.weight);
      const dy = put(target, [rows, cols], inputs.dy);
      const out = blank(target, [rows, cols]);
      const rstd = blank(target, [rows]);
      const dx = blank(target, [rows, cols]);
      const dWeight = blank(target, [cols]);
      target.rmsNorm(x, weight, out, rstd, rows, cols, 1e-5);
      target.rmsNormBackward(x, weight, rstd, dy, dx, dWeight, rows, cols);
      const result = { dx: await read(target, dx), dWeight: await read(target, dWeight) };
      for (const ref of [x, weight, dy, out, rstd, dx, dWeight]) target.free(ref.buffer);
      return result;
    };
    const first = await run(backend);
    const second = await run(backend);
    expect(Buffer.from(second.dWeight.buffer).equals(Buffer.from(first.dWeight.buffer))).toBe(true);
    const expected = await run(reference);
    for (let col = 0; col < cols; col++) expect(Math.abs(first.dWeight[col] - expected.dWeight[col])).toBeLessThan(1e-4 * Math.sqrt(rows) * (1 + Math.abs(expected.dWeight[col])));
    for (let i = 0; i < rows * cols; i += 97) expect(first.dx[i]).toBeCloseTo(expected.dx[i], 4);
  });

  it('capabilities say which matmul path is live: kiln SIMT f32 and pipelined mma.sync f16/bf16 on simulated tensor cores (the simulated device is cc ≥ 8.0)', () => {
    const { matmul } = backend.capabilities;
    expect(Number.parseFloat(backend.capabilities.device.computeCapability ?? 'missing')).toBeGreaterThanOrEqual(8);
    expect(matmul.path).toBe('kiln');
    expect(matmul.f16).toMatch(/pipelined mma\.sync tensor-core kernel .*\(simulated: gpu-sim warp-collective fragments\)/);
    expect(matmul.bf16).toBe(matmul.f16);
    expect(matmul.f32).toMatch(/register-tiled SIMT/);
    expect(backend.matmulPath).toMatch(/^kiln kernels: .*matmul: 'kiln'/);
    expect(backend.capabilities.supports('rmsNormBackward', 'bf16')).toBe(true);
    expect(backend.capabilities.supports('attention', 'f32') && backend.capabilities.flashAttention).toBe(true);
  });

  it('bad fused-kernel arguments throw typed errors before reaching the device', () => {
    const x = put(backend, [2, 3], series(6, 4));
    const small = blank(backend, [2, 2]);
    const ids = put(backend, [2], [0, 1], 'i32');
    expect(() => backend.softmax(x, small, 2, 3)).toThrow(ShapeError);
    expect(() => backend.softmax(ids, ids, 1, 2)).toThrow(DTypeError);
    expect(() => backend.rope({ ...x, shape: [1, 1, 2, 3] }, { ...x, shape: [1, 1, 2, 3] }, 0, 1e4, false)).toThrow(/even D/);
    expect(() => backend.crossEntropy(x, ids, ids, 2, 3, -100)).toThrow(DTypeError);
    expect(() => backend.crossEntropy(x, ids, blank(backend, [2]), 2, 3, 1.5)).toThrow(InvalidArgumentError);
    expect(() => backend.adamw(x, x, x, x, { lr: 1, beta1: 0.9, beta2: 0.99, eps: 1e-8, weightDecay: 0, step: 0 })).toThrow(/step/);
  });
});
