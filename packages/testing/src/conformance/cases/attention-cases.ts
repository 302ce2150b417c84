/**
 * attention and attentionBackward: causal and not, additive masks as broadcast views ([Tq,Tk]
 * over batch and heads; [B,1,1,Tk] padding) and dense ([B,Hq,Tq,Tk], different per batch and
 * head), GQA (Hq=4 with Hkv=2 and 1), Tq ≠ Tk with causal (KV-cache decode Tq=1; Tq > Tk leaves
 * rows with no key: out 0, lse −Inf), D not a power of 2, a scale far from 1/√D, and keys whose
 * scores rise along the sequence past 257 keys, so the running max of an online (flash) softmax
 * grows from one key block to the next (blocks of 64, 96 or 128 keys) and a missing rescale shows.
 * Tokens-major geometries (q, k, v, out and gradients [B, T, H, D]; one with D = 160, above the
 * CUDA kernels' limit, where the backend runs core's composition) run natively on backends whose
 * capabilities.attentionLayouts lists 'tokens-major'; elsewhere the native case is skipped (core
 * permutes to heads-major for them) and core's composition runs the layout on the backend.
 */
import { FLOAT_DTYPES, type DType } from '@kiln/core';
import type { AttentionLayout, AttentionParams, FusedKernelName, StridedView } from '@kiln/core';
import { caseId, defineCase, fusedCases, type CaseBody, type CaseSettings, type KernelMode } from '../case-builder.js';
import type { CaseContext, Pair, Side, ViewPair } from '../case-context.js';
import { assertClose } from '../compare.js';
import { runFused, runOnReference } from '../fused-call.js';
import type { ConformanceCase } from '../types.js';

/** One attention geometry. */
export interface AttentionGeometry {
  /** B. */
  batch: number;
  /** Hq, query heads. */
  headsQ: number;
  /** Hkv, key/value heads (divides Hq). */
  headsKV: number;
  /** Tq, query length. */
  lengthQ: number;
  /** Tk, key length. */
  lengthK: number;
  /** D, head dimension. */
  headDim: number;
  /** Causal mask aligned to the end. */
  causal: boolean;
  /** 'square' = an additive [Tq,Tk] mask broadcast over batch and heads; 'padding' = [B,1,1,Tk]; 'dense' = [B,Hq,Tq,Tk]. */
  mask?: 'square' | 'padding' | 'dense';
  /** 'rising': q in [0.25, 1) and keys drifting upward with their index, so scores grow along the keys. */
  keys?: 'rising';
  /** Multiplier of q·k (default 1/√D). */
  scale?: number;
  /** Only in 'full' sizes. */
  full?: boolean;
  /** Rows without keys: the backward is left out (its value there is not specified). */
  forwardOnly?: boolean;
  /** Layout of q, k, v, out and the gradients (default 'heads-major'). */
  layout?: AttentionLayout;
}

const GEOMETRIES: AttentionGeometry[] = [
  { batch: 1, headsQ: 1, headsKV: 1, lengthQ: 1, lengthK: 1, headDim: 1, causal: false },
  { batch: 2, headsQ: 2, headsKV: 2, lengthQ: 5, lengthK: 5, headDim: 8, causal: false },
  { batch: 2, headsQ: 2, headsKV: 2, lengthQ: 5, lengthK: 5, headDim: 8, causal: true },
  { batch: 1, headsQ: 4, headsKV: 2, lengthQ: 7, lengthK: 7, headDim: 16, causal: true },
  { batch: 1, headsQ: 4, headsKV: 1, lengthQ: 6, lengthK: 9, headDim: 12, causal: false, scale: 0.75 },
  { batch: 1, headsQ: 2, headsKV: 2, lengthQ: 3, lengthK: 10, headDim: 8, causal: true },
  { batch: 1, headsQ: 4, headsKV: 2, lengthQ: 1, lengthK: 17, headDim: 8, causal: true },
  { batch: 1, headsQ: 2, headsKV: 1, lengthQ: 5, lengthK: 3, headDim: 8, causal: true, forwardOnly: true },
  { batch: 2, headsQ: 2, headsKV: 1, lengthQ: 4, lengthK: 6, headDim: 8, causal: false, mask: 'square' },
  { batch: 2, headsQ: 2, headsKV: 2, lengthQ: 4, lengthK: 6, headDim: 8, causal: true, mask: 'padding' },
  { batch: 1, headsQ: 2, headsKV: 1, lengthQ: 0, lengthK: 4, headDim: 8, causal: true },
  { batch: 2, headsQ: 4, headsKV: 2, lengthQ: 5, lengthK: 7, headDim: 8, causal: false, mask: 'dense' },
  { batch: 1, headsQ: 2, headsKV: 1, lengthQ: 3, lengthK: 257, headDim: 8, causal: false, keys: 'rising' },
  { batch: 1, headsQ: 1, headsKV: 1, lengthQ: 150, lengthK: 150, headDim: 8, causal: true, keys: 'rising' },
  { batch: 1, headsQ: 2, headsKV: 2, lengthQ: 130, lengthK: 130, headDim: 64, causal: true, full: true },
  { batch: 1, headsQ: 4, headsKV: 2, lengthQ: 33, lengthK: 65, headDim: 24, causal: false, mask: 'square', full: true },
];

