/** Shape sweeps shared by the case families: size 1, empty, odd sizes off every tile multiple, and large (full only). */
import type { ConformanceSizes } from './types.js';

/** Elementwise shapes: one element, empty, odd 2-D, and a large odd 1-D (full). */
export function elementwiseShapes(sizes: ConformanceSizes): number[][] {
  const shapes = [[1], [0, 4], [7, 13]];
  return sizes === 'full' ? [...shapes, [1031], [3, 5, 67]] : shapes;
}

/** Row-wise shapes [rows, cols] for softmax / norms / cross-entropy. */
export function rowShapes(sizes: ConformanceSizes): [number, number][] {
  const shapes: [number, number][] = [
    [1, 1],
    [0, 5],
    [5, 7],
    [4, 33],
    [3, 64],
  ];
  return sizes === 'full' ? [...shapes, [2, 1000], [65, 17]] : shapes;
}

/** The first `count` entries of `items` when quick, all of them when full. */
export function bySize<T>(sizes: ConformanceSizes, items: readonly T[], quickCount: number): T[] {
  return sizes === 'full' ? [...items] : items.slice(0, quickCount);
}

/** 'a×b×c' for a shape in case ids. */
export function formatShape(shape: readonly number[]): string {
  return shape.join('×');
}
