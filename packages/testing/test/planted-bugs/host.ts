/**
 * What a planted bug is, and the host access its kernels use. A planted kernel replaces one
 * method of a reference backend: it reads its inputs with downloadSync, computes on the host in
 * float64 the way a device kernel would (tiles, blocks, one rounding when it stores), and uploads
 * its output. With `planted` false the same kernel runs without the mistake, which proves that
 * what the kit catches is the mistake and not the harness.
 */
import { DTYPE_BYTES, type DType } from '@kiln/core';
import type { KernelBackend, KernelName, StridedView, TensorRef } from '@kiln/core';
import { decodeValues, encodeValues } from '../../src/conformance/host-values.js';
import type { ReferenceBackend } from '../../src/index.js';

/** One realistic wrong kernel and the conformance case that must catch it. */
export interface PlantedBug {
  /** The mistake, as a reviewer would describe it. */
  name: string;
  /** The kernel it lives in (the kit run is filtered to it). */
  kernel: KernelName;
  /** Dtypes whose cases run (default ['f32']); the kernel's other dtypes are skipped. */
  dtypes?: readonly DType[];
  /** Id of a case that must fail with the bug (and pass without it). */
  caughtBy: string;
  /** The kernel method replacing the reference's; `planted` false gives the same kernel without the bug. */
  plant(base: ReferenceBackend, planted: boolean): Partial<KernelBackend>;
}

/** Number of elements of a shape. */
export function count(shape: readonly number[]): number {
  return shape.reduce((product, size) => product * size, 1);
}

/** Every element of a buffer, decoded from its dtype to float64 (i32 exactly). */
export function load(base: ReferenceBackend, ref: Pick<TensorRef, 'buffer' | 'dtype'>): Float64Array {
  const bytes = base.downloadSync!(ref.buffer);
  return decodeValues(bytes, ref.dtype, bytes.byteLength / DTYPE_BYTES[ref.dtype]);
}

/** Stores `values` from element 0, each rounded once to the tensor's dtype (i32: toward zero, saturating). */
export function store(
  base: ReferenceBackend,
  ref: Pick<TensorRef, 'buffer' | 'dtype'>,
  values: ArrayLike<number>,
): void {
  if (values.length > 0) base.upload(ref.buffer, encodeValues(values, ref.dtype));
}

/** The buffer index of each element of a view, in row-major order of its shape. */
export function viewIndices(view: StridedView): number[] {
  const indices: number[] = [];
  const total = count(view.shape);
  for (let flat = 0; flat < total; flat++) {
    let rest = flat;
    let index = view.offset;
    for (let axis = view.shape.length - 1; axis >= 0; axis--) {
      index += (rest % view.shape[axis]) * view.strides[axis];
      rest = Math.floor(rest / view.shape[axis]);
    }
    indices.push(index);
  }
  return indices;
}

/** The elements of a view in row-major order. */
export function loadView(base: ReferenceBackend, view: StridedView): Float64Array {
  const all = load(base, view);
  return Float64Array.from(viewIndices(view), (index) => all[index]);
}

/** Math.fround as an f32 register holds a value. */
export const f32 = Math.fround;
