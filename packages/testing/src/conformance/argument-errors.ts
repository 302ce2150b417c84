/**
 * Argument errors: bad calls through core's public ops on the backend under test must throw the
 * right typed KilnError, whose message names the op and the offending shapes/dtypes, and leak
 * nothing. Out-of-range indices on a backend without downloadSync cannot be seen on the host at
 * the call: there the call returns and the next read (`await out.data()`) must reject instead —
 * core's device-side check, or the backend's own in-kernel check when it declares
 * `capabilities.checksIndices`. Core's ops are loaded lazily, so the rest of the kit works
 * without them; when they are missing these cases report skipped.
 */
import type { KernelName } from '@kiln/core';
import type { KilnErrorCode } from '@kiln/core';
import { KilnError } from '@kiln/core';
import type * as Core from '@kiln/core';
import { defineCase, type CaseSettings } from './case-builder.js';
import { ConformanceSkipSignal, KilnConformanceError } from './conformance-error.js';
import { checksIndicesItself } from './deferred-index-errors.js';
import type { ConformanceCase } from './types.js';

type Tensor = Core.Tensor;

/** One bad call and what it must throw. */
interface ErrorSpec {
  /** Case id suffix. */
  name: string;
  /** The kernel family the op belongs to. */
  kernel: KernelName;
  /** Expected KilnError code. */
  code: KilnErrorCode;
  /** Words (strings) and shapes (number arrays) the message must mention. */
  mentions: (string | number[])[];
  /** Makes the bad call; `make` creates tensors that are disposed after the case. A returned tensor is read (deferred errors). */
  call(ops: typeof Core, make: (values: number[], shape: number[], dtype?: Core.DType) => Tensor): Tensor | void;
  /** True when the error may surface at the next read instead of at the call (index checks on devices without downloadSync). */
  deferrable?: boolean;
}

const SPECS: ErrorSpec[] = [
  {
    name: 'matmul inner-dim mismatch',
    kernel: 'matmul',
    code: 'SHAPE_MISMATCH',
    mentions: ['matmul', [2, 3], [4, 5]],
    call: (ops, make) => ops.matmul(make(range(6), [2, 3]), make(range(20), [4, 5])),
  },
  {
    name: 'add broadcast mismatch',
    kernel: 'binary',
    code: 'SHAPE_MISMATCH',
    mentions: ['add', [2, 3], [4, 3]],
    call: (ops, make) => ops.add(make(range(6), [2, 3]), make(range(12), [4, 3])),
  },
  {
    name: 'reshape size mismatch',
    kernel: 'copy',
    code: 'SHAPE_MISMATCH',
    mentions: ['reshape', [2, 3], [4, 2]],
    call: (ops, make) => ops.reshape(make(range(6), [2, 3]), [4, 2]),
  },
  {
    name: 'softmax axis out of range',
    kernel: 'softmax',
    code: 'INVALID_ARGUMENT',
    mentions: ['softmax', 'axis', '2'],
    call: (ops, make) => ops.softmax(make(range(6), [2, 3]), 2),
  },
  {
    name: 'attention head counts not divisible',
    kernel: 'attention',
    code: 'SHAPE_MISMATCH',
    mentions: ['attention', '3', '2'],
    call: (ops, make) =>
      ops.attention(make(range(24), [1, 3, 2, 4]), make(range(16), [1, 2, 2, 4]), make(range(16), [1, 2, 2, 4])),
  },
  {
    name: 'crossEntropy targets not i32',
    kernel: 'crossEntropy',
    code: 'DTYPE_MISMATCH',
    mentions: ['crossEntropy', 'i32', 'f32'],
    call: (ops, make) => ops.crossEntropy(make(range(6), [2, 3]), make([0, 1], [2], 'f32')),
  },
  {
    name: 'gather index out of range',
    kernel: 'gather',
    code: 'INVALID_ARGUMENT',
    mentions: ['gather', '5', [4, 3]],
    deferrable: true,
    call: (ops, make) => ops.gather(make(range(12), [4, 3]), make([0, 5], [2], 'i32')),
  },
  {
    name: 'embedding id out of range',
    kernel: 'gather',
    code: 'INVALID_ARGUMENT',
    mentions: ['embedding', '5', 'position 1', [2, 3]],
    deferrable: true,
    call: (ops, make) => ops.embedding(make(range(6), [2, 3]), make([1, 5, 0], [3], 'i32')),
  },
  {
    name: 'crossEntropy target out of range',
    kernel: 'crossEntropy',
    code: 'INVALID_ARGUMENT',
    mentions: ['crossEntropy', '-5'],
    deferrable: true,
    call: (ops, make) => ops.crossEntropy(make(range(6), [2, 3]), make([1, -5], [2], 'i32')),
  },
  {
    name: 'cast to unknown dtype',
    kernel: 'cast',
    code: 'DTYPE_MISMATCH',
    mentions: ['cast', 'f64'],
    call: (ops, make) => ops.cast(make(range(6), [2, 3]), 'f64' as Core.DType),
  },
  {
    name: 'concat rank mismatch',
    kernel: 'copy',
    code: 'SHAPE_MISMATCH',
    mentions: ['concat', [2, 3], [2, 3, 1]],
    call: (ops, make) => ops.concat([make(range(6), [2, 3]), make(range(6), [2, 3, 1])], 0),
  },
  {
    name: 'use after dispose',
    kernel: 'binary',
    code: 'DISPOSED_TENSOR',
    mentions: ['disposed', [2, 3]],
    call: (ops, make) => {
      const x = make(range(6), [2, 3]);
      x.dispose();
      ops.add(x, make(range(6), [2, 3]));
    },
  },
];

