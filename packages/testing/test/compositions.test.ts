import { describe, expect, it } from 'vitest';
import type { DType } from '@kiln/core';
import { f32ToBf16Bits, f32ToF16Bits } from '@kiln/core';
import { philoxNormal, philoxUniform } from '@kiln/core';
import { decodeHostValues } from '@kiln/core';
import type { FusedKernelName, KernelBackend, StridedView, TensorRef } from '@kiln/core';
import { FUSED_KERNELS } from '@kiln/core';
import { adamwDeviceScalars, composedKernels } from '@kiln/core';
import { createReferenceBackend, type ReferenceBackend } from '../src/reference-backend.js';

// Every composition runs on a primitives-only reference backend and is compared with the
// reference's own fused kernel on identical inputs.

const BYTES: Record<DType, number> = { f32: 4, f16: 2, bf16: 2, i32: 4 };
/** |got − expected| ≤ absolute + relative·|expected| per output dtype (f32 steps vs float64; bf16 1 ulp). */
const TOLERANCE: Record<DType, { absolute: number; relative: number }> = {
  f32: { absolute: 1e-5, relative: 1e-4 },
  f16: { absolute: 1e-4, relative: 1e-3 },
  bf16: { absolute: 1e-3, relative: 8e-3 },
  i32: { absolute: 0, relative: 0 },
};

function encode(values: readonly number[], dtype: DType): Uint8Array {
  if (dtype === 'f32') return new Uint8Array(Float32Array.from(values).buffer);
  if (dtype === 'i32') return new Uint8Array(Int32Array.from(values).buffer);
  return new Uint8Array(
    Uint16Array.from(values, (value) => (dtype === 'f16' ? f32ToF16Bits(value) : f32ToBf16Bits(value))).buffer,
  );
}

function decode(bytes: Uint8Array, dtype: DType): number[] {
  return Array.from(decodeHostValues(bytes, dtype));
}

function count(shape: readonly number[]): number {
  return shape.reduce((product, size) => product * size, 1);
}

/** Deterministic normal(0, scale) numbers. */
function normal(length: number, seed: number, scale = 1): number[] {
  const values = new Float32Array(length);
  philoxNormal(values, seed, 0, 0, scale);
  return Array.from(values);
}

/** Deterministic uniform [low, high) numbers. */
function uniform(length: number, seed: number, low: number, high: number): number[] {
  const values = new Float32Array(length);
  philoxUniform(values, seed, 0, low, high);
  return Array.from(values);
}

/** Makes tensors on one backend. */
interface Factory {
  tensor(shape: number[], dtype: DType, values?: readonly number[]): TensorRef;
  view(ref: TensorRef, shape: number[], strides: number[]): StridedView;
}

function factoryFor(backend: ReferenceBackend): Factory {
  return {
    tensor(shape, dtype, values) {
      const buffer = backend.alloc(count(shape) * BYTES[dtype]);
      if (values && values.length > 0) backend.upload(buffer, encode(values, dtype));
      return { buffer, shape, dtype };
    },
    view: (ref, shape, strides) => ({ ...ref, shape, strides, offset: 0 }),
  };
}

type Arguments<K extends FusedKernelName> = Parameters<NonNullable<KernelBackend[K]>>;

/** Build the same call on both backends; compare every output; check leaks and downloads. */
async function compareWithFused<K extends FusedKernelName>(
  kernel: K,
  build: (factory: Factory) => { args: Arguments<K>; outputs: TensorRef[] },
  tolerance: Partial<Record<DType, { absolute: number; relative: number }>> = {},
): Promise<void> {
  const fused = createReferenceBackend();
  const primitives = createReferenceBackend({ fused: false });
  const expected = build(factoryFor(fused));
  const actual = build(factoryFor(primitives));
  (fused[kernel] as (...args: unknown[]) => void)(...expected.args);

  const buffersBefore = primitives.memory().bufferCount;
  primitives.resetTransfers();
  (composedKernels[kernel] as (backend: KernelBackend, ...args: unknown[]) => void)(primitives, ...actual.args);
  expect(primitives.memory().bufferCount, `${kernel} leaked temporaries`).toBe(buffersBefore);
  expect(primitives.transfers.downloads, `${kernel} read device memory back`).toBe(0);

  for (let index = 0; index < expected.outputs.length; index++) {
    const want = decode(await fused.download(expected.outputs[index].buffer), expected.outputs[index].dtype);
    const got = decode(await primitives.download(actual.outputs[index].buffer), actual.outputs[index].dtype);
    const dtype = expected.outputs[index].dtype;
    const { absolute, relative } = tolerance[dtype] ?? TOLERANCE[dtype];
    const length = count(expected.outputs[index].shape);
    for (let element = 0; element < length; element++) {
      const label = `${kernel} output ${index} element ${element}: got ${got[element]}, expected ${want[element]}`;
      if (!Number.isFinite(want[element])) expect(got[element], label).toBe(want[element]);
      else
        expect(Math.abs(got[element] - want[element]), label).toBeLessThanOrEqual(
          absolute + relative * Math.abs(want[element]),
        );
    }
  }
}

