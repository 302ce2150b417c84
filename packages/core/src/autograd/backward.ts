/**
 * Reverse-mode differentiation over the recorded graph. Nodes run newest first (an op's inputs
 * are always older than its output), each inside a tidy scope so its temporaries are freed;
 * gradients of leaves accumulate into `leaf.grad` (adding to what is there).
 */
import { DisposedTensorError, InvalidArgumentError } from '../errors.js';
import { checkTensor } from '../validate.js';
import { binaryKernel } from '../ops/kernel-calls.js';
import { full } from '../ops/creation.js';
import { clone } from '../ops/shape-ops.js';
import { keep, tidy } from '../tensor/scope.js';
import { shapesEqual } from '../tensor/shape.js';
import type { Tensor } from '../tensor/tensor.js';
import { noGrad, type GradNode } from './grad-node.js';

function accumulate(existing: Tensor | undefined | null, gradient: Tensor): Tensor {
  if (!existing) return gradient;
  try {
    return binaryKernel('add', existing, gradient);
  } finally {
    existing.dispose();
    gradient.dispose();
  }
}

function reachableNodes(root: GradNode): GradNode[] {
  const seen = new Set<GradNode>([root]);
  const stack = [root];
  while (stack.length > 0) {
    const node = stack.pop()!;
    for (const edge of node.edges) {
      if (edge.node && !seen.has(edge.node)) {
        seen.add(edge.node);
        stack.push(edge.node);
      }
    }
  }
  return [...seen].sort((a, b) => b.id - a.id);
}

/** Throws, before any gradient is computed, when a leaf the graph would send a gradient to was disposed. */
function assertLeavesAlive(nodes: readonly GradNode[]): void {
  for (const node of nodes) {
    for (const edge of node.edges) {
      const leaf = edge.leaf;
      if (leaf === null || !leaf.isDisposed) continue;
      throw new DisposedTensorError(
        `backward: leaf tensor #${leaf.id} ${leaf.describe()} (an input of '${node.op}') requires a gradient but was disposed, so its gradient would be lost`,
        {
          hint:
            'Dispose parameters only after backward (and after reading .grad); for a tensor whose gradient you do not want, ' +
            'call requireGrad(false) on it before the forward pass. Recompute the forward pass, then call backward again.',
        },
      );
    }
  }
}

/**
 * Computes d(output)/d(leaf) for every leaf that requires a gradient and adds it to leaf.grad.
 * `output` must be a single element unless `gradOutput` is given. The graph is freed afterwards.
 * A leaf of the graph that was disposed is an error (DisposedTensorError) raised before anything
 * is computed, never a silently missing gradient.
 */
export function backward(output: Tensor, gradOutput?: Tensor): void {
  checkTensor('backward', 'output', output);
  if (gradOutput !== undefined) checkTensor('backward', 'gradOutput', gradOutput);
  if (!output.requiresGrad) {
    throw new InvalidArgumentError(
      `backward: ${output.describe()} does not depend on any tensor that requires a gradient`,
      {
        hint: 'Call requireGrad() on the parameters before the forward pass, and do not run it inside noGrad().',
      },
    );
  }
  if (!gradOutput && output.size !== 1) {
    throw new InvalidArgumentError(
      `backward: output ${output.describe()} is not a single value; pass gradOutput of the same shape`,
    );
  }
  if (gradOutput && !shapesEqual(gradOutput.shape, output.shape)) {
    throw new InvalidArgumentError(
      `backward: gradOutput ${gradOutput.describe()} must match output ${output.describe()}`,
    );
  }
  const nodes = output.gradFn ? reachableNodes(output.gradFn) : [];
  assertLeavesAlive(nodes);
  noGrad(() => {
    const seed = gradOutput
      ? clone(gradOutput)
      : full(output.shape, 1, { dtype: output.dtype, backend: output.backend });
    keep(seed);
    if (!output.gradFn) {
      output.grad = keep(accumulate(output.grad, seed));
      return;
    }
    const root = output.gradFn;
    const pending = new Map<GradNode, Tensor>([[root, seed]]);
    try {
      for (const node of nodes) {
        const gradient = pending.get(node);
        pending.delete(node);
        if (!gradient) continue;
        if (node.isConsumed) {
          gradient.dispose();
          throw new InvalidArgumentError(
            `backward: the graph through '${node.op}' was already used by an earlier backward call and freed`,
            {
              hint: 'Recompute the forward pass before calling backward again.',
            },
          );
        }
        let inputGrads: Array<Tensor | null>;
        try {
          inputGrads = tidy(() => node.backward(gradient));
        } finally {
          gradient.dispose();
        }
        inputGrads.forEach((inputGrad) => inputGrad && keep(inputGrad));
        node.edges.forEach((edge, index) => {
          const inputGrad = inputGrads[index];
          if (!inputGrad) return;
          if (edge.node) {
            const previous = pending.get(edge.node);
            pending.delete(edge.node);
            pending.set(edge.node, accumulate(previous, inputGrad));
          } else if (edge.leaf && !edge.leaf.isDisposed) {
            const previous = edge.leaf.grad;
            edge.leaf.grad = null;
            edge.leaf.grad = keep(accumulate(previous, inputGrad));
          } else {
            inputGrad.dispose();
          }
        });
        // Saved activations are freed as soon as their node is done: peak memory stays low.
        node.releaseSaved();
      }
    } finally {
      for (const leftover of pending.values()) leftover.dispose();
      for (const node of nodes) node.releaseGraph();
    }
  });
}

/** The value of fn and its gradients with respect to each input. */
export interface ValueAndGrads {
  /** fn's output (detached from the graph). */
  value: Tensor;
  /** d value / d input, one per input, same shapes. */
  grads: Tensor[];
}

/** Wraps fn so a call returns its value and the gradients of that value with respect to every argument. */
export function valueAndGrad(fn: (...inputs: Tensor[]) => Tensor): (...inputs: Tensor[]) => ValueAndGrads {
  return (...inputs) => {
    const leaves = inputs.map((input) => input.alias().requireGrad());
    try {
      const value = tidy(() => fn(...leaves));
      backward(value);
      const grads = leaves.map((leaf) => {
        const grad = leaf.grad ?? full(leaf.shape, 0, { dtype: leaf.dtype, backend: leaf.backend });
        leaf.grad = null;
        return grad;
      });
      return { value, grads };
    } finally {
      for (const leaf of leaves) {
        leaf.grad?.dispose();
        leaf.dispose();
      }
    }
  };
}

/** Wraps fn so a call returns the gradients of its value with respect to every argument. */
export function grad(fn: (...inputs: Tensor[]) => Tensor): (...inputs: Tensor[]) => Tensor[] {
  const withValue = valueAndGrad(fn);
  return (...inputs) => {
    const { value, grads } = withValue(...inputs);
    value.dispose();
    return grads;
  };
}
