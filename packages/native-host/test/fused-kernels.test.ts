// The fused kernels where the conformance kit cannot look, on both simulators: cross-entropy's
// in-kernel target check (the device error record — read by each device, turned into one error by
// the shared host — rejects the next read, then the NaN rows read back), through core too;
// rmsNormBackward's dWeight identical run to run over several row chunks, with no scratch left
// behind; and typed errors from the TypeScript checks before anything reaches the addon.
import * as kiln from '@kiln/core';
import {
  DTypeError,
  InvalidArgumentError,
  ShapeError,
  type DType,
  type KernelBackend,
  type TensorRef,
} from '@kiln/core';
import { createReferenceBackend } from '@kiln/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { SIMULATED_BACKENDS, title } from './support/backends.js';
import { blank, put, read, series } from './support/tensors.js';

type Target = KernelBackend;

describe.each(SIMULATED_BACKENDS)('fused kernels on the $name simulator', (target) => {
  describe.skipIf(target.skipReason !== undefined)(title(target), () => {
    const backend =
      target.skipReason === undefined ? target.create() : (undefined as unknown as ReturnType<typeof target.create>);
    const reference = createReferenceBackend();
    afterAll(() => {
      backend?.dispose();
      reference.dispose?.();
    });

    it('crossEntropy(Backward): an out-of-range target rejects the next read naming kernel, target, row and range, then reads as a NaN row', async () => {
      const [rows, classes] = [5, 7];
      const logits = series(rows * classes, 3);
      const targets = [3, -1, 7, -100, 0];
      const device = {
        logits: put(backend, [rows, classes], logits),
        targets: put(backend, [rows], targets, 'i32'),
        loss: blank(backend, [rows]),
        dLogits: blank(backend, [rows, classes]),
      };
      const cpu = {
        logits: put(reference, [rows, classes], logits),
        targets: put(reference, [rows], targets, 'i32'),
        loss: blank(reference, [rows]),
        dLogits: blank(reference, [rows, classes]),
      };
      backend.crossEntropy(device.logits, device.targets, device.loss, rows, classes, -1);
      const rejection = await backend.synchronize().then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(rejection).toBeInstanceOf(InvalidArgumentError);
      expect((rejection as Error).message).toMatch(
        new RegExp(
          `^${target.name} backend: crossEntropy: target (7 of row 2|-100 of row 3) is out of range \\[0, 7\\) and is not the ignore index`,
        ),
      );
      await expect(backend.synchronize()).resolves.toBeUndefined();
      reference.crossEntropy!(cpu.logits, cpu.targets, cpu.loss, rows, classes, -1);
      const [loss, expected] = [await read(backend, device.loss), await read(reference, cpu.loss)];
      expect([Number.isNaN(loss[2]), Number.isNaN(loss[3]), loss[1]]).toEqual([true, true, 0]);
      for (const row of [0, 4]) expect(loss[row]).toBeCloseTo(expected[row], 5);

      backend.crossEntropyBackward(device.logits, device.targets, device.dLogits, rows, classes, -1, 0.5);
      await expect(backend.download(device.dLogits.buffer)).rejects.toThrow(
        /crossEntropyBackward: target .* is out of range \[0, 7\)/,
      );
      reference.crossEntropyBackward!(cpu.logits, cpu.targets, cpu.dLogits, rows, classes, -1, 0.5);
      const [gradient, want] = [await read(backend, device.dLogits), await read(reference, cpu.dLogits)];
      expect(gradient.slice(2 * classes, 4 * classes).every(Number.isNaN)).toBe(true);
      expect(gradient.slice(classes, 2 * classes).every((value) => value === 0)).toBe(true);
      for (const index of [...Array(classes).keys(), ...Array.from({ length: classes }, (_, i) => 4 * classes + i)])
        expect(gradient[index]).toBeCloseTo(want[index], 6);
      for (const ref of Object.values(device)) backend.free(ref.buffer);
      for (const ref of Object.values(cpu)) reference.free(ref.buffer);
    });

    it('crossEntropy through core leaves the target check to the kernel: reading the loss rejects, once', async () => {
      const logits = kiln.tensor(
        [
          [1, 2, 3],
          [0, 0, 0],
        ],
        undefined,
        { backend },
      );
      const targets = kiln.tensor([2, 7], [2], { dtype: 'i32', backend });
      const loss = kiln.crossEntropy(logits, targets);
      await expect(loss.data()).rejects.toThrow(/crossEntropy: target 7 of row 1 is out of range \[0, 3\)/);
      for (const tensor of [logits, targets, loss]) tensor.dispose();
      await expect(backend.synchronize()).resolves.toBeUndefined();
    });

    it('rmsNormBackward: dWeight over several row chunks matches the reference and is identical on every run, with no scratch left behind', async () => {
      const [rows, cols] = [300, 70];
      const inputs = { x: series(rows * cols, 1), weight: series(cols, 2), dy: series(rows * cols, 5) };
      const run = async (on: Target) => {
        const x = put(on, [rows, cols], inputs.x);
        const weight = put(on, [cols], inputs.weight);
        const dy = put(on, [rows, cols], inputs.dy);
        const [out, rstd, dx, dWeight] = [
          blank(on, [rows, cols]),
          blank(on, [rows]),
          blank(on, [rows, cols]),
          blank(on, [cols]),
        ];
        on.rmsNorm!(x, weight, out, rstd, rows, cols, 1e-5);
        on.rmsNormBackward!(x, weight, rstd, dy, dx, dWeight, rows, cols);
        const result = { dx: await read(on, dx), dWeight: await read(on, dWeight) };
        for (const ref of [x, weight, dy, out, rstd, dx, dWeight]) on.free(ref.buffer);
        return result;
      };
      const before = backend.memory().bufferCount;
      const [first, second, expected] = [await run(backend), await run(backend), await run(reference)];
      expect(backend.memory().bufferCount).toBe(before);
      expect(Buffer.from(second.dWeight.buffer).equals(Buffer.from(first.dWeight.buffer))).toBe(true);
      for (let col = 0; col < cols; col++)
        expect(Math.abs(first.dWeight[col] - expected.dWeight[col])).toBeLessThan(
          1e-4 * Math.sqrt(rows) * (1 + Math.abs(expected.dWeight[col])),
        );
      for (let i = 0; i < rows * cols; i += 97) expect(first.dx[i]).toBeCloseTo(expected.dx[i], 4);
    });

    it("adamwMulti reads options.deviceScalars natively: the same bits as the number form and as core's composition", async () => {
      expect(backend.capabilities.adamwMultiDeviceScalars).toBe(true);
      const lengths = [37, 5];
      const [lr, step, weightDecays] = [3e-3, 4, [0.1, 0]];
      const hyper = { beta1: 0.9, beta2: 0.95, eps: 1e-8 };
      const scalars = kiln.adamwDeviceScalars({ lr, beta1: hyper.beta1, beta2: hyper.beta2, step, weightDecays });
      // One AdamW step from fixed states; `form` picks how lr, the bias corrections and the decays reach the kernel.
      const run = async (form: 'numbers' | 'native scalars' | 'composed scalars') => {
        const make = (seed: number) =>
          lengths.map((length, index) => put(backend, [length], series(length, seed + index)));
        const [params, grads, ms] = [make(1), make(10), make(20)];
        const vs = lengths.map((length, index) => put(backend, [length], series(length, 30 + index).map(Math.abs)));
        const deviceScalars = put(backend, [scalars.length], scalars);
        const numbers = { ...hyper, lr, step, weightDecays, gradientScale: 0.5 };
        const options = form === 'numbers' ? numbers : { ...numbers, lr: 1, step: 1, deviceScalars };
        if (form === 'composed scalars') kiln.composedKernels.adamwMulti(backend, params, grads, ms, vs, options);
        else backend.adamwMulti!(params, grads, ms, vs, options);
        const states = await Promise.all([...params, ...ms, ...vs].map((ref) => read(backend, ref)));
        for (const ref of [...params, ...grads, ...ms, ...vs, deviceScalars]) backend.free(ref.buffer);
        return Buffer.concat(states.map((state) => Buffer.from(state.buffer)));
      };
      const native = await run('native scalars');
      expect(native.equals(await run('numbers'))).toBe(true);
      expect(native.equals(await run('composed scalars'))).toBe(true);
    });

    it("bad fused-kernel arguments throw kiln's typed errors in TypeScript", () => {
      const buffer = backend.alloc(64);
      const ref = (shape: number[], dtype: DType = 'f32'): TensorRef => ({ buffer, shape, dtype });
      expect(() => backend.softmax(ref([4, 4]), ref([4, 4]), 3, 4)).toThrowError(ShapeError);
      expect(() => backend.logSoftmax(ref([4, 4], 'i32'), ref([4, 4], 'i32'), 4, 4)).toThrowError(DTypeError);
      expect(() => backend.rmsNorm(ref([4, 4]), ref([4]), ref([4, 4]), ref([4], 'f16'), 4, 4, 1e-5)).toThrowError(
        DTypeError,
      );
      expect(() => backend.layerNorm(ref([4, 4]), ref([4]), ref([4]), ref([4, 4]), 4, 4, Number.NaN)).toThrowError(
        InvalidArgumentError,
      );
      expect(() => backend.rope(ref([1, 1, 4, 3]), ref([1, 1, 4, 3]), 0, 10000, false)).toThrowError(ShapeError);
      expect(() => backend.rope(ref([1, 1, 2, 4]), ref([1, 1, 2, 4]), 0.5, 10000, false)).toThrowError(
        InvalidArgumentError,
      );
      expect(() => backend.swiglu(ref([8]), ref([4]), ref([8]))).toThrowError(ShapeError);
      expect(() => backend.crossEntropy(ref([2, 4]), ref([2], 'i32'), ref([2]), 2, 4, 1.5)).toThrowError(
        InvalidArgumentError,
      );
      expect(() => backend.crossEntropyBackward(ref([2, 4]), ref([2]), ref([2, 4]), 2, 4, -100, 1)).toThrowError(
        DTypeError,
      );
      expect(() =>
        backend.adamw(ref([4]), ref([4]), ref([4]), ref([4]), {
          lr: 1e-3,
          beta1: 0.9,
          beta2: 0.999,
          eps: 1e-8,
          weightDecay: 0,
          step: 0,
        }),
      ).toThrowError(InvalidArgumentError);
      backend.free(buffer);
    });
  });
});
