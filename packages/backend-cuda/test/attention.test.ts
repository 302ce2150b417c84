// Flash attention on the simulator beyond the conformance kit: shapes with several query and key
// blocks (T = 300), head dim 128, GQA 8/2, causal with Tq < Tk, padding and dense masks with
// empty rows, both kernel families (SIMT f32; tensor-core f16/bf16 on gpu-sim's mma.sync, ldmatrix
// and cp.async emulation, which reports a read of a K/V stage before its copy landed), partial
// tiles in every dimension of the double-buffered f16/bf16 kernels. Every
// output is compared with the float64 reference backend (run in f32 storage on the same rounded
// inputs, so only the kernel's own error is measured) and f32 results also with backend-cpu.
// Also: the kit runs attention natively; two runs are bit-identical; head dims above 128 go
// through core's composition; empty sequences; no scratch leaks; typed errors for bad calls.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createCpuBackend } from '@kiln/backend-cpu';
import { DTypeError, InvalidArgumentError, ShapeError, type DType, type TensorRef } from '@kiln/core';
import { createReferenceBackend, supportMatrix } from '@kiln/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { findPackageRoot, simulatorBuildPath } from '../src/native/load-addon.js';
import { createSimulatedCudaBackend } from '../src/simulator.js';
import { makeInputs, maxAbs, maxAbsError, runAttention, type Geometry, type Results } from './attention-support.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

/** Allowed max |error| relative to the largest |value| of each output, per dtype (f32 accumulation, one rounding to the dtype). */
const RELATIVE_LIMIT: Record<DType, number> = { f32: 1e-5, f16: 2e-3, bf16: 1.6e-2, i32: 0 };

interface Problem {
  name: string;
  dtype: DType;
  geometry: Geometry;
  /** Also compare with backend-cpu (f32 only). */
  cpu?: boolean;
}

const PROBLEMS: Problem[] = [
  {
    name: 'GQA 8/2, T=300, D=128, causal',
    dtype: 'f32',
    geometry: { batch: 1, headsQ: 8, headsKV: 2, lengthQ: 300, lengthK: 300, headDim: 128, causal: true },
    cpu: true,
  },
  {
    name: 'GQA 8/2, T=300, D=128, causal',
    dtype: 'bf16',
    geometry: { batch: 1, headsQ: 8, headsKV: 2, lengthQ: 300, lengthK: 300, headDim: 128, causal: true },
  },
  {
    name: 'Tq=70 < Tk=200, D=64, causal, padding mask, scale 0.3',
    dtype: 'f16',
    geometry: {
      batch: 2,
      headsQ: 4,
      headsKV: 1,
      lengthQ: 70,
      lengthK: 200,
      headDim: 64,
      causal: true,
      mask: 'padding',
      scale: 0.3,
    },
  },
  {
    name: 'Tq=65, Tk=130, D=36 (unaligned rows), dense mask with empty rows',
    dtype: 'bf16',
    geometry: { batch: 2, headsQ: 2, headsKV: 2, lengthQ: 65, lengthK: 130, headDim: 36, causal: false, mask: 'dense' },
  },
  // tile_order groups the blocks by 8 heads: 9 heads (batch 3 × 3) leave one head in the second group.
  {
    name: '9 query and kv heads (batch 3 × 3), Tq=Tk=200, D=64, causal',
    dtype: 'bf16',
    geometry: { batch: 3, headsQ: 3, headsKV: 3, lengthQ: 200, lengthK: 200, headDim: 64, causal: true },
  },
  {
    name: '9 query heads over 3 kv heads (batch 3, GQA 3/1), Tq=Tk=130, D=32, causal',
    dtype: 'f32',
    geometry: { batch: 3, headsQ: 3, headsKV: 1, lengthQ: 130, lengthK: 130, headDim: 32, causal: true },
  },
  // The Hopper forward is persistent (4 blocks on the simulator): with 9 heads, a block walks tiles
  // with keys, then tiles no row of which sees a key (nothing loaded), then group 2's tile with keys.
  {
    name: '9 query heads (GQA 9/3), Tq=300 > Tk=40, D=64, causal: tiles without keys between tiles with keys',
    dtype: 'bf16',
    geometry: { batch: 1, headsQ: 9, headsKV: 3, lengthQ: 300, lengthK: 40, headDim: 64, causal: true },
  },
  {
    name: 'Tq=97 > Tk=80, D=48, causal (rows without keys)',
    dtype: 'f32',
    geometry: { batch: 1, headsQ: 3, headsKV: 3, lengthQ: 97, lengthK: 80, headDim: 48, causal: true },
    cpu: true,
  },
  // Partial tiles in every dimension for the double-buffered tensor-core kernels: query tiles (64
  // forward / dQ, 32 dK/dV), key tiles (64), head dim inside its bucket; enough tiles that both
  // K/V (and q/dO) stages are reused several times.
  {
    name: 'GQA 6/2, Tq=150, Tk=270, D=104 (bucket 128, partial chunks), 5 key tiles',
    dtype: 'f16',
    geometry: { batch: 1, headsQ: 6, headsKV: 2, lengthQ: 150, lengthK: 270, headDim: 104, causal: false },
  },
  {
    name: 'Tq=100 > Tk=77, D=24 (bucket 32, 4-chunk swizzle), causal, 2 batches',
    dtype: 'bf16',
    geometry: { batch: 2, headsQ: 2, headsKV: 1, lengthQ: 100, lengthK: 77, headDim: 24, causal: true },
  },
  {
    name: 'Tq=33 < Tk=193, D=40 (bucket 64), causal, padding mask',
    dtype: 'f16',
    geometry: {
      batch: 2,
      headsQ: 2,
      headsKV: 2,
      lengthQ: 33,
      lengthK: 193,
      headDim: 40,
      causal: true,
      mask: 'padding',
    },
  },
];

