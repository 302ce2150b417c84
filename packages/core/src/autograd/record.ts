/** Records an op in the autograd graph when any input needs a gradient. */
import type { Tensor } from '../tensor/tensor.js';
import { GradNode, isGradEnabled } from './grad-node.js';

/** Backward of one op: input gradients (null where not needed) from the output gradient and saved tensors. */
export type OpBackward = (gradOutput: Tensor, saved: Tensor[], needed: boolean[]) => Array<Tensor | null>;

/** True when recording is on and some input requires a gradient. */
export function needsGrad(inputs: readonly Tensor[]): boolean {
  return isGradEnabled() && inputs.some((tensor) => tensor.requiresGrad);
}

/** needsGrad of one or two inputs without building an array: ops test it before making their backward closure. */
export function needsGradOf(a: Tensor, b?: Tensor): boolean {
  return isGradEnabled() && (a.requiresGrad || (b !== undefined && b.requiresGrad));
}

/**
 * Attaches a GradNode to `output`. `saved` tensors are aliased (storage kept alive until the
 * node is released), so callers may dispose the originals.
 */
export function recordOp(
  op: string,
  inputs: readonly Tensor[],
  output: Tensor,
  saved: readonly Tensor[],
  backward: OpBackward,
): void {
  if (!needsGrad(inputs)) return;
  const aliases = saved.map((tensor) => tensor.alias());
  const needed = inputs.map((tensor) => tensor.requiresGrad);
  const edges = inputs.map((tensor) => ({
    node: tensor.gradFn,
    leaf: tensor.gradFn === null && tensor.requiresGrad ? tensor : null,
  }));
  const node = new GradNode(op, edges, (gradOutput) => backward(gradOutput, aliases, needed), aliases);
  output.markOutputOf(node);
}