/** Tokens-major geometries: GQA, causal with Tq ≠ Tk both ways past one key block, masks, D not a power of 2 or above 128, batch > 1. */
const TOKENS_MAJOR_GEOMETRIES: AttentionGeometry[] = (
  [
    { batch: 2, headsQ: 2, headsKV: 2, lengthQ: 5, lengthK: 5, headDim: 8, causal: true },
    { batch: 2, headsQ: 4, headsKV: 2, lengthQ: 7, lengthK: 7, headDim: 16, causal: true },
    { batch: 1, headsQ: 4, headsKV: 1, lengthQ: 6, lengthK: 9, headDim: 12, causal: false, scale: 0.75 },
    { batch: 1, headsQ: 2, headsKV: 1, lengthQ: 40, lengthK: 100, headDim: 16, causal: true },
    { batch: 1, headsQ: 2, headsKV: 1, lengthQ: 100, lengthK: 40, headDim: 16, causal: true },
    { batch: 2, headsQ: 4, headsKV: 2, lengthQ: 5, lengthK: 7, headDim: 8, causal: false, mask: 'dense' },
    { batch: 2, headsQ: 2, headsKV: 2, lengthQ: 4, lengthK: 6, headDim: 8, causal: true, mask: 'padding' },
    { batch: 1, headsQ: 2, headsKV: 1, lengthQ: 3, lengthK: 257, headDim: 8, causal: false, keys: 'rising' },
    { batch: 2, headsQ: 3, headsKV: 3, lengthQ: 130, lengthK: 130, headDim: 64, causal: true, full: true },
    // Above the flash kernels' head-dim limit (128 on CUDA): native backends run core's composition, in this layout.
    { batch: 1, headsQ: 2, headsKV: 1, lengthQ: 3, lengthK: 5, headDim: 160, causal: true },
  ] as const satisfies readonly AttentionGeometry[]
).map((geometry) => ({ ...geometry, layout: 'tokens-major' as const }));

/** The geometry in a case id, e.g. 'B=1,Hq=4,Hkv=2,Tq=1,Tk=17,D=8,causal'. */
export function describeAttention(geometry: AttentionGeometry): string {
  const { batch, headsQ, headsKV, lengthQ, lengthK, headDim } = geometry;
  const parts = [`B=${batch}`, `Hq=${headsQ}`, `Hkv=${headsKV}`, `Tq=${lengthQ}`, `Tk=${lengthK}`, `D=${headDim}`];
  parts.push(geometry.causal ? 'causal' : 'non-causal');
  if (geometry.mask) parts.push(`mask=${geometry.mask}`);
  if (geometry.scale !== undefined) parts.push(`scale=${geometry.scale}`);
  if (geometry.keys) parts.push(`keys=${geometry.keys}`);
  if (geometry.layout === 'tokens-major') parts.push('tokens-major');
  return parts.join(',');
}

/** The attention parameters of a geometry. */
export function attentionParams(geometry: AttentionGeometry): AttentionParams {
  const params = { scale: geometry.scale ?? 1 / Math.sqrt(geometry.headDim), causal: geometry.causal };
  return geometry.layout === 'tokens-major' ? { ...params, layout: 'tokens-major' } : params;
}

/** Shape of a [B, heads, length, D] tensor in the geometry's layout. */
function layoutShape(geometry: AttentionGeometry, heads: number, length: number): number[] {
  const { batch, headDim } = geometry;
  return geometry.layout === 'tokens-major' ? [batch, length, heads, headDim] : [batch, heads, length, headDim];
}

/** Shape of q, out, dOut and dq. */
export function queryShape(geometry: AttentionGeometry): number[] {
  return layoutShape(geometry, geometry.headsQ, geometry.lengthQ);
}

/** Shape of k, v, dk and dv. */
export function keyShape(geometry: AttentionGeometry): number[] {
  return layoutShape(geometry, geometry.headsKV, geometry.lengthK);
}

