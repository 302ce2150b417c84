/**
 * Gradient checks (f32): each backward kernel's output against float64 central differences of
 * loss = Σ r ⊙ forward(inputs), forward computed on the host in f64 (host-forwards.ts) and r a
 * random projection, which is the dy handed to the backward. Saved forward values (y, rstd,
 * out/lse) are computed on the host or the reference and uploaded to both backends.
 */
import type { AttentionParams } from '@kiln/core';
import { gradcheck } from '../../gradcheck.js';
import { fusedCases, type CaseSettings } from '../case-builder.js';
import type { CaseContext, Pair } from '../case-context.js';
import { KilnConformanceError } from '../conformance-error.js';
import { runFused, runOnReference } from '../fused-call.js';
import {
  hostAttention,
  hostCrossEntropy,
  hostRmsNorm,
  hostRmsNormRstd,
  hostRope,
  hostSoftmax,
  hostSwiglu,
  project,
} from '../host-forwards.js';
import type { ConformanceCase } from '../types.js';
import {
  attentionInputs,
  attentionParams,
  describeAttention,
  pickMask,
  type AttentionGeometry,
} from './attention-cases.js';
import { IGNORE_INDEX } from './softmax-cases.js';

/** Runs gradcheck on tested-side gradients and throws KilnConformanceError when it fails. */
async function expectGradients(
  context: CaseContext,
  loss: (inputs: Float64Array[]) => number,
  inputs: Pair[],
  gradients: Pair[],
): Promise<void> {
  const analytic = await Promise.all(gradients.map((gradient) => context.read(gradient, 'tested')));
  const tolerance = context.toleranceFor('f32');
  const result = gradcheck(
    loss,
    inputs.map((input) => Float64Array.from(input.values)),
    analytic,
    {
      tolerance: { absolute: Math.max(tolerance.absolute, 1e-5), relative: Math.max(tolerance.relative * 10, 1e-3) },
    },
  );
  if (!result.passed) {
    throw new KilnConformanceError(
      context.caseId,
      `gradient check failed: ${result.message}`,
      undefined,
      'The backward kernel does not match the derivative of the forward definition in docs/kernel-semantics.md.',
    );
  }
}

function softmaxGradient(settings: CaseSettings): ConformanceCase[] {
  const [rows, cols] = [3, 7];
  return fusedCases(
    settings,
    'softmaxBackward',
    'f32',
    `gradcheck rows=${rows},cols=${cols}`,
    async (context, mode) => {
      const x = context.uniform([rows, cols], 'f32', -2, 2);
      const y = context.tensor([rows, cols], 'f32', hostSoftmax(x.values, rows, cols));
      const r = context.uniform([rows, cols], 'f32');
      const dx = context.output([rows, cols], 'f32');
      runFused(context, mode, 'softmaxBackward', (side) => [y[side], r[side], dx[side], rows, cols]);
      await expectGradients(context, ([input]) => project(hostSoftmax(input, rows, cols), r.values), [x], [dx]);
    },
  );
}

function rmsNormGradient(settings: CaseSettings): ConformanceCase[] {
  const [rows, cols, eps] = [3, 6, 1e-5];
  return fusedCases(
    settings,
    'rmsNormBackward',
    'f32',
    `gradcheck rows=${rows},cols=${cols}`,
    async (context, mode) => {
      const x = context.uniform([rows, cols], 'f32', -2, 2);
      const weight = context.uniform([cols], 'f32', 0.5, 1.5);
      const rstd = context.tensor([rows], 'f32', hostRmsNormRstd(x.values, rows, cols, eps));
      const r = context.uniform([rows, cols], 'f32');
      const dx = context.output([rows, cols], 'f32');
      const dWeight = context.output([cols], 'f32');
      runFused(context, mode, 'rmsNormBackward', (side) => [
        x[side],
        weight[side],
        rstd[side],
        r[side],
        dx[side],
        dWeight[side],
        rows,
        cols,
      ]);
      const loss = ([input, scale]: Float64Array[]) => project(hostRmsNorm(input, scale, rows, cols, eps), r.values);
      await expectGradients(context, loss, [x, weight], [dx, dWeight]);
    },
  );
}

function ropeGradient(settings: CaseSettings): ConformanceCase[] {
  const shape = [1, 2, 5, 6];
  const [offset, theta] = [3, 10000];
  return fusedCases(settings, 'rope', 'f32', `gradcheck inverse 1×2×5×6,offset=${offset}`, async (context, mode) => {
    const x = context.uniform(shape, 'f32');
    const r = context.uniform(shape, 'f32');
    const dx = context.output(shape, 'f32');
    runFused(context, mode, 'rope', (side) => [r[side], dx[side], offset, theta, true]);
    await expectGradients(context, ([input]) => project(hostRope(input, shape, offset, theta), r.values), [x], [dx]);
  });
}

