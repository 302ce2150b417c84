/**
 * crossEntropy through core's public op when no row counts — every target is the ignore index:
 * reduction 'mean' gives NaN (the mean of nothing, as PyTorch gives) and a zero gradient (no row
 * took part), 'sum' gives 0, 'none' zeros (docs/kernel-semantics.md). Runs the backend's own
 * crossEntropy kernels, or core's composition where it has none, so every backend agrees.
 */
import type { DType } from '@kiln/core';
import type { CaseSettings } from '../case-builder.js';
import { ConformanceSkipSignal, KilnConformanceError } from '../conformance-error.js';
import type { ConformanceCase } from '../types.js';
import { opCase } from './op-cases.js';

const ROWS = 4;
const CLASSES = 7;

function everyTargetIgnored(settings: CaseSettings, dtype: DType, ignoreIndex: number | undefined): ConformanceCase {
  const label = ignoreIndex === undefined ? 'default ignoreIndex' : `ignoreIndex=${ignoreIndex}`;
  return opCase(
    settings,
    'crossEntropy',
    dtype,
    `crossEntropy every target ignored,${label},rows=${ROWS},classes=${CLASSES}`,
    async (bench) => {
      const { ops } = bench;
      if (typeof ops.crossEntropy !== 'function')
        throw new ConformanceSkipSignal('core ops not available (crossEntropy missing from @kiln/core)');
      const logits = await bench.random([ROWS, CLASSES], dtype, -3, 3);
      const targets = (await bench.input([ROWS], 'i32', new Array<number>(ROWS).fill(ignoreIndex ?? -100))).tensor;
      const options = ignoreIndex === undefined ? {} : { ignoreIndex };
      await bench.expect(
        bench.keep(ops.crossEntropy(logits.tensor, targets, options)),
        { values: [Number.NaN], shape: [] },
        'mean',
      );
      await bench.expect(
        bench.keep(ops.crossEntropy(logits.tensor, targets, { ...options, reduction: 'sum' })),
        { values: [0], shape: [] },
        'sum',
      );
      await bench.expect(
        bench.keep(ops.crossEntropy(logits.tensor, targets, { ...options, reduction: 'none' })),
        { values: new Float64Array(ROWS), shape: [ROWS] },
        'none',
      );
      const { value, grads } = ops.valueAndGrad((x: typeof logits.tensor) => ops.crossEntropy(x, targets, options))(
        logits.tensor,
      );
      bench.keep([value, ...grads]);
      const gradient = Float64Array.from(await grads[0].data());
      const nonZero = gradient.findIndex((entry) => entry !== 0);
      if (nonZero >= 0) {
        throw new KilnConformanceError(
          bench.id,
          `the gradient of the 'mean' loss with every target ignored must be 0, got ${gradient[nonZero]} at flat ${nonZero}`,
          undefined,
          'No row takes part in the mean, so no logit gets a gradient (only the loss value is NaN).',
        );
      }
    },
  );
}

/** The every-target-ignored crossEntropy cases. */
export function crossEntropyOpCases(settings: CaseSettings): ConformanceCase[] {
  return [
    everyTargetIgnored(settings, 'f32', undefined),
    everyTargetIgnored(settings, 'f32', 3),
    everyTargetIgnored(settings, 'bf16', -1),
  ];
}