/** Stored element count and [B, Hq, Tq, Tk] strides of each mask kind. */
function maskLayout(geometry: AttentionGeometry): { count: number; strides: number[] } {
  const { batch, headsQ, lengthQ, lengthK } = geometry;
  switch (geometry.mask) {
    case 'square':
      return { count: lengthQ * lengthK, strides: [0, 0, lengthK, 1] };
    case 'padding':
      return { count: batch * lengthK, strides: [lengthK, 0, 0, 1] };
    default:
      return {
        count: batch * headsQ * lengthQ * lengthK,
        strides: [headsQ * lengthQ * lengthK, lengthQ * lengthK, lengthK, 1],
      };
  }
}

/** The additive mask as a view broadcast to [B, Hq, Tq, Tk] plus its dense values; key 0 stays finite so no row is fully masked. */
function maskOf(context: CaseContext, geometry: AttentionGeometry): { view: ViewPair; dense: Float64Array } | null {
  const { batch, headsQ, lengthQ, lengthK } = geometry;
  if (!geometry.mask) return null;
  const { count, strides } = maskLayout(geometry);
  const values = context.random
    .pick(count, [0, -0.5, -1.5, -Infinity, 0.25])
    .map((value, index) => (index % lengthK === 0 ? 0 : value));
  const mask = context.tensor([count], 'f32', values);
  const dense = new Float64Array(batch * headsQ * lengthQ * lengthK);
  for (let index = 0; index < dense.length; index++) {
    const j = index % lengthK;
    const i = Math.floor(index / lengthK) % lengthQ;
    const h = Math.floor(index / (lengthK * lengthQ)) % headsQ;
    const b = Math.floor(index / (lengthK * lengthQ * headsQ));
    dense[index] = values[b * strides[0] + h * strides[1] + i * strides[2] + j];
  }
  return { view: context.view(mask, [batch, headsQ, lengthQ, lengthK], strides), dense };
}

/** Keys that drift upward with their position j (k = u/2 + 2.5·j/Tk), so positive queries score later keys higher. */
function risingKeys(context: CaseContext, geometry: AttentionGeometry, dtype: DType): Pair {
  const { batch, headsKV, lengthK, headDim } = geometry;
  const noise = context.random.uniform(batch * headsKV * lengthK * headDim, -0.5, 0.5);
  // Elements between consecutive positions: one row of D (heads-major) or every kv head's row (tokens-major).
  const positionStride = geometry.layout === 'tokens-major' ? headsKV * headDim : headDim;
  const values = noise.map((value, index) => value + (2.5 * (Math.floor(index / positionStride) % lengthK)) / lengthK);
  return context.tensor(keyShape(geometry), dtype, values);
}

/** q, k, v of a geometry, uniform in [-1, 1) (q in [0.25, 1) and rising keys for keys: 'rising'). */
export function attentionInputs(context: CaseContext, geometry: AttentionGeometry, dtype: DType) {
  const rising = geometry.keys === 'rising';
  return {
    q: rising ? context.uniform(queryShape(geometry), dtype, 0.25, 1) : context.uniform(queryShape(geometry), dtype),
    k: rising ? risingKeys(context, geometry, dtype) : context.uniform(keyShape(geometry), dtype),
    v: context.uniform(keyShape(geometry), dtype),
    mask: maskOf(context, geometry),
  };
}

/** The mask view of one side (null without a mask). */
export function pickMask(mask: { view: ViewPair } | null, side: Side): StridedView | null {
  return mask === null ? null : mask.view[side];
}

/**
 * fusedCases for one geometry; a tokens-major one on a backend whose kernels do not read that
 * layout becomes a skipped native case plus a '(composed)' case (core's composition reads both).
 */
function layoutCases(
  settings: CaseSettings,
  kernel: FusedKernelName,
  dtype: DType,
  geometry: AttentionGeometry,
  body: (context: CaseContext, mode: KernelMode) => Promise<void>,
): ConformanceCase[] {
  const layout = geometry.layout ?? 'heads-major';
  const readsLayout =
    layout === 'heads-major' || (settings.backend.capabilities.attentionLayouts?.includes(layout) ?? false);
  if (readsLayout) return fusedCases(settings, kernel, dtype, describeAttention(geometry), body);
  const id = caseId(kernel, dtype, describeAttention(geometry));
  const composed: CaseBody = (context) => body(context, 'composed');
  return [
    defineCase(
      settings,
      id,
      kernel,
      dtype,
      async () => {},
      `${settings.backend.name}'s attention kernels do not read ${layout} (core permutes): composed layout tested instead`,
    ),
    defineCase(settings, `${id} (composed)`, kernel, dtype, composed),
  ];
}