const FLOATS: DType[] = ['f32', 'bf16'];

describe('composedKernels', () => {
  it('covers every fused kernel', () => {
    expect(Object.keys(composedKernels).sort()).toEqual([...FUSED_KERNELS].sort());
  });
});

describe.each(FLOATS)('compositions match the fused reference (%s)', (dtype) => {
  const rowShapes: Array<[number, number]> = [
    [0, 5],
    [3, 0],
    [1, 1],
    [3, 7],
    [5, 33],
  ];

  it.each(rowShapes)('softmax, logSoftmax, softmaxBackward [%i, %i]', async (rows, cols) => {
    const values = normal(rows * cols, 1, 3);
    if (rows * cols > 4) values[2] = -Infinity;
    for (const kernel of ['softmax', 'logSoftmax'] as const) {
      await compareWithFused(kernel, (make) => {
        const out = make.tensor([rows, cols], dtype);
        return { args: [make.tensor([rows, cols], dtype, values), out, rows, cols], outputs: [out] };
      });
    }
    const y = uniform(rows * cols, 2, 0, 1);
    const dy = normal(rows * cols, 3);
    await compareWithFused('softmaxBackward', (make) => {
      const dx = make.tensor([rows, cols], dtype);
      return {
        args: [make.tensor([rows, cols], dtype, y), make.tensor([rows, cols], dtype, dy), dx, rows, cols],
        outputs: [dx],
      };
    });
  });

  it('softmax of a row of all −Inf is NaN in both', async () => {
    await compareWithFused('softmax', (make) => {
      const out = make.tensor([2, 3], dtype);
      return {
        args: [make.tensor([2, 3], dtype, [-Infinity, -Infinity, -Infinity, 1, 2, 3]), out, 2, 3],
        outputs: [out],
      };
    });
  });

  it.each([
    [0, 4],
    [2, 0],
    [1, 1],
    [3, 7],
    [4, 64],
  ] as Array<[number, number]>)('rmsNorm, rmsNormBackward, layerNorm [%i, %i]', async (rows, cols) => {
    const x = normal(rows * cols, 4, 2);
    const weight = normal(cols, 5);
    const bias = normal(cols, 6);
    const dy = normal(rows * cols, 7);
    const rstd = uniform(rows, 8, 0.5, 2);
    await compareWithFused('rmsNorm', (make) => {
      const out = make.tensor([rows, cols], dtype);
      const inverse = make.tensor([rows], 'f32');
      return {
        args: [make.tensor([rows, cols], dtype, x), make.tensor([cols], dtype, weight), out, inverse, rows, cols, 1e-5],
        outputs: [out, inverse],
      };
    });
    await compareWithFused(
      'rmsNormBackward',
      (make) => {
        const dx = make.tensor([rows, cols], dtype);
        const dWeight = make.tensor([cols], 'f32');
        return {
          args: [
            make.tensor([rows, cols], dtype, x),
            make.tensor([cols], dtype, weight),
            make.tensor([rows], 'f32', rstd),
            make.tensor([rows, cols], dtype, dy),
            dx,
            dWeight,
            rows,
            cols,
          ],
          outputs: [dx, dWeight],
        };
      },
      { f32: { absolute: 1e-4, relative: 2e-4 } },
    );
    await compareWithFused('layerNorm', (make) => {
      const out = make.tensor([rows, cols], dtype);
      return {
        args: [
          make.tensor([rows, cols], dtype, x),
          make.tensor([cols], dtype, weight),
          make.tensor([cols], dtype, bias),
          out,
          rows,
          cols,
          1e-5,
        ],
        outputs: [out],
      };
    });
  });

  it.each([
    [1, 1, 1, 2],
    [2, 3, 5, 6],
    [1, 2, 0, 4],
    [1, 2, 3, 16],
  ])('rope [%i, %i, %i, %i], both directions', async (...shape) => {
    const x = normal(count(shape), 9);
    for (const inverse of [false, true]) {
      await compareWithFused('rope', (make) => {
        const out = make.tensor(shape, dtype);
        return { args: [make.tensor(shape, dtype, x), out, 7, 10000, inverse], outputs: [out] };
      });
    }
  });

  it.each([[[0]], [[1]], [[3, 5]], [[64]]])('swiglu and swigluBackward %j', async (shape) => {
    const gate = normal(count(shape), 10, 3);
    const up = normal(count(shape), 11);
    const dy = normal(count(shape), 12);
    await compareWithFused('swiglu', (make) => {
      const out = make.tensor(shape, dtype);
      return { args: [make.tensor(shape, dtype, gate), make.tensor(shape, dtype, up), out], outputs: [out] };
    });
    await compareWithFused('swigluBackward', (make) => {
      const dGate = make.tensor(shape, dtype);
      const dUp = make.tensor(shape, dtype);
      return {
        args: [
          make.tensor(shape, dtype, gate),
          make.tensor(shape, dtype, up),
          make.tensor(shape, dtype, dy),
          dGate,
          dUp,
        ],
        outputs: [dGate, dUp],
      };
    });
  });

  it.each([
    { rows: 0, classes: 5, ignoreIndex: -100 },
    { rows: 1, classes: 1, ignoreIndex: -100 },
    { rows: 4, classes: 7, ignoreIndex: -100 },
    // ignoreIndex inside the class range, and −Inf logits away from the targets.
    { rows: 6, classes: 33, ignoreIndex: 2 },
    { rows: 3, classes: 0, ignoreIndex: -1 },
  ])('crossEntropy and crossEntropyBackward %j', async ({ rows, classes, ignoreIndex }) => {
    const logits = normal(rows * classes, 13, 2);
    const targets = uniform(rows, 14, 0, classes).map(Math.floor);
    if (classes === 0) targets.fill(ignoreIndex);
    if (rows >= 4) {
      targets[1] = ignoreIndex;
      targets[3] = ignoreIndex;
      targets[0] = 1;
      logits[5] = -Infinity;
    }
    await compareWithFused('crossEntropy', (make) => {
      const loss = make.tensor([rows], 'f32');
      return {
        args: [
          make.tensor([rows, classes], dtype, logits),
          make.tensor([rows], 'i32', targets),
          loss,
          rows,
          classes,
          ignoreIndex,
        ],
        outputs: [loss],
      };
    });
    await compareWithFused('crossEntropyBackward', (make) => {
      const dLogits = make.tensor([rows, classes], dtype);
      return {
        args: [
          make.tensor([rows, classes], dtype, logits),
          make.tensor([rows], 'i32', targets),
          dLogits,
          rows,
          classes,
          ignoreIndex,
          0.25,
        ],
        outputs: [dLogits],
      };
    });
  });

  it.each([
    { length: 0, step: 1, weightDecay: 0.1 },
    { length: 1, step: 1, weightDecay: 0 },
    { length: 37, step: 10, weightDecay: 0.2 },
  ])('adamw %j', async ({ length, step, weightDecay }) => {
    const param = normal(length, 15);
    const grad = normal(length, 16, 0.1);
    const m = normal(length, 17, 0.01);
    const v = uniform(length, 18, 0, 1e-3);
    await compareWithFused(
      'adamw',
      (make) => {
        const refs = [
          make.tensor([length], dtype, param),
          make.tensor([length], dtype, grad),
          make.tensor([length], 'f32', m),
          make.tensor([length], 'f32', v),
        ];
        return {
          args: [
            refs[0],
            refs[1],
            refs[2],
            refs[3],
            { lr: 1e-2, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay, step },
          ],
          outputs: [refs[0], refs[2], refs[3]],
        };
      },
      { f32: { absolute: 1e-7, relative: 2e-6 } },
    );
  });

  it.each([
    { lengths: [3, 0, 1, 37], guard: undefined },
    { lengths: [5, 129], guard: 4 },
    { lengths: [7], guard: Number.NaN },
  ])('sumOfSquaresMulti and adamwMulti %j', async ({ lengths, guard }) => {
    await compareWithFused('sumOfSquaresMulti', (make) => {
      const tensors = lengths.map((length, index) =>
        make.tensor([length], index % 2 === 0 ? dtype : 'f32', normal(length, 30 + index, 2)),
      );
      const out = make.tensor([], 'f32');
      return { args: [tensors, out], outputs: [out] };
    });
    for (const [deviceScale, withDeviceScalars] of [
      [false, false],
      [true, false],
      [true, true],
    ]) {
      await compareWithFused(
        'adamwMulti',
        (make) => {
          const params = lengths.map((length, index) => make.tensor([length], dtype, normal(length, 40 + index)));
          const grads = lengths.map((length, index) =>
            make.tensor([length], index % 2 === 0 ? 'f32' : dtype, normal(length, 50 + index, 0.1)),
          );
          const ms = lengths.map((length, index) => make.tensor([length], 'f32', normal(length, 60 + index, 0.01)));
          const vs = lengths.map((length, index) => make.tensor([length], 'f32', uniform(length, 70 + index, 0, 1e-3)));
          const gradientScale = deviceScale ? make.tensor([1], 'f32', [0.25]) : 0.25;
          const skipIfNonFinite = guard === undefined ? undefined : make.tensor([], 'f32', [guard]);
          const weightDecays = lengths.map((_, index) => (index % 2 === 0 ? 0.1 : 0));
          // Device scalars for lr 3e-3, step 5; options.lr and options.step then hold stale values the kernels must ignore.
          const deviceScalars = withDeviceScalars
            ? {
                deviceScalars: make.tensor([2 + lengths.length], 'f32', [
                  ...adamwDeviceScalars({ lr: 3e-3, beta1: 0.9, beta2: 0.999, step: 5, weightDecays }),
                ]),
              }
            : {};
          return {
            args: [
              params,
              grads,
              ms,
              vs,
              {
                lr: 1e-2,
                beta1: 0.9,
                beta2: 0.999,
                eps: 1e-8,
                step: 3,
                weightDecays,
                gradientScale,
                ...(skipIfNonFinite ? { skipIfNonFinite } : {}),
                ...deviceScalars,
              },
            ],
            outputs: [...params, ...ms, ...vs],
          };
        },
        { f32: { absolute: 1e-7, relative: 2e-6 } },
      );
    }
  });

  it.each([[0], [1], [13]])('random is bit-identical to the fused kernel (%i elements)', async (length) => {
    for (const distribution of [
      { kind: 'uniform', low: -2, high: 5 },
      { kind: 'normal', mean: 1, std: 3 },
    ] as const) {
      await compareWithFused(
        'random',
        (make) => {
          const out = make.tensor([length], dtype);
          return { args: [out, distribution, 1234, 5], outputs: [out] };
        },
        { [dtype]: { absolute: 0, relative: 0 } },
      );
    }
  });
});

