/**
 * The causal language-modelling loss of a model over a micro-batch — the one place training and
 * evaluation compute it. With a small vocabulary it is crossEntropy(forward(ids), targets), the
 * full logits [B, T, V] kept for backward. When B·T·V passes a budget (real vocabularies: 49,152
 * to 128,256 entries), the tokens are split into row chunks whose logits hold at most the budget;
 * each chunk's head + cross-entropy runs under checkpoint(), so backward recomputes one chunk's
 * logits at a time instead of keeping all of them. The chunk losses are sums; their total is
 * divided by the count of non-ignored targets, which is the same mean as the unchunked path.
 */
import {
  add,
  cast,
  checkpoint,
  crossEntropy,
  div,
  InvalidArgumentError,
  maximum,
  notEqual,
  reshape,
  slice,
  sum,
  tidy,
  type Tensor,
} from '@kiln/core';
import type { ForwardOptions, LanguageModel } from '../contracts.js';

/** Logits elements one chunk may hold by default (2²⁵: 128 MiB in f32). */
export const DEFAULT_LOSS_CHUNK_ELEMENTS = 2 ** 25;

/** Target value that counts for nothing (PyTorch's and crossEntropy's default). */
const IGNORE_INDEX = -100;

/** How causalLmLoss runs. */
export interface CausalLmLossOptions {
  /** How the model runs its forward pass. */
  forwardOptions: ForwardOptions;
  /** Most logits elements (tokens × vocab) computed at once; above it the loss is chunked (default DEFAULT_LOSS_CHUNK_ELEMENTS). */
  chunkElements?: number;
}

/** Mean cross-entropy (f32 scalar, nats per non-ignored token) of the model's next-token logits for ids i32 [B, T] against targets i32 [B, T]. */
export function causalLmLoss(model: LanguageModel, ids: Tensor, targets: Tensor, options: CausalLmLossOptions): Tensor {
  const chunkElements = options.chunkElements ?? DEFAULT_LOSS_CHUNK_ELEMENTS;
  if (!(chunkElements >= 1)) {
    throw new InvalidArgumentError(`causalLmLoss: chunkElements = ${chunkElements} must be at least 1`, {
      hint: 'Leave it out for the default budget.',
    });
  }
  const vocab = model.config.vocabSize;
  const tokens = ids.size;
  const rowsPerChunk = Math.max(1, Math.floor(chunkElements / vocab));
  if (tokens * vocab <= chunkElements || model.hiddenStates === undefined || model.headLogits === undefined) {
    return crossEntropy(model.forward(ids, options.forwardOptions), targets);
  }
  const hiddenStates = model.hiddenStates.bind(model);
  const headLogits = model.headLogits.bind(model);
  return tidy(() => {
    const hidden = hiddenStates(ids, options.forwardOptions);
    const width = hidden.shape[hidden.rank - 1];
    const rows = reshape(hidden, [tokens, width]);
    const flatTargets = reshape(targets, [tokens]);
    let total: Tensor | undefined;
    for (let begin = 0; begin < tokens; begin += rowsPerChunk) {
      const count = Math.min(rowsPerChunk, tokens - begin);
      // The targets are an input too, so that the checkpoint keeps them for the recomputation.
      const chunkLoss = checkpoint(
        (chunk: Tensor, chunkTargets: Tensor) =>
          crossEntropy(headLogits(chunk, options.forwardOptions), chunkTargets, {
            reduction: 'sum',
            ignoreIndex: IGNORE_INDEX,
          }),
        [slice(rows, [begin, 0], [count, width]), slice(flatTargets, [begin], [count])],
      );
      total = total === undefined ? chunkLoss : add(total, chunkLoss);
    }
    const counted = cast(sum(notEqual(flatTargets, IGNORE_INDEX)), 'f32');
    return div(total!, maximum(counted, 1));
  });
}
