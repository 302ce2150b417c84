/**
 * Op-level cases: core's public ops that are compositions of primitive kernels (erf, exact gelu,
 * cumsum, clamp, range slices, split/chunk, 1-D matmul, takeAlongAxis, reductions over no axes) run
 * through the public API on the backend under test — tensors created with `{ backend }` — and are
 * compared with float64 host math below; a few also check their gradients (public backward against
 * float64 central differences of the host forward). Core's ops are loaded lazily, as in
 * argument-errors.ts, so the rest of the kit works without them.
 */
import type { KernelName } from '@kiln/core';
import type { DType } from '@kiln/core';
import type * as Core from '@kiln/core';
import { gradcheck } from '../../gradcheck.js';
import { caseId, defineCase, type CaseSettings } from '../case-builder.js';
import type { CaseContext } from '../case-context.js';
import { assertClose } from '../compare.js';
import { ConformanceSkipSignal, KilnConformanceError } from '../conformance-error.js';
import { contiguousStrides, elementCount } from '../host-values.js';
import type { ConformanceCase } from '../types.js';

type Ops = typeof Core;
type Tensor = Core.Tensor;

// ---------------------------------------------------------------------------------------------
// Float64 host math (independent of core's compositions).

/** erf in float64: 2/√π·e^(−x²)·Σ 2ⁿx^(2n+1)/(1·3·…·(2n+1)), a series of positive terms (no cancellation). */
export function hostErf(x: number): number {
  if (Number.isNaN(x)) return NaN;
  if (Math.abs(x) > 6) return Math.sign(x);
  let term = x;
  let total = x;
  for (let n = 1; n < 400 && Math.abs(term) > 1e-18 * Math.abs(total); n++) {
    term *= (2 * x * x) / (2 * n + 1);
    total += term;
  }
  return (2 / Math.sqrt(Math.PI)) * Math.exp(-x * x) * total;
}

/** Exact (erf) or tanh-approximated GELU in float64. */
export function hostGelu(x: number, approximate: 'none' | 'tanh'): number {
  if (approximate === 'none') return 0.5 * x * (1 + hostErf(x / Math.SQRT2));
  return 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x * x * x)));
}

/** Cumulative sums along `axis` (float64, or wrapping i32 sums when `int32`). */
export function hostCumsum(
  values: ArrayLike<number>,
  shape: readonly number[],
  axis: number,
  exclusive: boolean,
  reverse: boolean,
  int32 = false,
): Float64Array {
  const n = shape[axis];
  const inner = elementCount(shape.slice(axis + 1));
  const outer = elementCount(shape.slice(0, axis));
  const out = new Float64Array(values.length);
  for (let o = 0; o < outer; o++) {
    for (let j = 0; j < inner; j++) {
      let running = 0;
      for (let step = 0; step < n; step++) {
        const i = reverse ? n - 1 - step : step;
        const at = (o * n + i) * inner + j;
        if (exclusive) out[at] = running;
        running = int32 ? (running + values[at]) | 0 : running + values[at];
        if (!exclusive) out[at] = running;
      }
    }
  }
  return out;
}

/** The flat index into a tensor of `shape` read at output position `position` under broadcasting. */
function broadcastIndex(position: readonly number[], shape: readonly number[]): number {
  const strides = contiguousStrides(shape);
  const shift = position.length - shape.length;
  let index = 0;
  for (let axis = 0; axis < shape.length; axis++)
    index += (shape[axis] === 1 ? 0 : position[axis + shift]) * strides[axis];
  return index;
}

function positions(shape: readonly number[]): number[][] {
  const count = elementCount(shape);
  const result: number[][] = [];
  for (let flat = 0; flat < count; flat++) {
    const position = new Array<number>(shape.length);
    let rest = flat;
    for (let axis = shape.length - 1; axis >= 0; axis--) {
      position[axis] = rest % shape[axis];
      rest = Math.floor(rest / shape[axis]);
    }
    result.push(position);
  }
  return result;
}

