/** Shape arithmetic shared by every op: sizes, strides, axes and broadcasting. */
import { InvalidArgumentError, ShapeError } from '../errors.js';

/** A tensor shape: non-negative integer dimensions, outermost first. */
export type Shape = readonly number[];

/** Number of elements of a shape (1 for a scalar). */
export function shapeSize(shape: Shape): number {
  let size = 1;
  for (const dimension of shape) size *= dimension;
  return size;
}

/** Row-major element strides of a dense tensor of this shape. */
export function contiguousStrides(shape: Shape): number[] {
  const strides = new Array<number>(shape.length);
  let stride = 1;
  for (let axis = shape.length - 1; axis >= 0; axis--) {
    strides[axis] = stride;
    stride *= shape[axis];
  }
  return strides;
}

/** `[2, 3]` for error messages. */
export function formatShape(shape: Shape): string {
  return `[${shape.join(', ')}]`;
}

/** True when both shapes have the same rank and dimensions. */
export function shapesEqual(a: Shape, b: Shape): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let axis = 0; axis < a.length; axis++) if (a[axis] !== b[axis]) return false;
  return true;
}

/** Throws unless every dimension is a non-negative safe integer. */
export function assertValidShape(shape: Shape, op: string): void {
  if (!Array.isArray(shape))
    throw new InvalidArgumentError(`${op}: shape must be an array of integers, got ${String(shape)}`);
  for (const dimension of shape) {
    if (!Number.isSafeInteger(dimension) || dimension < 0) {
      throw new ShapeError(`${op}: shape ${formatShape(shape)} has an invalid dimension ${dimension}`, {
        hint: 'Dimensions must be non-negative integers.',
      });
    }
  }
}

/** Resolves a possibly negative axis against a rank; throws InvalidArgumentError naming the op. */
export function normalizeAxis(axis: number, rank: number, op: string, shape?: Shape): number {
  const resolved = axis < 0 ? axis + rank : axis;
  if (!Number.isInteger(axis) || resolved < 0 || resolved >= rank) {
    const where = shape ? ` of a tensor of shape ${formatShape(shape)}` : '';
    throw new InvalidArgumentError(`${op}: axis ${axis} is out of range for rank ${rank}${where}`, {
      hint: `Use an axis in [${-rank}, ${rank - 1}].`,
    });
  }
  return resolved;
}

/** NumPy broadcasting of two shapes; throws ShapeError naming the op and both shapes. */
export function broadcastShapes(a: Shape, b: Shape, op: string): number[] {
  const rank = Math.max(a.length, b.length);
  const result = new Array<number>(rank);
  for (let i = 0; i < rank; i++) {
    const da = a[a.length - rank + i] ?? 1;
    const db = b[b.length - rank + i] ?? 1;
    if (da !== db && da !== 1 && db !== 1) {
      throw new ShapeError(
        `${op}: shapes ${formatShape(a)} and ${formatShape(b)} cannot be broadcast together (dimension ${i}: ${da} vs ${db})`,
        {
          hint: 'Broadcast dimensions must be equal or 1 (aligned from the right); reshape or expand one operand.',
        },
      );
    }
    result[i] = da === 1 ? db : da;
  }
  return result;
}

/** Strides that read a dense tensor of `shape` as if broadcast to `target` (0 on repeated axes). */
export function broadcastStrides(shape: Shape, target: Shape): number[] {
  const own = contiguousStrides(shape);
  const strides = new Array<number>(target.length).fill(0);
  const shift = target.length - shape.length;
  for (let axis = 0; axis < shape.length; axis++) {
    strides[axis + shift] = shape[axis] === 1 && target[axis + shift] !== 1 ? 0 : own[axis];
  }
  return strides;
}

/** Resolves a reshape target with at most one -1; throws ShapeError when sizes differ. */
export function resolveReshape(from: Shape, to: Shape, op = 'reshape'): number[] {
  const size = shapeSize(from);
  const inferred = to.filter((dimension) => dimension === -1).length;
  if (inferred > 1)
    throw new ShapeError(`${op}: shape ${formatShape(to)} has more than one -1; at most one dimension may be inferred`);
  const known = to.reduce((product, dimension) => (dimension === -1 ? product : product * dimension), 1);
  const resolved = to.map((dimension) => (dimension === -1 ? (known === 0 ? 0 : size / known) : dimension));
  assertValidShape(resolved, op);
  if (shapeSize(resolved) !== size) {
    throw new ShapeError(
      `${op}: cannot reshape ${formatShape(from)} (${size} elements) to shape ${formatShape(to)} (${shapeSize(resolved)} elements)`,
      {
        hint: 'The new shape must have the same number of elements.',
      },
    );
  }
  return resolved;
}
