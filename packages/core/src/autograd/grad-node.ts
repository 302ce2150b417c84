/**
 * The autograd graph: every op output that needs a gradient points to the GradNode that made
 * it. A node holds the tensors its backward needs (as storage-sharing aliases, so user disposal
 * of the originals is safe) and is freed, with those aliases, when nothing can reach it anymore
 * or after backward ran through it.
 */
import type { Tensor } from '../tensor/tensor.js';

/** Where a node sends the gradient of one of its inputs. */
export interface GradEdge {
  /** The input's own node (an intermediate result), if any. */
  node: GradNode | null;
  /** The input itself when it is a leaf that wants a gradient (gradients accumulate into leaf.grad). */
  leaf: Tensor | null;
}

/** Computes input gradients (null = no gradient for that input) from the output gradient. */
export type BackwardFunction = (gradOutput: Tensor) => Array<Tensor | null>;

let nextNodeId = 0;

/** One recorded operation. */
export class GradNode {
  /** Creation order: backward visits nodes newest first. */
  readonly id = nextNodeId++;
  private references = 0;
  private released = false;
  private savedReleased = false;

  constructor(
    /** Op name, for error messages. */
    readonly op: string,
    /** One edge per op input. */
    readonly edges: GradEdge[],
    /** Computes the input gradients. */
    readonly backward: BackwardFunction,
    /** Aliases kept alive for backward; disposed when the node is released. */
    private readonly saved: Tensor[],
  ) {
    for (const edge of edges) edge.node?.retain();
  }

  /** A tensor or a later node now points here. */
  retain(): void {
    this.references++;
  }

  /** Drops one pointer; frees the node (and what it saved) when none is left. */
  releaseReference(): void {
    this.references--;
    if (this.references <= 0) this.releaseGraph();
  }

  /** Frees the tensors saved for backward (after backward ran through this node). */
  releaseSaved(): void {
    this.savedReleased = true;
    for (const tensor of this.saved) tensor.dispose();
    this.saved.length = 0;
  }

  /** True once the saved tensors were freed: backward cannot run through this node again. */
  get isConsumed(): boolean {
    return this.savedReleased;
  }

  /** Frees what this node saved and drops its edges (after backward, or when unreachable). */
  releaseGraph(): void {
    if (this.released) return;
    this.released = true;
    this.releaseSaved();
    for (const edge of this.edges) {
      edge.node?.releaseReference();
      edge.node = null;
      edge.leaf = null;
    }
  }

  /** True after releaseGraph. */
  get isReleased(): boolean {
    return this.released;
  }
}

let gradDepth = 0;

/** True when ops should record the graph (outside noGrad). */
export function isGradEnabled(): boolean {
  return gradDepth === 0;
}

/** Runs fn without recording gradients. */
export function noGrad<T>(fn: () => T): T {
  gradDepth++;
  try {
    return fn();
  } finally {
    gradDepth--;
  }
}

/** Runs fn with gradient recording on, even inside noGrad or backward (used to recompute checkpoints). */
export function withGradEnabled<T>(fn: () => T): T {
  const saved = gradDepth;
  gradDepth = 0;
  try {
    return fn();
  } finally {
    gradDepth = saved;
  }
}