/** A float64 operand with its shape (for broadcasting host ops). */
export interface HostOperand {
  /** Row-major values. */
  values: ArrayLike<number>;
  /** Shape. */
  shape: readonly number[];
}

/** NumPy broadcast of shapes. */
export function hostBroadcastShape(...shapes: (readonly number[])[]): number[] {
  const rank = Math.max(...shapes.map((shape) => shape.length));
  return Array.from({ length: rank }, (_, axis) =>
    Math.max(...shapes.map((shape) => shape[shape.length - rank + axis] ?? 1)),
  );
}

/** torch.clamp in float64: min(max(x, low), high), NaN propagating; either bound may be null. */
export function hostClamp(x: HostOperand, low: HostOperand | null, high: HostOperand | null): Float64Array {
  const shape = hostBroadcastShape(x.shape, low?.shape ?? [], high?.shape ?? []);
  return Float64Array.from(positions(shape), (position) => {
    let value = x.values[broadcastIndex(position, x.shape)];
    const lowValue = low ? low.values[broadcastIndex(position, low.shape)] : -Infinity;
    const highValue = high ? high.values[broadcastIndex(position, high.shape)] : Infinity;
    if (Number.isNaN(value) || Number.isNaN(lowValue) || Number.isNaN(highValue)) return NaN;
    if (value < lowValue) value = lowValue;
    if (value > highValue) value = highValue;
    return value;
  });
}

/** The indices Python's `range(len)[start:end:step]` selects. */
export function hostRangeIndices(n: number, range: { start?: number; end?: number; step?: number }): number[] {
  const step = range.step ?? 1;
  const wrap = (value: number) => (value < 0 ? value + n : value);
  const taken: number[] = [];
  if (step > 0) {
    const start = Math.max(0, Math.min(n, wrap(range.start ?? 0)));
    const end = Math.max(0, Math.min(n, wrap(range.end ?? n)));
    for (let i = start; i < end; i += step) taken.push(i);
  } else {
    const start = Math.max(-1, Math.min(n - 1, wrap(range.start ?? n - 1)));
    const end = range.end === undefined ? -1 : Math.max(-1, Math.min(n - 1, wrap(range.end)));
    for (let i = start; i > end; i += step) taken.push(i);
  }
  return taken;
}

/** x sliced by per-axis ranges (missing trailing axes whole), in float64. */
export function hostSlice(
  x: HostOperand,
  ranges: readonly ({ start?: number; end?: number; step?: number } | null)[],
): HostOperand {
  const picks = x.shape.map((n, axis) => hostRangeIndices(n, ranges[axis] ?? {}));
  const shape = picks.map((pick) => pick.length);
  const strides = contiguousStrides(x.shape);
  const values = Float64Array.from(
    positions(shape),
    (position) => x.values[position.reduce((sum, index, axis) => sum + picks[axis][index] * strides[axis], 0)],
  );
  return { values, shape };
}

/** numpy.take_along_axis in float64 (x and indices broadcast off the axis). */
export function hostTakeAlongAxis(x: HostOperand, indices: HostOperand, axis: number): HostOperand {
  const shape = x.shape.map((dimension, index) =>
    index === axis ? indices.shape[index] : Math.max(dimension, indices.shape[index]),
  );
  const strides = contiguousStrides(x.shape);
  const values = Float64Array.from(positions(shape), (position) => {
    const index = indices.values[broadcastIndex(position, indices.shape)];
    return x.values[
      position.reduce(
        (sum, coordinate, d) => sum + (d === axis ? index : x.shape[d] === 1 ? 0 : coordinate) * strides[d],
        0,
      )
    ];
  });
  return { values, shape };
}

