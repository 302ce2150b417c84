/**
 * Iteration over strided views in row-major order, shared by binary, where and copy.
 * Algorithm: drop size-1 axes, merge adjacent axes that are contiguous in every operand, then
 * walk all but the last axis with counters; kernels run a tight loop over the last axis.
 */

/** Shapes and per-operand strides after merging. */
export interface CoalescedLayout {
  /** Merged shape (at least one axis). */
  shape: number[];
  /** Strides of each operand for the merged shape. */
  strides: number[][];
}

/** Merge axes that every operand walks contiguously, so a dense tensor becomes one long row. */
export function coalesce(shape: readonly number[], operandStrides: readonly (readonly number[])[]): CoalescedLayout {
  const mergedShape: number[] = [];
  const mergedStrides: number[][] = operandStrides.map(() => []);
  for (let axis = 0; axis < shape.length; axis++) {
    const size = shape[axis];
    if (size === 1) continue;
    const last = mergedShape.length - 1;
    const mergeable =
      last >= 0 && operandStrides.every((strides, operand) => mergedStrides[operand][last] === strides[axis] * size);
    if (mergeable) {
      mergedShape[last] *= size;
      operandStrides.forEach((strides, operand) => {
        mergedStrides[operand][last] = strides[axis];
      });
    } else {
      mergedShape.push(size);
      operandStrides.forEach((strides, operand) => mergedStrides[operand].push(strides[axis]));
    }
  }
  if (mergedShape.length === 0) {
    mergedShape.push(1);
    mergedStrides.forEach((strides) => strides.push(0));
  }
  return { shape: mergedShape, strides: mergedStrides };
}

/**
 * Start offsets of every row (all axes but the last) for each operand: result[operand][row].
 * `offsets` are the operands' element offsets of their first element.
 */
export function rowStarts(layout: CoalescedLayout, offsets: readonly number[]): Float64Array[] {
  const { shape, strides } = layout;
  const rank = shape.length;
  let rows = 1;
  for (let axis = 0; axis < rank - 1; axis++) rows *= shape[axis];
  const starts = offsets.map(() => new Float64Array(rows));
  const counter = new Array<number>(Math.max(0, rank - 1)).fill(0);
  const current = offsets.slice();
  for (let row = 0; row < rows; row++) {
    for (let operand = 0; operand < offsets.length; operand++) starts[operand][row] = current[operand];
    // Advance the counter over axes rank-2 … 0, carrying like an odometer.
    for (let axis = rank - 2; axis >= 0; axis--) {
      counter[axis]++;
      for (let operand = 0; operand < offsets.length; operand++) current[operand] += strides[operand][axis];
      if (counter[axis] < shape[axis]) break;
      for (let operand = 0; operand < offsets.length; operand++)
        current[operand] -= strides[operand][axis] * shape[axis];
      counter[axis] = 0;
    }
  }
  return starts;
}