function range(count: number): number[] {
  return Array.from({ length: count }, (_, i) => i);
}

/** True when `message` shows `shape` as [2, 3], [2,3], 2×3 or (2, 3). */
function mentionsShape(message: string, shape: number[]): boolean {
  const dims = shape.join('\\s*[,×x]\\s*');
  return new RegExp(`[\\[(]\\s*${dims}\\s*[\\])]|\\b${shape.join('×')}\\b`).test(message);
}

async function loadOps(): Promise<typeof Core> {
  const ops = (await import('@kiln/core')) as Partial<typeof Core>;
  const needed = [
    'tensor',
    'matmul',
    'add',
    'reshape',
    'softmax',
    'attention',
    'crossEntropy',
    'gather',
    'embedding',
    'cast',
    'concat',
  ] as const;
  const missing = needed.filter((name) => typeof ops[name] !== 'function');
  if (missing.length > 0)
    throw new ConformanceSkipSignal(`core ops not available yet (${missing.join(', ')} missing from @kiln/core)`);
  return ops as typeof Core;
}

function errorCase(settings: CaseSettings, spec: ErrorSpec): ConformanceCase {
  const id = `${spec.kernel} f32 [argument error: ${spec.name}]`;
  return defineCase(settings, id, spec.kernel, 'f32', async (context) => {
    const ops = await loadOps();
    const created: Tensor[] = [];
    const make = (values: number[], shape: number[], dtype: Core.DType = 'f32') => {
      const made = ops.tensor(values, shape, { dtype, backend: context.backend });
      created.push(made);
      return made;
    };
    let thrown: unknown;
    let returned: Tensor | void = undefined;
    try {
      returned = spec.call(ops, make);
      // On a device without synchronous reads the index check is deferred to the next read.
      if (returned !== undefined && spec.deferrable === true && typeof context.backend.downloadSync !== 'function')
        await returned.data();
    } catch (error) {
      thrown = error;
    } finally {
      for (const made of created) if (!made.isDisposed) made.dispose();
      if (returned !== undefined && !returned.isDisposed) returned.dispose();
    }
    if (thrown === undefined) {
      const when =
        spec.deferrable === true && typeof context.backend.downloadSync !== 'function'
          ? 'neither the call nor the next read (await out.data()) threw'
          : 'the call returned normally';
      throw new KilnConformanceError(
        id,
        `expected a ${spec.code} KilnError, but ${when}`,
        undefined,
        spec.deferrable === true
          ? 'Leave index checks to core (do not set capabilities.checksIndices), or make the next download() reject as docs/kernel-semantics.md says.'
          : undefined,
      );
    }
    if (!KilnError.isInstance(thrown) || thrown.code !== spec.code) {
      const got = KilnError.isInstance(thrown) ? `${thrown.name} (${thrown.code})` : String(thrown);
      throw new KilnConformanceError(
        id,
        `expected a KilnError with code ${spec.code}, got ${got}`,
        undefined,
        'Validate arguments in the op before dispatching to the backend.',
      );
    }
    const message = thrown.message;
    // A backend that checks indices in its kernels names its kernel, not core's op and shapes.
    const mentions =
      spec.deferrable === true && checksIndicesItself(settings)
        ? spec.mentions.filter((item) => item === '5' || item === '-5')
        : spec.mentions;
    const absent = mentions.filter((item) =>
      typeof item === 'string' ? !message.includes(item) : !mentionsShape(message, item),
    );
    if (absent.length > 0) {
      const list = absent
        .map((item) => (typeof item === 'string' ? `'${item}'` : `shape [${item.join(', ')}]`))
        .join(', ');
      throw new KilnConformanceError(
        id,
        `the error message does not mention ${list}: "${message}"`,
        undefined,
        'Name the op and the offending shapes/dtypes in the message.',
      );
    }
  });
}

/** Every argument-error case. */
export function argumentErrorCases(settings: CaseSettings): ConformanceCase[] {
  return SPECS.map((spec) => errorCase(settings, spec));
}