/** numpy.matmul in float64, 1-D operands included. */
export function hostMatmul(a: HostOperand, b: HostOperand): HostOperand {
  const a2 = a.shape.length === 1 ? { values: a.values, shape: [1, a.shape[0]] } : a;
  const b2 = b.shape.length === 1 ? { values: b.values, shape: [b.shape[0], 1] } : b;
  const [m, k] = a2.shape.slice(-2);
  const n = b2.shape[b2.shape.length - 1];
  const batchShape = hostBroadcastShape(a2.shape.slice(0, -2), b2.shape.slice(0, -2));
  const out: number[] = [];
  for (const batch of positions(batchShape)) {
    const aBase = broadcastIndex(batch, a2.shape.slice(0, -2)) * m * k;
    const bBase = broadcastIndex(batch, b2.shape.slice(0, -2)) * k * n;
    for (let i = 0; i < m; i++) {
      for (let j = 0; j < n; j++) {
        let total = 0;
        for (let p = 0; p < k; p++) total += a2.values[aBase + i * k + p] * b2.values[bBase + p * n + j];
        out.push(total);
      }
    }
  }
  let shape = [...batchShape, m, n];
  if (a.shape.length === 1) shape = shape.filter((_, axis) => axis !== shape.length - 2);
  if (b.shape.length === 1) shape = shape.slice(0, -1);
  return { values: Float64Array.from(out), shape };
}

// ---------------------------------------------------------------------------------------------
// Running a public op on the backend under test.

const NEEDED = [
  'tensor',
  'erf',
  'gelu',
  'cumsum',
  'clamp',
  'slice',
  'split',
  'chunk',
  'matmul',
  'takeAlongAxis',
  'sum',
  'valueAndGrad',
] as const;

async function loadOps(): Promise<Ops> {
  const ops = (await import('@kiln/core')) as Partial<Ops>;
  const missing = NEEDED.filter((name) => typeof ops[name] !== 'function');
  if (missing.length > 0)
    throw new ConformanceSkipSignal(`core ops not available (${missing.join(', ')} missing from @kiln/core)`);
  return ops as Ops;
}

/** What an op case body works with. */
export interface OpBench {
  /** The case id (for messages). */
  id: string;
  /** Core's public ops. */
  ops: Ops;
  /** A tensor on the backend under test holding `values` in `dtype`; `.values` are the stored (rounded) values read back. */
  input(
    shape: readonly number[],
    dtype: DType,
    values: ArrayLike<number>,
  ): Promise<{ tensor: Tensor; values: Float64Array; shape: readonly number[] }>;
  /** Uniform random input in [low, high) (integers for i32). */
  random(
    shape: readonly number[],
    dtype: DType,
    low?: number,
    high?: number,
  ): Promise<{ tensor: Tensor; values: Float64Array; shape: readonly number[] }>;
  /** Registers a result for disposal after the case. */
  keep<T extends Tensor | Tensor[]>(result: T): T;
  /** Compares a result with host values (shape, then elements within the dtype's tolerance). */
  expect(result: Tensor, expected: HostOperand, output?: string, reductionLength?: number): Promise<void>;
  /** Checks the gradients of Σ r·f(inputs) (public backward) against float64 differences of the host forward. */
  expectGradients(
    f: (...inputs: Tensor[]) => Tensor,
    inputs: { tensor: Tensor; values: Float64Array }[],
    host: (inputs: Float64Array[]) => ArrayLike<number>,
  ): Promise<void>;
}

