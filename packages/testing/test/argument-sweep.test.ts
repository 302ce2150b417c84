/**
 * Every public op, every argument, hostile values: undefined, null, strings, objects, NaN,
 * ±Infinity, 1e12, negative and fractional numbers, arrays of junk, unknown option keys. Each call
 * must throw a KilnError whose message starts with the op's name and names the argument — never a
 * TypeError or RangeError from inside a kernel — and leak nothing. A call with only valid
 * arguments must succeed, so a throw is caused by the hostile value. The table must cover every
 * function exported from packages/core/src/ops.
 */
import { describe, expect, it } from 'vitest';
import * as kiln from '@kiln/core';
// The ops module's own export list (core's sources, the module @kiln/core re-exports under these tests' alias).
import * as opsModule from '../../core/src/ops/index.js';
import { KilnError } from '@kiln/core';
import type { Tensor } from '@kiln/core';
import { useReferenceBackend } from './helpers/backend.js';

const { backend } = useReferenceBackend();

/** One argument: how to make a valid value, and the values that must be refused. */
interface Argument {
  /** Name the error message must contain (the parameter's name, or the option key). */
  name: string;
  /** A valid value (fresh tensors are made inside the test's tidy scope). */
  valid: () => unknown;
  /** Values that must be refused, each with the name its message must contain (default: the argument's name). */
  hostile: Array<unknown | Named>;
}

/** A hostile value that is made fresh inside the test's scope (a tensor of the wrong dtype or rank). */
class Make {
  constructor(readonly make: () => unknown) {}
}

/** A hostile value whose message names something more specific (an option key). */
class Named {
  constructor(
    readonly value: unknown,
    readonly name: string,
  ) {}
}

interface OpSpec {
  name: string;
  call: (...args: any[]) => unknown; // eslint-disable-line @typescript-eslint/no-explicit-any
  args: Argument[];
}

const f32 =
  (shape: number[], start = 1) =>
  () =>
    kiln.tensor(
      Array.from({ length: shape.reduce((a, b) => a * b, 1) }, (_, i) => (start + i) / 7),
      shape,
    );
const i32 =
  (values: number[], shape = [values.length]) =>
  () =>
    kiln.tensor(new Int32Array(values), shape);
const constant = (value: unknown) => () => value;

const NOT_A_TENSOR = [undefined, null, 'x', 3, NaN, Infinity, {}, [1, 2], true, 10n, () => 1];
const NOT_A_TENSOR_OR_NUMBER = [undefined, null, 'x', {}, [1], true, 10n];
const NOT_AN_AXIS = [null, 'x', '1', 1.5, NaN, Infinity, -Infinity, 1e12, -1e12, [0], {}, true];
const NOT_AXES = [null, 'x', 1.5, NaN, Infinity, 1e12, -1e12, ['x'], [0.5], [NaN], [null], {}, true, [0, 0]];
const NOT_A_SHAPE = [undefined, null, 'x', 3, {}, [-1], [1.5], [NaN], [Infinity], ['x'], [null], [[2]], [1e12, 1e12]];
const NOT_A_BOOLEAN = [null, 'x', 1, 0, {}, NaN];
const NOT_OPTIONS = [null, 'x', 3, [], true, new Named({ unknownKey: 1 }, 'unknownKey')];

/** Option-key hostiles: each object names its bad key. */
function optionHostiles(...entries: Array<[string, unknown[]]>): Named[] {
  return entries.flatMap(([key, values]) => values.map((value) => new Named({ [key]: value }, key)));
}

