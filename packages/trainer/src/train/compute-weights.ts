/**
 * Compute-dtype working copies of the master weights, made once per optimizer step: every float
 * parameter of rank ≥ 2 (the matrices `linear` multiplies by) is cast once to the compute dtype
 * and the copy is a grad-requiring leaf, so every micro-batch's matmuls use it instead of casting
 * the f32 master at each use. After each micro-batch's backward the copies' gradients move to the
 * masters: the first one as it is (the gradient norm and AdamW read any float dtype and widen it to
 * f32 exactly, so no cast runs and no f32 copy is held), later ones added in f32 (both widened
 * exactly, as the per-use cast's backward did), so accumulation across micro-batches stays in f32.
 */
import { add, cast, noGrad, tidy, type DType, type Tensor } from '@kiln/core';

/** Master weight → its compute-dtype copy (a grad-requiring leaf). */
export type ComputeWeights = Map<Tensor, Tensor>;

/** Copies of every matrix weight in `dtype`; undefined when `dtype` is f32 (nothing to cast). */
export function createComputeWeights(
  parameters: ReadonlyMap<string, Tensor>,
  dtype: DType,
): ComputeWeights | undefined {
  if (dtype === 'f32') return undefined;
  const copies: ComputeWeights = new Map();
  try {
    noGrad(() => {
      for (const master of parameters.values()) {
        if (master.rank < 2 || master.dtype === dtype || master.dtype === 'i32') continue;
        copies.set(master, cast(master, dtype).requireGrad());
      }
    });
  } catch (error) {
    disposeComputeWeights(copies);
    throw error;
  }
  return copies;
}

/** Moves each copy's gradient to its master (see the file header), then clears the copy's. */
export function foldComputeGradients(copies: ComputeWeights | undefined): void {
  if (!copies) return;
  noGrad(() => {
    for (const [master, copy] of copies) {
      const gradient = copy.grad;
      if (!gradient) continue;
      copy.grad = null;
      const previous = master.grad;
      if (!previous) {
        master.grad = gradient;
        continue;
      }
      master.grad = tidy(() => add(widen(previous, master.dtype), widen(gradient, master.dtype)));
      previous.dispose();
      gradient.dispose();
    }
  });
}

/** x in `dtype` (a new tensor inside the caller's tidy when it casts). */
function widen(x: Tensor, dtype: DType): Tensor {
  return x.dtype === dtype ? x : cast(x, dtype);
}

/** Frees every copy and its gradient. */
export function disposeComputeWeights(copies: ComputeWeights | undefined): void {
  if (!copies) return;
  for (const copy of copies.values()) {
    copy.grad?.dispose();
    copy.grad = null;
    copy.dispose();
  }
  copies.clear();
}