/** A case that runs core's public ops on the backend under test (see OpBench). */
export function opCase(
  settings: CaseSettings,
  kernel: KernelName,
  dtype: DType,
  parameters: string,
  body: (bench: OpBench) => Promise<void>,
): ConformanceCase {
  const id = caseId(kernel, dtype, `op ${parameters}`);
  return defineCase(settings, id, kernel, dtype, async (context) => {
    const ops = await loadOps();
    const created: Tensor[] = [];
    const keep = <T extends Tensor | Tensor[]>(result: T): T => {
      created.push(...(Array.isArray(result) ? result : [result]));
      return result;
    };
    const bench: OpBench = {
      id,
      ops,
      keep,
      input: async (shape, inputDType, values) => {
        const tensor = keep(
          ops.tensor(Array.from(values), [...shape], { dtype: inputDType, backend: context.backend }),
        );
        return { tensor, values: Float64Array.from(await tensor.data()), shape };
      },
      random: (shape, inputDType, low = -2, high = 2) => {
        const count = elementCount(shape);
        const values =
          inputDType === 'i32' ? context.random.integers(count, low, high) : context.random.uniform(count, low, high);
        return bench.input(shape, inputDType, values);
      },
      expect: async (result, expected, output = 'out', reductionLength = 1) => {
        if (
          result.shape.length !== expected.shape.length ||
          result.shape.some((dimension, axis) => dimension !== expected.shape[axis])
        ) {
          throw new KilnConformanceError(
            id,
            `output '${output}' has shape [${result.shape.join(', ')}], expected [${expected.shape.join(', ')}]`,
          );
        }
        const got = Float64Array.from(await result.data());
        const tolerance = context.toleranceFor(result.dtype, { reductionLength });
        assertClose(got, Float64Array.from(expected.values), tolerance, {
          caseId: id,
          output,
          shape: result.shape,
          dtype: result.dtype,
        });
      },
      expectGradients: (f, inputs, host) => checkGradients(context, bench, id, f, inputs, host),
    };
    try {
      await body(bench);
    } finally {
      for (const tensor of created) if (!tensor.isDisposed) tensor.dispose();
    }
  });
}

async function checkGradients(
  context: CaseContext,
  bench: OpBench,
  id: string,
  f: (...inputs: Tensor[]) => Tensor,
  inputs: { tensor: Tensor; values: Float64Array }[],
  host: (inputs: Float64Array[]) => ArrayLike<number>,
): Promise<void> {
  const { ops } = bench;
  const forward = host(inputs.map((input) => input.values));
  const projection = context.random.uniform(forward.length, -1, 1);
  const r = bench.keep(ops.tensor(Array.from(projection), [forward.length], { backend: context.backend }));
  const { value, grads } = ops.valueAndGrad((...leaves: Tensor[]) =>
    ops.sum(ops.mul(ops.reshape(f(...leaves), [-1]), r)),
  )(...inputs.map((input) => input.tensor));
  bench.keep([value, ...grads]);
  const analytic = await Promise.all(grads.map(async (grad) => Float64Array.from(await grad.data())));
  const loss = (values: Float64Array[]) => {
    const out = host(values);
    let total = 0;
    for (let i = 0; i < out.length; i++) total += out[i] * projection[i];
    return total;
  };
  const result = gradcheck(
    loss,
    inputs.map((input) => Float64Array.from(input.values)),
    analytic,
    { tolerance: { absolute: 1e-4, relative: 1e-3 } },
  );
  if (!result.passed) {
    throw new KilnConformanceError(
      id,
      `gradient check failed: ${result.message}`,
      undefined,
      "The op's gradient (docs/ops.md) disagrees with float64 differences of its forward.",
    );
  }
}

// ---------------------------------------------------------------------------------------------
// The cases.

const ERF_SPECIALS = [0, -0, 0.5, -0.5, 0.49999997, 1e-6, -3e-5, 2.5, -4, 9, -12, Infinity, -Infinity, NaN];