describe.each(FLOATS)('attention compositions match the fused reference (%s)', (dtype) => {
  interface AttentionCase {
    batch: number;
    queryHeads: number;
    keyHeads: number;
    queryLength: number;
    keyLength: number;
    dimension: number;
    causal: boolean;
    mask?: 'broadcast' | 'full';
  }
  const cases: AttentionCase[] = [
    { batch: 1, queryHeads: 1, keyHeads: 1, queryLength: 1, keyLength: 1, dimension: 1, causal: false },
    { batch: 2, queryHeads: 4, keyHeads: 2, queryLength: 3, keyLength: 5, dimension: 8, causal: true },
    // Tq > Tk with causal: the first queries have no allowed key.
    { batch: 1, queryHeads: 2, keyHeads: 2, queryLength: 5, keyLength: 3, dimension: 4, causal: true },
    {
      batch: 1,
      queryHeads: 2,
      keyHeads: 1,
      queryLength: 4,
      keyLength: 4,
      dimension: 3,
      causal: false,
      mask: 'broadcast',
    },
    { batch: 2, queryHeads: 3, keyHeads: 1, queryLength: 3, keyLength: 6, dimension: 5, causal: true, mask: 'full' },
    { batch: 0, queryHeads: 2, keyHeads: 1, queryLength: 3, keyLength: 3, dimension: 4, causal: false },
    { batch: 1, queryHeads: 2, keyHeads: 1, queryLength: 3, keyLength: 0, dimension: 4, causal: false },
    { batch: 1, queryHeads: 2, keyHeads: 1, queryLength: 0, keyLength: 3, dimension: 4, causal: true },
  ];

  it.each(cases)('attention and attentionBackward %j', async (shape) => {
    const { batch, queryHeads, keyHeads, queryLength, keyLength, dimension, causal } = shape;
    const queryShape = [batch, queryHeads, queryLength, dimension];
    const keyShape = [batch, keyHeads, keyLength, dimension];
    const scoreShape = [batch, queryHeads, queryLength, keyLength];
    const q = normal(count(queryShape), 19);
    const k = normal(count(keyShape), 20);
    const v = normal(count(keyShape), 21);
    const dOut = normal(count(queryShape), 22);
    const maskShape = shape.mask === 'full' ? scoreShape : [queryLength, keyLength];
    const maskValues = normal(count(maskShape), 23);
    // Some −Inf entries, including a whole row, so masked-out keys and empty rows are both exercised.
    for (let j = 0; j < keyLength && maskValues.length > 0; j++) maskValues[j] = -Infinity;
    if (maskValues.length > keyLength + 1) maskValues[keyLength + 1] = -Infinity;
    const maskOf = (make: Factory): StridedView | null => {
      if (!shape.mask) return null;
      const ref = make.tensor(maskShape, 'f32', maskValues);
      return shape.mask === 'full'
        ? make.view(ref, scoreShape, [queryHeads * queryLength * keyLength, queryLength * keyLength, keyLength, 1])
        : make.view(ref, scoreShape, [0, 0, keyLength, 1]);
    };
    const params = { scale: 1 / Math.sqrt(Math.max(dimension, 1)), causal };
    await compareWithFused('attention', (make) => {
      const out = make.tensor(queryShape, dtype);
      const lse = make.tensor([batch, queryHeads, queryLength], 'f32');
      return {
        args: [
          make.tensor(queryShape, dtype, q),
          make.tensor(keyShape, dtype, k),
          make.tensor(keyShape, dtype, v),
          maskOf(make),
          out,
          lse,
          params,
        ],
        outputs: [out, lse],
      };
    });

    // The backward's inputs out and lse come from the fused forward, uploaded identically to both backends.
    const forward = createReferenceBackend();
    const make = factoryFor(forward);
    const out = make.tensor(queryShape, dtype);
    const lse = make.tensor([batch, queryHeads, queryLength], 'f32');
    forward.attention!(
      make.tensor(queryShape, dtype, q),
      make.tensor(keyShape, dtype, k),
      make.tensor(keyShape, dtype, v),
      maskOf(make),
      out,
      lse,
      params,
    );
    const outValues = decode(await forward.download(out.buffer), dtype);
    const lseValues = decode(await forward.download(lse.buffer), 'f32');
    await compareWithFused(
      'attentionBackward',
      (factory) => {
        const dq = factory.tensor(queryShape, dtype);
        const dk = factory.tensor(keyShape, dtype);
        const dv = factory.tensor(keyShape, dtype);
        return {
          args: [
            factory.tensor(queryShape, dtype, q),
            factory.tensor(keyShape, dtype, k),
            factory.tensor(keyShape, dtype, v),
            maskOf(factory),
            factory.tensor(queryShape, dtype, outValues),
            factory.tensor([batch, queryHeads, queryLength], 'f32', lseValues),
            factory.tensor(queryShape, dtype, dOut),
            dq,
            dk,
            dv,
            params,
          ],
          outputs: [dq, dk, dv],
        };
      },
      { f32: { absolute: 1e-4, relative: 5e-4 } },
    );
  });
});