describe.skipIf(skipReason !== undefined)(
  `flash attention on the CUDA simulator${skipReason ? ` (${skipReason})` : ''}`,
  () => {
    const backend = createSimulatedCudaBackend();
    const reference = createReferenceBackend();
    const cpu = createCpuBackend();
    afterAll(() => {
      backend.dispose();
      reference.dispose?.();
      cpu.dispose?.();
    });

    it('runs attention and attentionBackward natively (no composition) in every float dtype', () => {
      const rows = supportMatrix(backend).filter(
        (row) => row.kernel === 'attention' || row.kernel === 'attentionBackward',
      );
      expect(rows.filter((row) => row.dtype !== 'i32').map((row) => row.status)).toEqual(Array(6).fill('native'));
      expect(backend.capabilities.flashAttention).toBe(true);
    });

    for (const problem of PROBLEMS) {
      it(`matches the float64 reference: ${problem.dtype} ${problem.name}`, async () => {
        const { dtype, geometry } = problem;
        const inputs = makeInputs(geometry, dtype, 1000 + PROBLEMS.indexOf(problem) * 17);
        const expected = await runAttention(reference, 'f32', geometry, inputs);
        const memoryBefore = backend.memory();
        const got = await runAttention(backend, dtype, geometry, inputs, expected);
        const memoryAfter = backend.memory();
        expect([memoryAfter.bufferCount, memoryAfter.allocatedBytes]).toEqual([
          memoryBefore.bufferCount,
          memoryBefore.allocatedBytes,
        ]);
        const figures = compare(got, expected, dtype);
        if (problem.cpu) {
          const fromCpu = await runAttention(cpu, 'f32', geometry, inputs, expected);
          figures.push(
            ...compare(got, fromCpu, dtype).map((figure) => ({ ...figure, output: `${figure.output} vs cpu` })),
          );
        }
        console.log(
          `${dtype} ${problem.name}: max |error| ${figures.map(({ output, error, limit }) => `${output} ${error.toExponential(2)} (limit ${limit.toExponential(1)})`).join(', ')}`,
        );
        for (const { output, error, limit } of figures) expect(error, output).toBeLessThanOrEqual(limit);
        expectEmptyRows(got, geometry, inputs.mask?.emptyRows ?? null);
      });
    }

    const DETERMINISM: { name: string; dtype: DType; geometry: Geometry }[] = [
      {
        name: 'bf16 GQA 4/1, causal, T=130, D=64',
        dtype: 'bf16',
        geometry: { batch: 2, headsQ: 4, headsKV: 1, lengthQ: 130, lengthK: 130, headDim: 64, causal: true },
      },
      {
        name: 'f16 GQA 6/2, Tq=150, Tk=270, D=104',
        dtype: 'f16',
        geometry: { batch: 1, headsQ: 6, headsKV: 2, lengthQ: 150, lengthK: 270, headDim: 104, causal: false },
      },
    ];
    for (const { name, dtype, geometry } of DETERMINISM) {
      it(`gives bit-identical results from run to run (${name}; backward without atomics)`, async () => {
        const inputs = makeInputs(geometry, dtype, 77);
        const first = await runAttention(backend, dtype, geometry, inputs);
        const second = await runAttention(backend, dtype, geometry, inputs);
        for (const output of ['out', 'lse', 'dq', 'dk', 'dv'] as const)
          expect(Buffer.from(second[output].buffer).equals(Buffer.from(first[output].buffer)), output).toBe(true);
      });
    }

    it("runs head dims above 128 through core's composition on the same backend", async () => {
      const geometry: Geometry = {
        batch: 1,
        headsQ: 2,
        headsKV: 1,
        lengthQ: 5,
        lengthK: 9,
        headDim: 160,
        causal: true,
      };
      const inputs = makeInputs(geometry, 'f32', 5);
      const expected = await runAttention(reference, 'f32', geometry, inputs);
      const got = await runAttention(backend, 'f32', geometry, inputs, expected);
      for (const { output, error, limit } of compare(got, expected, 'f32'))
        expect(error, output).toBeLessThanOrEqual(limit);
    });

    it('handles empty sequences: Tk = 0 gives out 0, lse −Inf, dq 0; Tq = 0 gives dk = dv = 0', async () => {
      const noKeys = await runAttention(
        backend,
        'f32',
        { batch: 1, headsQ: 2, headsKV: 1, lengthQ: 3, lengthK: 0, headDim: 8, causal: false },
        makeInputs({ batch: 1, headsQ: 2, headsKV: 1, lengthQ: 3, lengthK: 0, headDim: 8, causal: false }, 'f32', 1),
      );
      expect([...noKeys.out].every((value) => value === 0)).toBe(true);
      expect([...noKeys.lse].every((value) => value === -Infinity)).toBe(true);
      expect([...noKeys.dq].every((value) => value === 0)).toBe(true);
      const geometry: Geometry = { batch: 1, headsQ: 2, headsKV: 1, lengthQ: 0, lengthK: 5, headDim: 8, causal: true };
      const noQueries = await runAttention(backend, 'bf16', geometry, makeInputs(geometry, 'bf16', 2));
      expect([...noQueries.dk, ...noQueries.dv].every((value) => value === 0)).toBe(true);
    });

    it('rejects bad calls with typed errors before reaching native code', () => {
      const buffers: TensorRef['buffer'][] = [];
      const tensor = (shape: number[], dtype: DType = 'f32'): TensorRef => {
        const buffer = backend.alloc(
          Math.max(4, shape.reduce((a, b) => a * b, 1) * (dtype === 'f32' || dtype === 'i32' ? 4 : 2)),
        );
        buffers.push(buffer);
        return { buffer, shape, dtype };
      };
      const [q, k, out, lse] = [tensor([1, 4, 5, 8]), tensor([1, 2, 6, 8]), tensor([1, 4, 5, 8]), tensor([1, 4, 5])];
      const params = { scale: 0.5, causal: false };
      const mask = (shape: number[], dtype: DType = 'f32') => ({
        ...tensor([shape.reduce((a, b) => a * b, 1)], dtype),
        shape,
        strides: [0, 0, 0, 1],
        offset: 0,
      });
      const call =
        (
          overrides: Partial<Record<'q' | 'k' | 'v' | 'out' | 'lse', TensorRef>>,
          extra: { mask?: ReturnType<typeof mask>; params?: unknown } = {},
        ) =>
        () =>
          backend.attention(
            overrides.q ?? q,
            overrides.k ?? k,
            overrides.v ?? k,
            extra.mask ?? null,
            overrides.out ?? out,
            overrides.lse ?? lse,
            (extra.params ?? params) as typeof params,
          );
      expect(call({ k: tensor([1, 3, 6, 8]), v: tensor([1, 3, 6, 8]) })).toThrowError(ShapeError);
      expect(
        call({
          q: tensor([1, 4, 5, 8], 'i32'),
          k: tensor([1, 2, 6, 8], 'i32'),
          v: tensor([1, 2, 6, 8], 'i32'),
          out: tensor([1, 4, 5, 8], 'i32'),
        }),
      ).toThrowError(DTypeError);
      expect(call({ v: tensor([1, 2, 6, 8], 'bf16') })).toThrowError(DTypeError);
      expect(call({ lse: tensor([1, 4, 5], 'bf16') })).toThrowError(DTypeError);
      expect(call({ lse: tensor([1, 4, 6]) })).toThrowError(ShapeError);
      expect(call({ out: tensor([1, 4, 5, 7]) })).toThrowError(ShapeError);
      expect(call({ q: tensor([4, 5, 8]) })).toThrowError(ShapeError);
      expect(call({}, { mask: mask([1, 4, 5, 7]) })).toThrowError(ShapeError);
      expect(call({}, { mask: mask([1, 4, 5, 6], 'bf16') })).toThrowError(DTypeError);
      expect(call({}, { params: { scale: Number.NaN, causal: false } })).toThrowError(InvalidArgumentError);
      expect(call({}, { params: { scale: 1, causal: 'yes' } })).toThrowError(/params\.causal/);
      const [longQ, oneHead] = [tensor([1, 0, 2 ** 30 + 1, 8]), tensor([1, 1, 6, 8])];
      expect(call({ q: longQ, k: oneHead, v: oneHead, out: longQ, lse: tensor([1, 0, 2 ** 30 + 1]) })).toThrow(/2\^30/);
      expect(() =>
        backend.attentionBackward(
          q,
          k,
          k,
          null,
          out,
          lse,
          tensor([1, 4, 5, 8]),
          tensor([1, 4, 5, 8]),
          tensor([1, 2, 6, 9]),
          tensor([1, 2, 6, 8]),
          params,
        ),
      ).toThrowError(ShapeError);
      for (const buffer of buffers) backend.free(buffer);
    });

    it('the native methods refuse every bad call with a typed error (head dim > 128 included), in a child process', () => {
      const script = fileURLToPath(new URL('./fixtures/attention-bad-calls.mjs', import.meta.url));
      const child = spawnSync(process.execPath, [script, simulatorBuildPath(findPackageRoot())], {
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(child.signal).toBeNull();
      expect(child.stderr).toBe('');
      expect(child.status).toBe(0);
      const outcomes = child.stdout
        .trim()
        .split('\n')
        .map(
          (line) =>
            JSON.parse(line) as {
              name: string;
              expectedKind: string | null;
              threw: boolean;
              kind?: string;
              message?: string;
            },
        );
      expect(outcomes.length).toBeGreaterThan(15);
      for (const outcome of outcomes) {
        if (outcome.expectedKind === null) expect(outcome, outcome.name).toMatchObject({ threw: false });
        else {
          expect(outcome, outcome.name).toMatchObject({ threw: true, kind: outcome.expectedKind });
          expect(outcome.message, outcome.name).toMatch(/^cuda backend: attention/);
        }
      }
      expect(outcomes.find((outcome) => outcome.name === 'head dim 160')?.message).toMatch(/limit of 128/);
    });
  },
);

interface Figure {
  output: string;
  /** Largest |got − expected|. */
  error: number;
  /** What it may be: the dtype's relative limit times the output's largest |value| (at least 1). */
  limit: number;
}

function compare(got: Results, expected: Results, dtype: DType): Figure[] {
  return (['out', 'lse', 'dq', 'dk', 'dv'] as const).map((output) => ({
    output,
    error: maxAbsError(got[output], expected[output]),
    // lse is f32 whatever the storage dtype.
    limit: RELATIVE_LIMIT[output === 'lse' ? 'f32' : dtype] * Math.max(maxAbs(expected[output]), 1),
  }));
}

/** Rows the mask empties (and causal rows before the first key) have out 0, lse −Inf, dq 0. */
function expectEmptyRows(results: Results, geometry: Geometry, maskedRows: Set<number> | null): void {
  const { lengthQ, lengthK, headDim, causal } = geometry;
  const rows = results.lse.length;
  for (let row = 0; row < rows; row++) {
    const i = row % lengthQ;
    const empty = (maskedRows?.has(row) ?? false) || (causal && i + (lengthK - lengthQ) < 0);
    if (!empty) continue;
    expect(results.lse[row], `lse of empty row ${row}`).toBe(-Infinity);
    for (let d = 0; d < headDim; d++) {
      expect(results.out[row * headDim + d], `out of empty row ${row}`).toBe(0);
      expect(results.dq[row * headDim + d], `dq of empty row ${row}`).toBe(0);
    }
  }
}