function erfCases(settings: CaseSettings): ConformanceCase[] {
  const cases = (['f32', 'f16'] as const).map((dtype) =>
    opCase(settings, 'unary', dtype, `erf n=${dtype === 'f32' ? 257 : 37}+specials`, async (bench) => {
      const count = dtype === 'f32' ? 257 : 37;
      const random = Array.from(await (await bench.random([count], dtype, -4, 4)).values);
      const x = await bench.input([count + ERF_SPECIALS.length], dtype, [...random, ...ERF_SPECIALS]);
      await bench.expect(bench.keep(bench.ops.erf(x.tensor)), { values: x.values.map(hostErf), shape: x.shape });
    }),
  );
  const gelu = (['f32', 'bf16'] as const).map((dtype) =>
    opCase(settings, 'unary', dtype, 'gelu approximate=none 3×67', async (bench) => {
      const x = await bench.random([3, 67], dtype, -5, 5);
      await bench.expect(bench.keep(bench.ops.gelu(x.tensor, { approximate: 'none' })), {
        values: x.values.map((v) => hostGelu(v, 'none')),
        shape: x.shape,
      });
    }),
  );
  const gradients = [
    opCase(settings, 'unary', 'f32', 'erf gradient 2×9', async (bench) => {
      const x = await bench.random([2, 9], 'f32', -2.5, 2.5);
      await bench.expectGradients(
        (t) => bench.ops.erf(t),
        [x],
        ([v]) => v.map(hostErf),
      );
    }),
    opCase(settings, 'unary', 'f32', 'gelu approximate=none gradient 13', async (bench) => {
      const x = await bench.random([13], 'f32', -3, 3);
      await bench.expectGradients(
        (t) => bench.ops.gelu(t, { approximate: 'none' }),
        [x],
        ([v]) => v.map((value) => hostGelu(value, 'none')),
      );
    }),
  ];
  return [...cases, ...gelu, ...gradients];
}

interface CumsumCase {
  dtype: DType;
  shape: number[];
  axis: number;
  exclusive?: boolean;
  reverse?: boolean;
  low?: number;
  high?: number;
}

const CUMSUM_CASES: CumsumCase[] = [
  { dtype: 'f32', shape: [1], axis: 0 },
  { dtype: 'f32', shape: [0, 4], axis: 0 },
  { dtype: 'f32', shape: [37], axis: 0 },
  { dtype: 'f32', shape: [3, 70], axis: 1, exclusive: true },
  { dtype: 'f32', shape: [5, 4, 3], axis: 1, reverse: true },
  { dtype: 'f32', shape: [9, 2, 5], axis: 0, exclusive: true, reverse: true },
  { dtype: 'f16', shape: [2, 33], axis: -1 },
  { dtype: 'bf16', shape: [17, 3], axis: 0, reverse: true },
  { dtype: 'i32', shape: [4, 41], axis: 1, low: -1000, high: 1000 },
  { dtype: 'i32', shape: [3, 6], axis: 1, exclusive: true, low: 2 ** 29, high: 2 ** 30 },
];

function cumsumCases(settings: CaseSettings): ConformanceCase[] {
  const forward = CUMSUM_CASES.map((spec) => {
    const flags = `${spec.exclusive ? ',exclusive' : ''}${spec.reverse ? ',reverse' : ''}`;
    return opCase(
      settings,
      'binary',
      spec.dtype,
      `cumsum ${spec.shape.join('×') || 'scalar'} axis=${spec.axis}${flags}`,
      async (bench) => {
        const x = await bench.random(spec.shape, spec.dtype, spec.low ?? -2, spec.high ?? 2);
        const axis = spec.axis < 0 ? spec.axis + spec.shape.length : spec.axis;
        const result = bench.keep(
          bench.ops.cumsum(x.tensor, spec.axis, { exclusive: spec.exclusive, reverse: spec.reverse }),
        );
        const expected = hostCumsum(
          x.values,
          spec.shape,
          axis,
          spec.exclusive ?? false,
          spec.reverse ?? false,
          spec.dtype === 'i32',
        );
        await bench.expect(result, { values: expected, shape: spec.shape }, 'out', spec.shape[axis]);
      },
    );
  });
  const gradient = opCase(settings, 'binary', 'f32', 'cumsum gradient 3×6 axis=1,exclusive', async (bench) => {
    const x = await bench.random([3, 6], 'f32');
    await bench.expectGradients(
      (t) => bench.ops.cumsum(t, 1, { exclusive: true }),
      [x],
      ([v]) => hostCumsum(v, [3, 6], 1, true, false),
    );
  });
  return [...forward, gradient];
}

