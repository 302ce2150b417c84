/**
 * Activation checkpointing: run a block without keeping its activations, and recompute them
 * during backward. Memory per block drops to its inputs; compute grows by one extra forward.
 */
import { tidy } from '../tensor/scope.js';
import type { Tensor } from '../tensor/tensor.js';
import { backward } from './backward.js';
import { noGrad, withGradEnabled } from './grad-node.js';
import { needsGrad, recordOp } from './record.js';

/**
 * fn(...inputs) computed without recording its inside; in backward, fn is run again with
 * recording on and differentiated. Parameters that fn closes over receive their gradients during
 * that recomputation (into their `.grad`), so fn must be deterministic.
 */
export function checkpoint(fn: (...inputs: Tensor[]) => Tensor, inputs: readonly Tensor[]): Tensor {
  if (!needsGrad(inputs)) return fn(...inputs);
  const output = noGrad(() => tidy(() => fn(...inputs)));
  recordOp('checkpoint', inputs, output, inputs, (gradOutput, saved, needed) => {
    const leaves = saved.map((input, index) => input.alias().requireGrad(needed[index]));
    try {
      withGradEnabled(() => {
        const recomputed = tidy(() => fn(...leaves));
        backward(recomputed, gradOutput);
        recomputed.dispose();
      });
      return leaves.map((leaf) => {
        const grad = leaf.grad;
        leaf.grad = null;
        return grad;
      });
    } finally {
      for (const leaf of leaves) {
        leaf.grad?.dispose();
        leaf.dispose();
      }
    }
  });
  return output;
}