describe('composition hygiene', () => {
  it('frees every temporary when a primitive throws midway', () => {
    const primitives = createReferenceBackend({ fused: false });
    let calls = 0;
    const failing: KernelBackend = {
      ...primitives,
      unary: (op, x, out) => {
        calls++;
        if (op === 'exp') throw new Error('device lost');
        primitives.unary(op, x, out);
      },
    };
    const make = factoryFor(primitives);
    const q = make.tensor([1, 2, 3, 4], 'bf16', normal(24, 30));
    const k = make.tensor([1, 1, 3, 4], 'bf16', normal(12, 31));
    const out = make.tensor([1, 2, 3, 4], 'bf16');
    const lse = make.tensor([1, 2, 3], 'f32');
    const before = primitives.memory().bufferCount;
    expect(() => composedKernels.attention(failing, q, k, k, null, out, lse, { scale: 0.5, causal: true })).toThrow(
      'device lost',
    );
    expect(calls).toBeGreaterThan(0);
    expect(primitives.memory().bufferCount).toBe(before);
    expect(() => composedKernels.softmax(failing, q, out, 6, 4)).toThrow('device lost');
    expect(primitives.memory().bufferCount).toBe(before);
  });

  it('works on a device whose reads are asynchronous only', async () => {
    const device = createReferenceBackend({ fused: false, asyncOnly: true });
    const make = factoryFor(device);
    const x = make.tensor([2, 2], 'f32', [0, Math.log(3), 1, 1]);
    const out = make.tensor([2, 2], 'f32');
    composedKernels.softmax(device, x, out, 2, 2);
    const values = decode(await device.download(out.buffer), 'f32');
    [0.25, 0.75, 0.5, 0.5].forEach((want, index) => expect(values[index]).toBeCloseTo(want, 6));
  });
});