function clampCases(settings: CaseSettings): ConformanceCase[] {
  return [
    opCase(settings, 'binary', 'f32', 'clamp numbers 5×13 with NaN', async (bench) => {
      const random = Array.from((await bench.random([5 * 13 - 2], 'f32', -3, 3)).values);
      const x = await bench.input([5, 13], 'f32', [...random, NaN, -Infinity]);
      await bench.expect(bench.keep(bench.ops.clamp(x.tensor, -1, 1.5)), {
        values: hostClamp(x, { values: [-1], shape: [] }, { values: [1.5], shape: [] }),
        shape: x.shape,
      });
      await bench.expect(
        bench.keep(bench.ops.clamp(x.tensor, 2, -2)),
        { values: hostClamp(x, { values: [2], shape: [] }, { values: [-2], shape: [] }), shape: x.shape },
        'min>max',
      );
      await bench.expect(
        bench.keep(bench.ops.clamp(x.tensor, undefined, 0)),
        { values: hostClamp(x, null, { values: [0], shape: [] }), shape: x.shape },
        'max only',
      );
    }),
    opCase(settings, 'binary', 'bf16', 'clamp tensor bounds 3×7 (min 3×1, max 7)', async (bench) => {
      const x = await bench.random([3, 7], 'bf16', -3, 3);
      const low = await bench.random([3, 1], 'bf16', -2, 0);
      const high = await bench.random([7], 'bf16', -1, 2);
      await bench.expect(bench.keep(bench.ops.clamp(x.tensor, low.tensor, high.tensor)), {
        values: hostClamp(x, low, high),
        shape: [3, 7],
      });
    }),
    opCase(settings, 'binary', 'i32', 'clamp numbers 4×9', async (bench) => {
      const x = await bench.random([4, 9], 'i32', -50, 50);
      await bench.expect(bench.keep(bench.ops.clamp(x.tensor, -7, 20)), {
        values: hostClamp(x, { values: [-7], shape: [] }, { values: [20], shape: [] }),
        shape: x.shape,
      });
    }),
    opCase(settings, 'binary', 'f32', 'clamp gradient x 4×5, min 4×1, max 5', async (bench) => {
      const x = await bench.random([4, 5], 'f32', -3, 3);
      const low = await bench.random([4, 1], 'f32', -1.5, -0.5);
      const high = await bench.random([5], 'f32', 0.5, 1.5);
      await bench.expectGradients(
        (a, b, c) => bench.ops.clamp(a, b, c),
        [x, low, high],
        ([v, l, h]) => hostClamp({ values: v, shape: [4, 5] }, { values: l, shape: [4, 1] }, { values: h, shape: [5] }),
      );
    }),
  ];
}

type Range = { start?: number; end?: number; step?: number } | null;
const SLICE_CASES: Array<{ dtype: DType; shape: number[]; ranges: Range[] }> = [
  { dtype: 'f32', shape: [5, 7], ranges: [{ start: -1, end: -6, step: -2 }, { step: 3 }] },
  { dtype: 'f32', shape: [4, 9], ranges: [{ start: 10 }] },
  { dtype: 'f32', shape: [33], ranges: [{ start: -100, end: 100, step: 4 }] },
  { dtype: 'i32', shape: [3, 4, 5], ranges: [null, { start: 1, end: -1 }, { step: -1 }] },
  { dtype: 'f16', shape: [1, 33], ranges: [{ step: -1 }, { start: 31, end: 2, step: -5 }] },
  { dtype: 'bf16', shape: [6, 1, 3], ranges: [{ start: 4, end: -100, step: -3 }] },
];

