/** Validation loss: the mean cross-entropy (nats/token) of a model over fixed batches of a token source. */
import { add, InvalidArgumentError, mul, noGrad, tensor, tidy, type Tensor } from '@kiln/core';
import type { ForwardOptions, LanguageModel, TokenSource } from '../contracts.js';
import { causalLmLoss } from './causal-lm-loss.js';

/** Which batches to evaluate and how to run the model. */
export interface EvaluateOptions {
  /** Batches to average over (batch indices 0…batches−1 of the source). */
  batches: number;
  /** Windows per batch. */
  batchSize: number;
  /** Tokens per window. */
  contextLength: number;
  /** Seed of the batch positions (fixed, so every evaluation sees the same tokens). */
  seed: number;
  /** How the model runs its forward pass. */
  forwardOptions: ForwardOptions;
  /** Windows per forward pass (default batchSize); smaller uses less memory, same result. */
  microBatchSize?: number;
}

/** Mean loss in nats per token over `batches` batches of `source`, without gradients. */
export async function evaluate(model: LanguageModel, source: TokenSource, options: EvaluateOptions): Promise<number> {
  const { batches, batchSize, contextLength, seed, forwardOptions } = options;
  const microBatchSize = options.microBatchSize ?? batchSize;
  if (!Number.isInteger(batches) || batches < 1) {
    throw new InvalidArgumentError(`evaluate: batches = ${batches} must be a positive integer`, {
      hint: 'Set schedule.evalBatches to 1 or more.',
    });
  }
  if (!Number.isInteger(microBatchSize) || microBatchSize < 1 || batchSize % microBatchSize !== 0) {
    throw new InvalidArgumentError(`evaluate: microBatchSize = ${microBatchSize} must divide batchSize = ${batchSize}`);
  }
  const backend = firstParameter(model).backend;
  const windowTokens = microBatchSize * contextLength;
  const chunks = batchSize / microBatchSize;
  let total: Tensor | undefined;
  try {
    for (let index = 0; index < batches; index++) {
      const { inputs, targets } = source.batch(index, batchSize, contextLength, seed);
      for (let chunk = 0; chunk < chunks; chunk++) {
        const begin = chunk * windowTokens;
        const previous = total;
        total = noGrad(() =>
          tidy(() => {
            const ids = tensor(inputs.subarray(begin, begin + windowTokens), [microBatchSize, contextLength], {
              dtype: 'i32',
              backend,
            });
            const expected = tensor(targets.subarray(begin, begin + windowTokens), [microBatchSize, contextLength], {
              dtype: 'i32',
              backend,
            });
            // Every window has the same token count, so weighting chunk means by their share gives the exact mean.
            const part = mul(causalLmLoss(model, ids, expected, { forwardOptions }), 1 / (chunks * batches));
            return previous ? add(previous, part) : part;
          }),
        );
        previous?.dispose();
      }
    }
    return await total!.item();
  } finally {
    total?.dispose();
  }
}

function firstParameter(model: LanguageModel): Tensor {
  const first = model.parameters.values().next().value;
  if (!first) throw new InvalidArgumentError('evaluate: the model has no parameters');
  return first;
}