/** The attention (forward) case of one geometry. */
export function forwardCases(settings: CaseSettings, dtype: DType, geometry: AttentionGeometry): ConformanceCase[] {
  return layoutCases(settings, 'attention', dtype, geometry, async (context, mode) => {
    const { batch, headsQ, lengthQ, lengthK } = geometry;
    const { q, k, v, mask } = attentionInputs(context, geometry, dtype);
    const out = context.output(queryShape(geometry), dtype);
    const lse = context.output([batch, headsQ, lengthQ], 'f32');
    const params = attentionParams(geometry);
    runFused(context, mode, 'attention', (side) => [
      q[side],
      k[side],
      v[side],
      pickMask(mask, side),
      out[side],
      lse[side],
      params,
    ]);
    await context.expectClose(out, 'out', { reductionLength: lengthK });
    await context.expectClose(lse, 'lse', { reductionLength: lengthK });
  });
}

/** Leading query rows that see no key (causal with Tq > Tk): their dq is not specified, so it is not compared. */
function rowsWithoutKeys(geometry: AttentionGeometry): number {
  return geometry.causal ? Math.max(0, geometry.lengthQ - geometry.lengthK) : 0;
}

/** Compares dq on the query rows that see at least one key (every row unless causal with Tq > Tk). */
async function expectQueryGradient(context: CaseContext, geometry: AttentionGeometry, dq: Pair): Promise<void> {
  const options = { reductionLength: geometry.lengthK * geometry.headDim };
  const hidden = rowsWithoutKeys(geometry);
  if (hidden === 0) return context.expectClose(dq, 'dq', options);
  const [got, expected] = [await context.read(dq, 'tested'), await context.read(dq, 'reference')];
  // The hidden rows are the first `hidden` positions of every head: one run per head (heads-major) or per batch (tokens-major).
  const tokensMajor = geometry.layout === 'tokens-major';
  const runLength = tokensMajor
    ? geometry.lengthQ * geometry.headsQ * geometry.headDim
    : geometry.lengthQ * geometry.headDim;
  const hiddenLength = tokensMajor ? hidden * geometry.headsQ * geometry.headDim : hidden * geometry.headDim;
  for (let start = 0; start < got.length; start += runLength) {
    got.fill(0, start, start + hiddenLength);
    expected.fill(0, start, start + hiddenLength);
  }
  assertClose(got, expected, context.toleranceFor(dq.dtype, options), {
    caseId: context.caseId,
    output: `dq (query rows ≥ ${hidden})`,
    shape: dq.shape,
    dtype: dq.dtype,
  });
}

/** The attentionBackward case of one geometry (the forward's out and lse come from the reference). */
export function backwardCases(settings: CaseSettings, dtype: DType, geometry: AttentionGeometry): ConformanceCase[] {
  return layoutCases(settings, 'attentionBackward', dtype, geometry, async (context, mode) => {
    const { batch, headsQ, headsKV, lengthQ, headDim } = geometry;
    const { q, k, v, mask } = attentionInputs(context, geometry, dtype);
    const out = context.output(queryShape(geometry), dtype);
    const lse = context.output([batch, headsQ, lengthQ], 'f32');
    const params = attentionParams(geometry);
    runOnReference(context, 'attention', [
      q.reference,
      k.reference,
      v.reference,
      pickMask(mask, 'reference'),
      out.reference,
      lse.reference,
      params,
    ]);
    await context.adoptReference(out);
    await context.adoptReference(lse);
    const dOut = context.uniform(queryShape(geometry), dtype);
    const dq = context.output(q.shape, dtype);
    const dk = context.output(k.shape, dtype);
    const dv = context.output(v.shape, dtype);
    runFused(context, mode, 'attentionBackward', (side) => [
      q[side],
      k[side],
      v[side],
      pickMask(mask, side),
      out[side],
      lse[side],
      dOut[side],
      dq[side],
      dk[side],
      dv[side],
      params,
    ]);
    const group = headsQ / headsKV;
    await expectQueryGradient(context, geometry, dq);
    await context.expectClose(dk, 'dk', { reductionLength: lengthQ * group * headDim });
    await context.expectClose(dv, 'dv', { reductionLength: lengthQ * group });
  });
}

/** Every attention forward and backward case. */
export function attentionCases(settings: CaseSettings): ConformanceCase[] {
  const cases: ConformanceCase[] = [];
  for (const dtype of FLOAT_DTYPES) {
    for (const geometry of [...GEOMETRIES, ...TOKENS_MAJOR_GEOMETRIES]) {
      if (geometry.full && settings.sizes !== 'full') continue;
      cases.push(...forwardCases(settings, dtype, geometry));
      if (!geometry.forwardOnly) cases.push(...backwardCases(settings, dtype, geometry));
    }
  }
  return cases;
}
