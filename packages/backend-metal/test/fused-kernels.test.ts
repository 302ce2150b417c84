// The fused MSL kernels where the conformance kit cannot look: cross-entropy's in-kernel target
// check (the device error record rejects the next read, then the NaN rows read back), through
// core too; rmsNormBackward's dWeight identical run to run over several row chunks; rope's scratch
// tables leaving no buffer behind and inverse undoing forward at long offsets; and typed errors
// from the TypeScript checks before anything reaches the addon.
import * as kiln from '@kiln/core';
import { DTypeError, InvalidArgumentError, ShapeError, type DType, type TensorRef } from '@kiln/core';
import { createReferenceBackend } from '@kiln/testing';
import { afterAll, describe, expect, it } from 'vitest';
import type { MetalBackend } from '../src/metal-backend.js';
import { createSimulatedMetalBackend } from '../src/simulator.js';
import { blank, put, read, series } from '../../native-host/test/support/tensors.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

type Target = MetalBackend | ReturnType<typeof createReferenceBackend>;

describe.skipIf(skipReason !== undefined)(`fused MSL kernels${skipReason ? ` (${skipReason})` : ''}`, () => {
  const backend = createSimulatedMetalBackend();
  const reference = createReferenceBackend();
  afterAll(() => {
    backend.dispose();
    reference.dispose?.();
  });

  it('declares checksIndices and runs every fused kernel natively in every float dtype', () => {
    expect(backend.capabilities.checksIndices).toBe(true);
    for (const dtype of ['f32', 'f16', 'bf16'] as const) {
      for (const kernel of ['softmax', 'rmsNormBackward', 'rope', 'crossEntropyBackward', 'adamw'] as const) expect(backend.capabilities.supports(kernel, dtype)).toBe(true);
      expect(backend.capabilities.supports('attention', dtype)).toBe(true);
    }
    expect(backend.capabilities.supports('softmax', 'i32')).toBe(false);
  });

  it('crossEntropy(Backward): an out-of-range target rejects the next read naming kernel, target, row and range, then reads as a NaN row', async () => {
    const [rows, classes] = [5, 7];
    const logits = series(rows * classes, 3);
    const targets = [3, -1, 7, -100, 0];
    const metal = { logits: put(backend, [rows, classes], logits), targets: put(backend, [rows], targets, 'i32'), loss: blank(backend, [rows]), dLogits: blank(backend, [rows, classes]) };
    const cpu = { logits: put(reference, [rows, classes], logits), targets: put(reference, [rows], targets, 'i32'), loss: blank(reference, [rows]), dLogits: blank(reference, [rows, classes]) };
    backend.crossEntropy(metal.logits, metal.targets, metal.loss, rows, classes, -1);
    const rejection = await backend.synchronize().then(() => undefined, (error: unknown) => error);
    expect(rejection).toBeInstanceOf(InvalidArgumentError);
    expect((rejection as Error).message).toMatch(/^metal backend: crossEntropy: target (7 of row 2|-100 of row 3) is out of range \[0, 7\) and is not the ignore index/);
    await expect(backend.synchronize()).resolves.toBeUndefined();
    reference.crossEntropy!(cpu.logits, cpu.targets, cpu.loss, rows, classes, -1);
    const [loss, expected] = [await read(backend, metal.loss), await read(reference, cpu.loss)];
    expect([Number.isNaN(loss[2]), Number.isNaN(loss[3]), loss[1]]).toEqual([true, true, 0]);
    for (const row of [0, 4]) expect(loss[row]).toBeCloseTo(expected[row], 5);

    backend.crossEntropyBackward(metal.logits, metal.targets, metal.dLogits, rows, classes, -1, 0.5);
    await expect(backend.download(metal.dLogits.buffer)).rejects.toThrow(/crossEntropyBackward: target .* is out of range \[0, 7\)/);
    reference.crossEntropyBackward!(cpu.logits, cpu.targets, cpu.dLogits, rows, classes, -1, 0.5);
    const [gradient, want] = [await read(backend, metal.dLogits), await read(reference, cpu.dLogits)];
    expect(gradient.slice(2 * classes, 4 * classes).every(Number.isNaN)).toBe(true);
    expect(gradient.slice(classes, 2 * classes).every((value) => value === 0)).toBe(true);
    for (const index of [...Array(classes).keys(), ...Array.from({ length: classes }, (_, i) => 4 * classes + i)]) expect(gradient[index]).toBeCloseTo(want[index], 6);
    for (const ref of Object.values(metal)) backend.free(ref.buffer);
    for (const ref of Object.values(cpu)) reference.free(ref.buffer);
  });

  it('crossEntropy through core leaves the target check to the kernel: reading the loss rejects, once', async () => {
    const logits = kiln.tensor([[1, 2, 3], [0, 0, 0]], undefined, { backend });
    const targets = kiln.tensor([2, 7], [2], { dtype: 'i32', backend });
    const loss = kiln.crossEntropy(logits, targets);
    await expect(loss.data()).rejects.toThrow(/crossEntropy: target 7 of row 1 is out of range \[0, 3\)/);
    for (const tensor of [logits, targets, loss]) tensor.dispose();
    await expect(backend.synchronize()).resolves.toBeUndefined();
  });

  it('rmsNormBackward: dWeight over several row chunks matches the reference and is identical on every run, with no scratch left behind', async () => {
    const [rows, cols] = [300, 70];
    const inputs = { x: series(rows * cols, 1), weight: series(cols, 2), dy: series(rows * cols, 5) };
    const run = async (target: Target) => {
      const x = put(target, [rows, cols], inputs.x);
      const weight = put(target, [cols], inputs.weight);
      const dy = put(target, [rows, cols], inputs.dy);
      const [out, rstd, dx, dWeight] = [blank(target, [rows, cols]), blank(target, [rows]), blank(target, [rows, cols]), blank(target, [cols])];
      target.rmsNorm!(x, weight, out, rstd, rows, cols, 1e-5);
      target.rmsNormBackward!(x, weight, rstd, dy, dx, dWeight, rows, cols);
      const result = { dx: await read(target, dx), dWeight: await read(target, dWeight) };
      for (const ref of [x, weight, dy, out, rstd, dx, dWeight]) target.free(ref.buffer);
      return result;
    };
    const before = backend.memory().bufferCount;
    const [first, second, expected] = [await run(backend), await run(backend), await run(reference)];
    expect(backend.memory().bufferCount).toBe(before);
    expect(Buffer.from(second.dWeight.buffer).equals(Buffer.from(first.dWeight.buffer))).toBe(true);
    for (let col = 0; col < cols; col++) expect(Math.abs(first.dWeight[col] - expected.dWeight[col])).toBeLessThan(1e-4 * Math.sqrt(rows) * (1 + Math.abs(expected.dWeight[col])));
    for (let i = 0; i < rows * cols; i += 97) expect(first.dx[i]).toBeCloseTo(expected.dx[i], 4);
  });

  it('rope: matches the reference at a long offset, inverse undoes forward, and the table scratch is returned to the pool', async () => {
    const shape = [1, 2, 6, 16];
    const count = 2 * 6 * 16;
    const data = series(count, 9);
    const x = put(backend, shape, data);
    const [rotated, restored] = [blank(backend, shape), blank(backend, shape)];
    const before = backend.memory().bufferCount;
    backend.rope(x, rotated, 4000, 500000, false);
    backend.rope(rotated, restored, 4000, 500000, true);
    expect(backend.memory().bufferCount).toBe(before);
    const onReference = { x: put(reference, shape, data), out: blank(reference, shape) };
    reference.rope!(onReference.x, onReference.out, 4000, 500000, false);
    const [got, want, back] = [await read(backend, rotated), await read(reference, onReference.out), await read(backend, restored)];
    for (let i = 0; i < count; i++) {
      expect(Math.abs(got[i] - want[i])).toBeLessThan(1e-6);
      expect(Math.abs(back[i] - data[i])).toBeLessThan(1e-5);
    }
    for (const ref of [x, rotated, restored]) backend.free(ref.buffer);
    for (const ref of Object.values(onReference)) reference.free(ref.buffer);
  });

  it('bad fused-kernel arguments throw kiln\'s typed errors in TypeScript', () => {
    const buffer = backend.alloc(64);
    const ref = (shape: number[], dtype: DType = 'f32'): TensorRef => ({ buffer, shape, dtype });
    expect(() => backend.softmax(ref([4, 4]), ref([4, 4]), 3, 4)).toThrowError(ShapeError);
    expect(() => backend.logSoftmax(ref([4, 4], 'i32'), ref([4, 4], 'i32'), 4, 4)).toThrowError(DTypeError);
    expect(() => backend.rmsNorm(ref([4, 4]), ref([4]), ref([4, 4]), ref([4], 'f16'), 4, 4, 1e-5)).toThrowError(DTypeError);
    expect(() => backend.layerNorm(ref([4, 4]), ref([4]), ref([4]), ref([4, 4]), 4, 4, Number.NaN)).toThrowError(InvalidArgumentError);
    expect(() => backend.rope(ref([1, 1, 4, 3]), ref([1, 1, 4, 3]), 0, 10000, false)).toThrowError(ShapeError);
    expect(() => backend.rope(ref([1, 1, 2, 4]), ref([1, 1, 2, 4]), 0.5, 10000, false)).toThrowError(InvalidArgumentError);
    expect(() => backend.swiglu(ref([8]), ref([4]), ref([8]))).toThrowError(ShapeError);
    expect(() => backend.crossEntropy(ref([2, 4]), ref([2], 'i32'), ref([2]), 2, 4, 1.5)).toThrowError(InvalidArgumentError);
    expect(() => backend.crossEntropyBackward(ref([2, 4]), ref([2]), ref([2, 4]), 2, 4, -100, 1)).toThrowError(DTypeError);
    expect(() => backend.adamw(ref([4]), ref([4]), ref([4]), ref([4]), { lr: 1e-3, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0, step: 0 })).toThrowError(InvalidArgumentError);
    backend.free(buffer);
  });
});