function sliceCases(settings: CaseSettings): ConformanceCase[] {
  const forward = SLICE_CASES.map((spec) =>
    opCase(
      settings,
      'copy',
      spec.dtype,
      `slice ${spec.shape.join('×')} ${JSON.stringify(spec.ranges)}`,
      async (bench) => {
        const x = await bench.random(spec.shape, spec.dtype, -100, 100);
        await bench.expect(bench.keep(bench.ops.slice(x.tensor, spec.ranges)), hostSlice(x, spec.ranges));
      },
    ),
  );
  const gradient = opCase(settings, 'copy', 'f32', 'slice gradient 4×5 [{step:-2},{start:1,end:-1}]', async (bench) => {
    const ranges: Range[] = [{ step: -2 }, { start: 1, end: -1 }];
    const x = await bench.random([4, 5], 'f32');
    await bench.expectGradients(
      (t) => bench.ops.slice(t, ranges),
      [x],
      ([v]) => hostSlice({ values: v, shape: [4, 5] }, ranges).values,
    );
  });
  const split = [
    opCase(settings, 'copy', 'f32', 'split 7×3 size=3 axis=0', async (bench) => {
      const x = await bench.random([7, 3], 'f32');
      const parts = bench.keep(bench.ops.split(x.tensor, 3, 0));
      const ranges = [
        { start: 0, end: 3 },
        { start: 3, end: 6 },
        { start: 6, end: 7 },
      ];
      if (parts.length !== 3) throw new KilnConformanceError(bench.id, `split gave ${parts.length} pieces, expected 3`);
      for (const [index, part] of parts.entries())
        await bench.expect(part, hostSlice(x, [ranges[index]]), `piece ${index}`);
    }),
    opCase(settings, 'copy', 'i32', 'split 2×10 sizes=[4,0,6] axis=1', async (bench) => {
      const x = await bench.random([2, 10], 'i32', -9, 9);
      const parts = bench.keep(bench.ops.split(x.tensor, [4, 0, 6], 1));
      const ranges = [
        { start: 0, end: 4 },
        { start: 4, end: 4 },
        { start: 4, end: 10 },
      ];
      for (const [index, part] of parts.entries())
        await bench.expect(part, hostSlice(x, [null, ranges[index]]), `piece ${index}`);
    }),
    opCase(settings, 'copy', 'f16', 'chunk 6×2 count=3 axis=0', async (bench) => {
      const x = await bench.random([6, 2], 'f16');
      const parts = bench.keep(bench.ops.chunk(x.tensor, 3, 0));
      for (const [index, part] of parts.entries())
        await bench.expect(part, hostSlice(x, [{ start: 2 * index, end: 2 * index + 2 }]), `piece ${index}`);
    }),
  ];
  return [...forward, gradient, ...split];
}

const MATMUL_VECTOR_CASES: Array<{ dtype: DType; a: number[]; b: number[] }> = [
  { dtype: 'f32', a: [17], b: [17, 9] },
  { dtype: 'f32', a: [4, 5, 17], b: [17] },
  { dtype: 'f32', a: [13], b: [13] },
  { dtype: 'f32', a: [1], b: [3, 1, 2] },
  { dtype: 'bf16', a: [33], b: [2, 33, 3] },
];