const tensorArg = (name: string, valid: () => unknown, extra: unknown[] = []): Argument => ({
  name,
  valid,
  hostile: [...NOT_A_TENSOR, ...extra],
});
const operand = (name: string, valid: () => unknown): Argument => ({ name, valid, hostile: NOT_A_TENSOR_OR_NUMBER });
const axisArg = (name: string, valid: unknown, required = false): Argument => ({
  name,
  valid: constant(valid),
  hostile: required ? [undefined, ...NOT_AN_AXIS] : NOT_AN_AXIS,
});
const axesArg = (valid: unknown): Argument => ({ name: 'axes', valid: constant(valid), hostile: NOT_AXES });
const keepDimsArg: Argument = { name: 'keepDims', valid: constant(false), hostile: NOT_A_BOOLEAN };
const shapeArg = (valid: number[]): Argument => ({ name: 'shape', valid: constant(valid), hostile: NOT_A_SHAPE });
const creationOptions = (valid: unknown = {}): Argument => ({
  name: 'options',
  valid: constant(valid),
  hostile: [...NOT_OPTIONS, ...optionHostiles(['dtype', ['f64', 3, null]], ['backend', [3, 'cpu', {}]])],
});
const floatIndices = new Make(() => kiln.tensor([0, 1]));

const UNARY = [
  'neg',
  'abs',
  'sign',
  'exp',
  'log',
  'sqrt',
  'rsqrt',
  'reciprocal',
  'square',
  'tanh',
  'sigmoid',
  'relu',
  'silu',
  'erf',
] as const;
// Every binary kernel op is a public op of the same name.
const BINARY = kiln.BINARY_OPS;
const REDUCE = ['sum', 'mean', 'max', 'min'] as const;

const VALID_ADAMW = { lr: 0.1, beta1: 0.9, beta2: 0.99, eps: 1e-8, weightDecay: 0, step: 1 };
const VALID_ADAMW_MULTI = {
  lr: 0.1,
  beta1: 0.9,
  beta2: 0.99,
  eps: 1e-8,
  step: 1,
  weightDecays: [0.1],
  gradientScale: 0.5,
};
const NOT_A_TENSOR_LIST = [undefined, null, 'x', 3, {}, ['x'], [3], [null]];
const tensorList = (name: string, minimum: 0 | 1): Argument => ({
  name,
  valid: () => [f32([3])()],
  hostile: [
    ...NOT_A_TENSOR_LIST,
    ...(minimum === 1 ? [[]] : []),
    new Make(() => [kiln.tensor(new Int32Array([1, 2, 3]), [3])]),
  ],
});

