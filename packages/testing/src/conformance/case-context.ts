/**
 * The workbench of one conformance case: every tensor exists twice — on the backend under test
 * ('tested') and on the float64 reference ('reference') — uploaded from the same bytes; outputs
 * start filled with a sentinel so an element a kernel forgets to write shows up. Everything the
 * case allocates is freed by release(), so the leak check sees only the kernels' own allocations.
 */
import { DTYPE_BYTES, type DType } from '@kiln/core';
import type { BufferHandle, KernelBackend, StridedView, TensorRef } from '@kiln/core';
import {
  EXACT_TOLERANCE,
  looserTolerance,
  scaleForReduction,
  type Tolerance,
  type ToleranceTable,
} from '../tolerances.js';
import { assertClose } from './compare.js';
import { contiguousStrides, decodeValues, elementCount, encodeValues } from './host-values.js';
import { InputGenerator } from './input-generator.js';

/** Which copy of a tensor: the backend under test's or the reference's. */
export type Side = 'tested' | 'reference';

/** Both sides, tested first. */
export const SIDES: readonly Side[] = ['tested', 'reference'];

/** The same tensor on both backends. */
export interface Pair {
  /** Shape of the tensor. */
  readonly shape: readonly number[];
  /** Storage dtype. */
  readonly dtype: DType;
  /** The values uploaded (already rounded to dtype), as float64. */
  readonly values: Float64Array;
  /** The copy on the backend under test. */
  readonly tested: TensorRef;
  /** The copy on the reference. */
  readonly reference: TensorRef;
}

/** The same strided view on both backends. */
export interface ViewPair {
  /** The view on the backend under test. */
  readonly tested: StridedView;
  /** The view on the reference. */
  readonly reference: StridedView;
}

/** Options of CaseContext.expectClose. */
export interface ExpectOptions {
  /** Terms each element accumulates (scales the tolerance by its square root). */
  reductionLength?: number;
  /** Bit-exact comparison (copy, cast, gather, fill, random). */
  exact?: boolean;
}

/** Value written into every output before a kernel runs (finite and unusual in every dtype). */
const OUTPUT_SENTINEL = -12345;

/** See the file header. */
export class CaseContext {
  /** Seeded generator of this case's input values. */
  readonly random: InputGenerator;
  private readonly allocations: { backend: KernelBackend; buffer: BufferHandle }[] = [];

  constructor(
    /** The case id (for messages). */
    readonly caseId: string,
    /** The backend under test. */
    readonly backend: KernelBackend,
    /** The float64 reference. */
    readonly reference: KernelBackend,
    /** The dtype the case computes in (its tolerance applies to every output). */
    readonly computeDType: DType,
    private readonly tolerances: ToleranceTable,
    seed: number,
  ) {
    this.random = new InputGenerator(seed);
  }

  /** The backend of one side. */
  target(side: Side): KernelBackend {
    return side === 'tested' ? this.backend : this.reference;
  }

  /** Runs `call` on the backend under test, then on the reference. */
  onBoth(call: (backend: KernelBackend, side: Side) => void): void {
    for (const side of SIDES) call(this.target(side), side);
  }

  /** A tensor holding `values` (rounded to `dtype`) on both backends. */
  tensor(shape: readonly number[], dtype: DType, values: ArrayLike<number>): Pair {
    const count = elementCount(shape);
    if (values.length !== count)
      throw new RangeError(`${this.caseId}: ${values.length} values for shape [${shape.join(',')}]`);
    const bytes = encodeValues(values, dtype);
    const make = (backend: KernelBackend): TensorRef => {
      const buffer = backend.alloc(bytes.byteLength);
      this.allocations.push({ backend, buffer });
      if (bytes.byteLength > 0) backend.upload(buffer, bytes);
      return { buffer, shape: [...shape], dtype };
    };
    const stored = decodeValues(bytes, dtype, count);
    return { shape: [...shape], dtype, values: stored, tested: make(this.backend), reference: make(this.reference) };
  }

  /** A tensor of values uniform in [low, high). */
  uniform(shape: readonly number[], dtype: DType, low = -1, high = 1): Pair {
    return this.tensor(shape, dtype, this.random.uniform(elementCount(shape), low, high));
  }

  /** An output tensor, pre-filled with the sentinel on both backends. */
  output(shape: readonly number[], dtype: DType): Pair {
    return this.tensor(shape, dtype, new Array<number>(elementCount(shape)).fill(OUTPUT_SENTINEL));
  }

  /** A strided view into `pair`'s buffer (strides and offset in elements). */
  view(pair: Pair, shape: readonly number[], strides: readonly number[], offset = 0): ViewPair {
    const make = (ref: TensorRef): StridedView => ({
      buffer: ref.buffer,
      dtype: ref.dtype,
      shape: [...shape],
      strides: [...strides],
      offset,
    });
    return { tested: make(pair.tested), reference: make(pair.reference) };
  }

  /** `pair` as a contiguous view of its own shape. */
  whole(pair: Pair): ViewPair {
    return this.view(pair, pair.shape, contiguousStrides(pair.shape), 0);
  }

  /** The values of one side of `pair`, as float64. */
  async read(pair: Pair, side: Side): Promise<Float64Array> {
    const count = elementCount(pair.shape);
    const bytes = await this.target(side).download(pair[side].buffer);
    return decodeValues(bytes, pair.dtype, count);
  }

  /** Makes the tested copy of `pair` byte-identical to the reference copy (re-synchronises state between steps). */
  async adoptReference(pair: Pair): Promise<void> {
    const bytes = await this.reference.download(pair.reference.buffer);
    const length = elementCount(pair.shape) * DTYPE_BYTES[pair.dtype];
    if (length > 0) this.backend.upload(pair.tested.buffer, bytes.subarray(0, length));
  }

  /** The tolerance for an output of `dtype` (the looser of it and the case's compute dtype). */
  toleranceFor(dtype: DType, options: ExpectOptions = {}): Tolerance {
    if (options.exact || dtype === 'i32') return EXACT_TOLERANCE;
    const base = looserTolerance(
      this.tolerances[dtype],
      this.tolerances[this.computeDType === 'i32' ? dtype : this.computeDType],
    );
    return scaleForReduction(base, options.reductionLength ?? 1);
  }

  /** Throws KilnConformanceError unless the tested copy of `pair` matches the reference copy. */
  async expectClose(pair: Pair, output: string, options: ExpectOptions = {}): Promise<void> {
    const got = await this.read(pair, 'tested');
    const expected = await this.read(pair, 'reference');
    assertClose(got, expected, this.toleranceFor(pair.dtype, options), {
      caseId: this.caseId,
      output,
      shape: pair.shape,
      dtype: pair.dtype,
    });
  }

  /** Throws KilnConformanceError unless the tested copy of `pair` equals `expected` (values computed on the host). */
  async expectValues(pair: Pair, output: string, expected: Float64Array, options: ExpectOptions = {}): Promise<void> {
    const got = await this.read(pair, 'tested');
    assertClose(got, expected, this.toleranceFor(pair.dtype, options), {
      caseId: this.caseId,
      output,
      shape: pair.shape,
      dtype: pair.dtype,
    });
  }

  /** Frees every buffer this case allocated, on both backends. */
  release(): void {
    for (const { backend, buffer } of this.allocations.splice(0)) backend.free(buffer);
  }
}