function matmulCases(settings: CaseSettings): ConformanceCase[] {
  const forward = MATMUL_VECTOR_CASES.map((spec) =>
    opCase(settings, 'matmul', spec.dtype, `matmul 1-D a=${spec.a.join('×')} b=${spec.b.join('×')}`, async (bench) => {
      const a = await bench.random(spec.a, spec.dtype, -1, 1);
      const b = await bench.random(spec.b, spec.dtype, -1, 1);
      const k = spec.a[spec.a.length - 1];
      await bench.expect(bench.keep(bench.ops.matmul(a.tensor, b.tensor)), hostMatmul(a, b), 'out', k);
    }),
  );
  const gradient = opCase(settings, 'matmul', 'f32', 'matmul 1-D gradient a=5 b=2×5×3', async (bench) => {
    const a = await bench.random([5], 'f32', -1, 1);
    const b = await bench.random([2, 5, 3], 'f32', -1, 1);
    await bench.expectGradients(
      (x, y) => bench.ops.matmul(x, y),
      [a, b],
      ([va, vb]) => hostMatmul({ values: va, shape: [5] }, { values: vb, shape: [2, 5, 3] }).values,
    );
  });
  return [...forward, gradient];
}

const TAKE_CASES: Array<{ dtype: DType; x: number[]; indices: number[]; axis: number }> = [
  { dtype: 'f32', x: [4, 7], indices: [4, 3], axis: 1 },
  { dtype: 'f32', x: [1, 6], indices: [5, 2], axis: 1 },
  { dtype: 'f32', x: [5, 3], indices: [2, 1], axis: 0 },
  { dtype: 'i32', x: [3, 4, 2], indices: [3, 4, 5], axis: 2 },
  { dtype: 'f16', x: [2, 9], indices: [2, 0], axis: 1 },
];

function takeAlongAxisCases(settings: CaseSettings): ConformanceCase[] {
  const forward = TAKE_CASES.map((spec) =>
    opCase(
      settings,
      'gather',
      spec.dtype,
      `takeAlongAxis x=${spec.x.join('×')} indices=${spec.indices.join('×')} axis=${spec.axis}`,
      async (bench) => {
        const x = await bench.random(spec.x, spec.dtype, -50, 50);
        const indices = await bench.random(spec.indices, 'i32', 0, spec.x[spec.axis]);
        await bench.expect(
          bench.keep(bench.ops.takeAlongAxis(x.tensor, indices.tensor, spec.axis)),
          hostTakeAlongAxis(x, indices, spec.axis),
        );
      },
    ),
  );
  const gradient = opCase(
    settings,
    'gather',
    'f32',
    'takeAlongAxis gradient x=3×4 indices=3×6 axis=1 (repeats accumulate)',
    async (bench) => {
      const x = await bench.random([3, 4], 'f32');
      const indices = await bench.random([3, 6], 'i32', 0, 4);
      await bench.expectGradients(
        (t) => bench.ops.takeAlongAxis(t, indices.tensor, 1),
        [x],
        ([v]) => hostTakeAlongAxis({ values: v, shape: [3, 4] }, indices, 1).values,
      );
    },
  );
  return [...forward, gradient];
}

function emptyAxesCases(settings: CaseSettings): ConformanceCase[] {
  const specs: Array<{ op: 'sum' | 'mean' | 'max' | 'min'; dtype: DType }> = [
    { op: 'sum', dtype: 'f32' },
    { op: 'mean', dtype: 'bf16' },
    { op: 'max', dtype: 'f16' },
    { op: 'min', dtype: 'i32' },
    { op: 'sum', dtype: 'i32' },
  ];
  return specs.map(({ op, dtype }) =>
    opCase(settings, 'reduce', dtype, `${op} axes=[] 3×5 (identity)`, async (bench) => {
      const x = await bench.random([3, 5], dtype, -20, 20);
      await bench.expect(bench.keep(bench.ops[op](x.tensor, [], true)), x, 'keepDims');
      await bench.expect(bench.keep(bench.ops[op](x.tensor, [])), x, 'dropped');
    }),
  );
}

/** Every op-level case. */
export function opCases(settings: CaseSettings): ConformanceCase[] {
  return [
    ...emptyAxesCases(settings),
    ...erfCases(settings),
    ...cumsumCases(settings),
    ...clampCases(settings),
    ...sliceCases(settings),
    ...matmulCases(settings),
    ...takeAlongAxisCases(settings),
  ];
}