const SPECS: OpSpec[] = [
  {
    name: 'tensor',
    call: kiln.tensor,
    args: [
      {
        name: 'values',
        valid: constant([1, 2]),
        hostile: [
          undefined,
          null,
          'abc',
          {},
          true,
          10n,
          new BigInt64Array(2),
          new DataView(new ArrayBuffer(4)),
          [1, 'x'],
          [null, 1],
          [[1], [{}]],
          [[1, 2], [3]],
          [1, [2]],
          [[1], 2],
        ],
      },
      {
        name: 'shape',
        valid: constant([2]),
        hostile: [null, 'x', 'i32', 3, [-1], [1.5], ['x'], [NaN], [1e12, 1e12], [3]],
      },
      creationOptions(),
    ],
  },
  {
    name: 'full',
    call: kiln.full,
    args: [
      shapeArg([2]),
      { name: 'value', valid: constant(1), hostile: [undefined, null, 'x', {}, [1], true, 10n] },
      creationOptions(),
    ],
  },
  { name: 'zeros', call: kiln.zeros, args: [shapeArg([2]), creationOptions()] },
  { name: 'ones', call: kiln.ones, args: [shapeArg([2]), creationOptions()] },
  { name: 'zerosLike', call: kiln.zerosLike, args: [tensorArg('like', f32([2]))] },
  { name: 'onesLike', call: kiln.onesLike, args: [tensorArg('like', f32([2]))] },
  {
    name: 'scalar',
    call: kiln.scalar,
    args: [{ name: 'value', valid: constant(1), hostile: [undefined, null, 'x', {}, [1], true] }, creationOptions()],
  },
  {
    name: 'arange',
    call: kiln.arange,
    args: [
      {
        name: 'start',
        valid: constant(0),
        hostile: [undefined, null, 'x', {}, NaN, Infinity, -Infinity, 1.5, -1e12, 3e10],
      },
      { name: 'end', valid: constant(4), hostile: [undefined, null, 'x', {}, NaN, Infinity, -Infinity, 2.5, 1e12] },
      creationOptions(),
    ],
  },
  ...(['randomUniform', 'randomNormal'] as const).map(
    (name): OpSpec => ({
      name,
      call: kiln[name],
      args: [
        shapeArg([2]),
        {
          name: 'options',
          valid: constant({ seed: 1 }),
          hostile: [
            undefined,
            null,
            'x',
            3,
            [],
            new Named({}, 'seed'),
            ...optionHostiles(
              ['seed', [-1, 1.5, 'x', NaN, 2 ** 60]],
              ['offset', [-1, 0.5, 'x']],
              ['dtype', ['i32', 'f64']],
              ['backend', [3]],
              ...(name === 'randomUniform'
                ? ([
                    ['low', [NaN, 'x', Infinity]],
                    ['high', [NaN, null]],
                  ] as Array<[string, unknown[]]>)
                : ([
                    ['mean', [NaN, 'x']],
                    ['std', [Infinity, {}]],
                  ] as Array<[string, unknown[]]>)),
            ).map((named) => new Named({ seed: 1, ...(named.value as object) }, named.name)),
          ],
        },
      ],
    }),
  ),
  ...UNARY.map(
    (name): OpSpec => ({ name, call: kiln[name] as (x: Tensor) => Tensor, args: [tensorArg('x', f32([2, 3]))] }),
  ),
  {
    name: 'gelu',
    call: kiln.gelu,
    args: [
      tensorArg('x', f32([3])),
      {
        name: 'options',
        valid: constant({ approximate: 'none' }),
        hostile: [...NOT_OPTIONS, ...optionHostiles(['approximate', ['exact', 1, null, 'erf']])],
      },
    ],
  },
  ...BINARY.map(
    (name): OpSpec => ({ name, call: kiln[name], args: [operand('a', f32([2, 3])), operand('b', f32([3]))] }),
  ),
  {
    name: 'where',
    call: kiln.where,
    args: [tensorArg('condition', f32([3])), operand('a', f32([3])), operand('b', constant(0))],
  },
  {
    name: 'clamp',
    call: kiln.clamp,
    args: [
      tensorArg('x', f32([2, 3])),
      { name: 'min', valid: constant(0), hostile: ['x', {}, [1], true, 10n] },
      { name: 'max', valid: f32([3]), hostile: ['x', {}, [1], true, 10n] },
    ],
  },
  {
    name: 'unaryKernel',
    call: kiln.unaryKernel,
    args: [
      { name: 'op', valid: constant('exp'), hostile: [undefined, null, 'erf', 'nope', 3, {}] },
      tensorArg('x', f32([2])),
    ],
  },
  {
    name: 'binaryKernel',
    call: kiln.binaryKernel,
    args: [
      { name: 'op', valid: constant('add'), hostile: [undefined, null, 'plus', 3, {}] },
      tensorArg('a', f32([2])),
      tensorArg('b', f32([2])),
    ],
  },
  {
    name: 'cast',
    call: kiln.cast,
    args: [
      tensorArg('x', f32([2])),
      { name: 'dtype', valid: constant('f16'), hostile: [undefined, null, 'f64', 'F32', 3, {}] },
    ],
  },
  ...REDUCE.map(
    (name): OpSpec => ({ name, call: kiln[name], args: [tensorArg('x', f32([2, 3])), axesArg(1), keepDimsArg] }),
  ),
  ...(['argmax', 'argmin'] as const).map(
    (name): OpSpec => ({
      name,
      call: kiln[name],
      args: [tensorArg('x', f32([2, 3])), axisArg('axis', -1), keepDimsArg],
    }),
  ),
  {
    name: 'sumToShape',
    call: kiln.sumToShape,
    args: [
      tensorArg('gradient', f32([2, 3])),
      { name: 'shape', valid: constant([1, 3]), hostile: [...NOT_A_SHAPE, [2], [4, 3], [1, 1, 2, 3]] },
    ],
  },
  {
    name: 'cumsum',
    call: kiln.cumsum,
    args: [
      tensorArg('x', f32([2, 3])),
      axisArg('axis', 1, true),
      {
        name: 'options',
        valid: constant({ exclusive: true }),
        hostile: [...NOT_OPTIONS, ...optionHostiles(['exclusive', ['yes', 1, null]], ['reverse', [0, 'no']])],
      },
    ],
  },
  {
    name: 'matmul',
    call: kiln.matmul,
    args: [
      tensorArg('a', f32([2, 3])),
      tensorArg('b', f32([3, 2])),
      {
        name: 'options',
        valid: constant({ transposeB: false }),
        hostile: [
          ...NOT_OPTIONS,
          ...optionHostiles(['transposeA', ['yes', 1, null]], ['transposeB', [0]], ['transpose', [true]]),
        ],
      },
    ],
  },
  {
    name: 'reshape',
    call: kiln.reshape,
    args: [
      tensorArg('x', f32([2, 3])),
      {
        name: 'shape',
        valid: constant([3, -1]),
        hostile: [
          undefined,
          null,
          'x',
          3,
          {},
          [-2, 3],
          [1.5, 4],
          [NaN],
          [Infinity],
          ['x'],
          [null],
          [-1, -1],
          [1e12, 1e12],
          [4],
        ],
      },
    ],
  },
  { name: 'unsqueeze', call: kiln.unsqueeze, args: [tensorArg('x', f32([2, 3])), axisArg('axis', 0, true)] },
  { name: 'squeeze', call: kiln.squeeze, args: [tensorArg('x', f32([1, 3])), axesArg(0)] },
  {
    name: 'permute',
    call: kiln.permute,
    args: [
      tensorArg('x', f32([2, 3])),
      {
        name: 'axes',
        valid: constant([1, 0]),
        hostile: [undefined, null, 'x', 1, {}, [0, 0], [0], [0, 1, 2], ['x', 0], [0.5, 1], [NaN, 0]],
      },
    ],
  },
  {
    name: 'transpose',
    call: kiln.transpose,
    args: [tensorArg('x', f32([2, 3])), axisArg('axis0', 0), axisArg('axis1', 1)],
  },
  {
    name: 'slice',
    call: kiln.slice,
    args: [
      tensorArg('x', f32([2, 3])),
      {
        name: 'begin',
        valid: constant([0, 1]),
        hostile: [null, 'x', 3, {}, [0.5, 0], [NaN, 0], ['x', 0], [0], [0, 1e12], [-1, 0], [Infinity, 0]],
      },
      { name: 'size', valid: constant([2, -1]), hostile: [null, 'x', {}, [1.5, 1], [-2, 1], [1], [1e12, 1], [NaN, 1]] },
    ],
  },
  {
    name: 'slice',
    call: (x: Tensor, ranges: unknown) => kiln.slice(x, ranges as []),
    args: [
      tensorArg('x', f32([2, 3])),
      {
        name: 'ranges',
        valid: constant([{ start: -1, step: -1 }]),
        hostile: [
          undefined,
          null,
          'x',
          {},
          [{ start: 'x' }],
          [{ step: 0 }],
          [{ step: 1.5 }],
          [{ step: Infinity }],
          [{ start: NaN }],
          [{ end: 0.5 }],
          [{ foo: 1 }],
          [{}, {}, {}],
          [{}, 3],
          [3, {}],
          ['x'],
          [true],
        ],
      },
    ],
  },
  {
    name: 'concat',
    call: kiln.concat,
    args: [
      {
        name: 'tensors',
        valid: () => [f32([2])(), f32([3])()],
        hostile: [undefined, null, 'x', 3, {}, [], [1], [null], ['x', 'y']],
      },
      axisArg('axis', 0, true),
    ],
  },
  {
    name: 'split',
    call: kiln.split,
    args: [
      tensorArg('x', f32([6, 2])),
      {
        name: 'sizeOrSizes',
        valid: constant(4),
        hostile: [undefined, null, 'x', 0, -1, 1.5, NaN, Infinity, [1], [1.5, 4.5], [-1, 7], ['x'], {}],
      },
      axisArg('axis', 0),
    ],
  },
  {
    name: 'chunk',
    call: kiln.chunk,
    args: [
      tensorArg('x', f32([6, 2])),
      { name: 'count', valid: constant(3), hostile: [undefined, null, 'x', 0, -1, 1.5, NaN, Infinity, 4, [2], {}] },
      axisArg('axis', 0),
    ],
  },
  {
    name: 'expand',
    call: kiln.expand,
    args: [
      tensorArg('x', f32([1, 3])),
      { name: 'shape', valid: constant([2, 3]), hostile: [...NOT_A_SHAPE, [2, 4], [3]] },
    ],
  },
  { name: 'clone', call: kiln.clone, args: [tensorArg('x', f32([2]))] },
  {
    name: 'writeSlice',
    call: kiln.writeSlice,
    args: [
      tensorArg('target', () => kiln.zeros([3, 2]), [
        new Make(() => kiln.zeros([3, 2]).requireGrad()),
        new Make(() => kiln.zeros([6])),
      ]),
      tensorArg('source', f32([1, 2]), [
        new Make(() => kiln.zeros([1, 2], { dtype: 'bf16' })),
        new Make(f32([1, 1, 2])),
      ]),
      {
        name: 'begin',
        valid: constant([1, 0]),
        hostile: [
          undefined,
          null,
          'x',
          3,
          {},
          [0.5, 0],
          [NaN, 0],
          ['x', 0],
          [0],
          [0, 1e12],
          [-1, 0],
          [Infinity, 0],
          [3, 0],
        ],
      },
    ],
  },
  {
    name: 'gather',
    call: kiln.gather,
    args: [tensorArg('x', f32([3, 2])), tensorArg('indices', i32([0, 2]), [floatIndices]), axisArg('axis', 0)],
  },
  {
    name: 'embedding',
    call: kiln.embedding,
    args: [tensorArg('table', f32([3, 2]), [new Make(f32([6]))]), tensorArg('ids', i32([0, 2]), [floatIndices])],
  },
  {
    name: 'takeAlongAxis',
    call: kiln.takeAlongAxis,
    args: [
      tensorArg('x', f32([2, 3])),
      tensorArg('indices', i32([0, 2, 1, 1], [2, 2]), [
        new Make(() => kiln.tensor([0, 1, 1, 0], [2, 2])),
        new Make(i32([0, 1])),
      ]),
      axisArg('axis', 1, true),
    ],
  },
  ...(['softmax', 'logSoftmax'] as const).map(
    (name): OpSpec => ({ name, call: kiln[name], args: [tensorArg('x', f32([2, 3])), axisArg('axis', -1)] }),
  ),
  {
    name: 'rmsNorm',
    call: kiln.rmsNorm,
    args: [
      tensorArg('x', f32([2, 3])),
      tensorArg('weight', f32([3])),
      { name: 'eps', valid: constant(1e-5), hostile: [null, 'x', {}, NaN, Infinity, -1, true] },
    ],
  },
  {
    name: 'layerNorm',
    call: kiln.layerNorm,
    args: [
      tensorArg('x', f32([2, 3])),
      tensorArg('weight', f32([3])),
      tensorArg('bias', f32([3])),
      { name: 'eps', valid: constant(1e-5), hostile: [null, 'x', {}, NaN, Infinity, -1, true] },
    ],
  },
  {
    name: 'rope',
    call: kiln.rope,
    args: [
      tensorArg('x', f32([1, 1, 2, 4])),
      {
        name: 'options',
        valid: constant({ offset: 2 }),
        hostile: [
          ...NOT_OPTIONS,
          ...optionHostiles(['offset', [-1, 1.5, 'x', NaN]], ['theta', [0, -1, NaN, Infinity, 'x']]),
        ],
      },
    ],
  },
  { name: 'swiglu', call: kiln.swiglu, args: [tensorArg('gate', f32([2, 3])), tensorArg('up', f32([2, 3]))] },
  {
    name: 'attention',
    call: kiln.attention,
    args: [
      tensorArg('q', f32([1, 2, 3, 4])),
      tensorArg('k', f32([1, 2, 3, 4])),
      tensorArg('v', f32([1, 2, 3, 4])),
      {
        name: 'options',
        valid: constant({ causal: true }),
        hostile: [
          ...NOT_OPTIONS,
          ...optionHostiles(['causal', ['yes', 1]], ['scale', [NaN, 'x', Infinity]], ['mask', [3, 'x', {}]]),
        ],
      },
    ],
  },
  {
    name: 'crossEntropy',
    call: kiln.crossEntropy,
    args: [
      tensorArg('logits', f32([2, 3])),
      tensorArg('targets', i32([0, 2]), [floatIndices]),
      {
        name: 'options',
        valid: constant({ reduction: 'sum' }),
        hostile: [
          ...NOT_OPTIONS,
          ...optionHostiles(['ignoreIndex', [1.5, 3e10, 'x', NaN]], ['reduction', ['avg', 1, null]]),
        ],
      },
    ],
  },
  {
    name: 'adamwUpdate',
    call: kiln.adamwUpdate,
    args: [
      tensorArg('param', f32([3])),
      tensorArg('grad', f32([3])),
      tensorArg('m', f32([3])),
      tensorArg('v', f32([3])),
      {
        name: 'params',
        valid: constant(VALID_ADAMW),
        hostile: [
          undefined,
          null,
          'x',
          3,
          new Named({}, 'lr'),
          ...optionHostiles(
            ['lr', ['x', NaN, -1, Infinity]],
            ['beta1', [1, -0.1]],
            ['beta2', [NaN]],
            ['eps', [0, -1]],
            ['weightDecay', [-1]],
            ['step', [0, 1.5, 'x']],
            ['unknown', [1]],
          ).map((named) => new Named({ ...VALID_ADAMW, ...(named.value as object) }, named.name)),
        ],
      },
    ],
  },
  { name: 'sumOfSquaresMulti', call: kiln.sumOfSquaresMulti, args: [tensorList('tensors', 1)] },
  {
    name: 'adamwUpdateMulti',
    call: kiln.adamwUpdateMulti,
    args: [
      tensorList('params', 0),
      tensorList('grads', 0),
      tensorList('ms', 0),
      tensorList('vs', 0),
      {
        name: 'options',
        valid: constant(VALID_ADAMW_MULTI),
        hostile: [
          undefined,
          null,
          'x',
          3,
          new Named({}, 'lr'),
          ...optionHostiles(
            ['lr', ['x', NaN, -1]],
            ['beta1', [1]],
            ['eps', [0]],
            ['step', [0, 1.5]],
            ['weightDecays', ['x', [], [-1], [NaN], [0.1, 0.1]]],
            ['gradientScale', ['x', NaN, Infinity, {}]],
            ['skipIfNonFinite', ['x', 3, {}]],
            ['deviceScalars', ['x', 3, {}]],
            ['unknown', [1]],
          ).map((named) => new Named({ ...VALID_ADAMW_MULTI, ...(named.value as object) }, named.name)),
        ],
      },
    ],
  },
  {
    name: 'adamwDeviceScalars',
    call: kiln.adamwDeviceScalars,
    args: [
      {
        name: 'inputs',
        valid: constant({ lr: 1e-3, beta1: 0.9, beta2: 0.999, step: 1, weightDecays: [0.1] }),
        hostile: [
          undefined,
          null,
          'x',
          3,
          new Named({}, 'lr'),
          ...optionHostiles(
            ['lr', ['x', NaN, -1]],
            ['beta1', [1]],
            ['beta2', [NaN]],
            ['step', [0, 1.5]],
            ['weightDecays', ['x', [-1], [NaN]]],
            ['unknown', [1]],
          ).map(
            (named) =>
              new Named(
                { lr: 1e-3, beta1: 0.9, beta2: 0.999, step: 1, weightDecays: [0.1], ...(named.value as object) },
                named.name,
              ),
          ),
        ],
      },
    ],
  },
];