function swigluGradient(settings: CaseSettings): ConformanceCase[] {
  const shape = [4, 5];
  return fusedCases(settings, 'swigluBackward', 'f32', 'gradcheck 4×5', async (context, mode) => {
    const gate = context.uniform(shape, 'f32', -4, 4);
    const up = context.uniform(shape, 'f32', -2, 2);
    const r = context.uniform(shape, 'f32');
    const dGate = context.output(shape, 'f32');
    const dUp = context.output(shape, 'f32');
    runFused(context, mode, 'swigluBackward', (side) => [gate[side], up[side], r[side], dGate[side], dUp[side]]);
    await expectGradients(context, ([g, u]) => project(hostSwiglu(g, u), r.values), [gate, up], [dGate, dUp]);
  });
}

const ATTENTION_GRADIENT_GEOMETRIES: AttentionGeometry[] = [
  { batch: 1, headsQ: 4, headsKV: 2, lengthQ: 4, lengthK: 6, headDim: 6, causal: true },
  { batch: 2, headsQ: 2, headsKV: 1, lengthQ: 3, lengthK: 5, headDim: 4, causal: false, mask: 'square' },
];

function attentionGradient(settings: CaseSettings, geometry: AttentionGeometry): ConformanceCase[] {
  return fusedCases(
    settings,
    'attentionBackward',
    'f32',
    `gradcheck ${describeAttention(geometry)}`,
    async (context, mode) => {
      const { batch, headsQ, lengthQ, headDim } = geometry;
      const { q, k, v, mask } = attentionInputs(context, geometry, 'f32');
      const params: AttentionParams = attentionParams(geometry);
      const out = context.output([batch, headsQ, lengthQ, headDim], 'f32');
      const lse = context.output([batch, headsQ, lengthQ], 'f32');
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
      const r = context.uniform(out.shape, 'f32');
      const [dq, dk, dv] = [
        context.output(q.shape, 'f32'),
        context.output(k.shape, 'f32'),
        context.output(v.shape, 'f32'),
      ];
      runFused(context, mode, 'attentionBackward', (side) => [
        q[side],
        k[side],
        v[side],
        pickMask(mask, side),
        out[side],
        lse[side],
        r[side],
        dq[side],
        dk[side],
        dv[side],
        params,
      ]);
      const loss = ([qValues, kValues, vValues]: Float64Array[]) =>
        project(
          hostAttention(qValues, kValues, vValues, mask?.dense ?? null, geometry, params.scale, params.causal),
          r.values,
        );
      await expectGradients(context, loss, [q, k, v], [dq, dk, dv]);
    },
  );
}

function crossEntropyGradient(settings: CaseSettings): ConformanceCase[] {
  const [rows, classes, scale] = [5, 7, 0.2];
  return fusedCases(
    settings,
    'crossEntropyBackward',
    'f32',
    `gradcheck rows=${rows},classes=${classes},scale=${scale}`,
    async (context, mode) => {
      const logits = context.uniform([rows, classes], 'f32', -3, 3);
      const targetValues = context.random
        .integers(rows, 0, classes)
        .map((target, row) => (row === 2 ? IGNORE_INDEX : target));
      const targets = context.tensor([rows], 'i32', targetValues);
      const dLogits = context.output([rows, classes], 'f32');
      runFused(context, mode, 'crossEntropyBackward', (side) => [
        logits[side],
        targets[side],
        dLogits[side],
        rows,
        classes,
        IGNORE_INDEX,
        scale,
      ]);
      const loss = ([input]: Float64Array[]) =>
        scale *
        hostCrossEntropy(input, targetValues, rows, classes, IGNORE_INDEX).reduce((sum, value) => sum + value, 0);
      await expectGradients(context, loss, [logits], [dLogits]);
    },
  );
}

/** Every gradient-check case (f32). */
export function gradientCases(settings: CaseSettings): ConformanceCase[] {
  return [
    ...softmaxGradient(settings),
    ...rmsNormGradient(settings),
    ...ropeGradient(settings),
    ...swigluGradient(settings),
    ...ATTENTION_GRADIENT_GEOMETRIES.flatMap((geometry) => attentionGradient(settings, geometry)),
    ...crossEntropyGradient(settings),
  ];
}