const WORD = (name: string) => new RegExp(`(^|[^\\w])${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}([^\\w]|$)`);

function show(value: unknown): string {
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'function') return 'a function';
  if (value instanceof Make) return 'a tensor of the wrong dtype or rank';
  if (ArrayBuffer.isView(value)) return value.constructor.name;
  try {
    return (
      JSON.stringify(value, (_key, item) =>
        typeof item === 'number' && !Number.isFinite(item) ? String(item) : item,
      ) ?? String(value)
    );
  } catch {
    return String(value);
  }
}

describe('every public op validates every argument', () => {
  it('covers every function exported from packages/core/src/ops', () => {
    const exported = Object.entries(opsModule)
      .filter(([, value]) => typeof value === 'function')
      .map(([name]) => name);
    const covered = new Set(SPECS.map((spec) => spec.name));
    expect(exported.filter((name) => !covered.has(name))).toEqual([]);
  });

  for (const spec of SPECS) {
    describe(spec.name, () => {
      it('succeeds with only valid arguments', () => {
        expect(() => kiln.tidy(() => void spec.call(...spec.args.map((argument) => argument.valid())))).not.toThrow();
      });

      spec.args.forEach((argument, index) => {
        const hostiles = argument.hostile.map((entry) =>
          entry instanceof Named ? entry : new Named(entry, argument.name),
        );
        it(`refuses bad ${argument.name}: ${hostiles.map((entry) => show(entry.value)).join(' ')}`, () => {
          const problems: string[] = [];
          for (const { value, name } of hostiles) {
            let thrown: unknown;
            kiln.tidy(() => {
              const args = spec.args.map((other) => other.valid());
              args[index] = value instanceof Make ? value.make() : value;
              try {
                spec.call(...args);
              } catch (error) {
                thrown = error;
              }
            });
            const label = `${spec.name} with ${argument.name} = ${show(value)}`;
            if (thrown === undefined) problems.push(`${label}: returned normally`);
            else if (!KilnError.isInstance(thrown))
              problems.push(`${label}: threw ${String(thrown)} (not a KilnError)`);
            else if (!thrown.message.startsWith(`${spec.name}:`))
              problems.push(`${label}: message does not start with '${spec.name}:': ${thrown.message}`);
            else if (!WORD(name).test(thrown.message))
              problems.push(`${label}: message does not name '${name}': ${thrown.message}`);
          }
          expect(problems).toEqual([]);
        });
      });
    });
  }
});

describe('backward validates its arguments', () => {
  it('refuses an output or gradOutput that is not a live tensor', () => {
    for (const bad of [undefined, null, 'x', 3, {}]) {
      expect(() => kiln.backward(bad as Tensor)).toThrow(/backward: output must be a Tensor/);
    }
    using w = kiln.ones([2]).requireGrad();
    using y = kiln.mul(w, 2);
    for (const bad of [null, 'x', 3, {}]) {
      expect(() => kiln.backward(y, bad as Tensor)).toThrow(/backward: gradOutput must be a Tensor/);
    }
  });
});

describe('engine helpers validate their arguments', () => {
  it('toBackend and memory refuse what is not a tensor or a backend', async () => {
    await expect(kiln.toBackend('x' as never, backend())).rejects.toThrow(/toBackend: tensor must be a Tensor/);
    using x = kiln.ones([2]);
    await expect(kiln.toBackend(x, {} as never)).rejects.toThrow(/toBackend: backend must be a KernelBackend/);
    expect(() => kiln.memory(3 as never)).toThrow(/memory: backend must be a KernelBackend/);
  });
});
