// The dispatch plan (native/plan/dispatch_plan.cpp), recorded as it is executed: which kernel,
// function constants, grid and threadgroup sizes, buffer binding order and argument words each
// call produces — edge shapes included. The Metal host executes the same records.
import type { StridedView, TensorRef } from '@kiln/core';
import { afterAll, describe, expect, it } from 'vitest';
import type { MetalBackend } from '../src/metal-backend.js';
import type { NativeDispatch } from '../src/native/addon-types.js';
import { UNARY_CODE } from '@kiln/core/native-backend';
import { configureSimulator, createSimulatedMetalBackend } from '../src/simulator.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();

function ref(backend: MetalBackend, shape: number[], dtype: TensorRef['dtype'] = 'f32'): TensorRef {
  const count = shape.reduce((a, b) => a * b, 1);
  const buffer = backend.alloc(count * (dtype === 'f16' || dtype === 'bf16' ? 2 : 4));
  return { buffer, shape, dtype };
}

function view(tensor: TensorRef, shape: number[], strides: number[], offset = 0): StridedView {
  return { ...tensor, shape, strides, offset };
}

function dense(tensor: TensorRef): StridedView {
  const strides = tensor.shape.map((_, dim) => tensor.shape.slice(dim + 1).reduce((a, b) => a * b, 1));
  return { ...tensor, strides, offset: 0 };
}

describe.skipIf(skipReason !== undefined)(`dispatch plan${skipReason ? ` (${skipReason})` : ''}`, () => {
  const backend = createSimulatedMetalBackend();
  afterAll(() => backend.dispose());
  const plan = (call: () => void): NativeDispatch[] => {
    backend.recordDispatches(true);
    call();
    const dispatches = backend.takeDispatches();
    backend.recordDispatches(false);
    return dispatches;
  };

  it('elementwise: one thread per element in threadgroups of 256, the op a function constant', () => {
    for (const [count, groups] of [
      [1, 1],
      [256, 1],
      [257, 2],
      [1000, 4],
    ]) {
      const x = ref(backend, [count]);
      const [dispatch, ...rest] = plan(() => backend.unary('exp', x, x));
      expect(rest).toEqual([]);
      expect(dispatch).toMatchObject({
        kernel: 'unary_f32',
        pipeline: `unary_f32 {kUnaryOp=${UNARY_CODE.get('exp')}}`,
        threadgroups: [groups, 1, 1],
        threads: [256, 1, 1],
        constants: { kUnaryOp: UNARY_CODE.get('exp') },
        what: `unary exp f32 [${count}]`,
      });
      expect(dispatch.bindings.map((binding) => [binding.index, binding.role, binding.kind])).toEqual([
        [0, 'x', 'buffer'],
        [1, 'out', 'buffer'],
        [2, 'args', 'bytes'],
      ]);
      expect(dispatch.bindings[2]).toMatchObject({ type: 'KilnCountArgs', words: [count, 0, 0, 0] });
    }
    expect(plan(() => backend.unary('exp', ref(backend, [0, 3]), ref(backend, [0, 3])))).toEqual([]);
  });

  it('binary: contiguous, broadcast and strided operands are pipeline variants', () => {
    const a = ref(backend, [4, 6]);
    const scalar = ref(backend, []);
    const out = ref(backend, [4, 6]);
    const [contiguous] = plan(() => backend.binary('add', dense(a), view(scalar, [4, 6], [0, 0]), out));
    expect(contiguous.constants).toEqual({ kBinaryOp: 0, kLayoutA: 0, kLayoutB: 1 });
    // Merged to one dim: count 24, rank 1.
    expect(contiguous.bindings[3].words!.slice(0, 5)).toEqual([24, 1, 0, 0, 24]);
    const transposed = ref(backend, [6, 4]);
    const [strided] = plan(() => backend.binary('mul', view(transposed, [4, 6], [1, 4]), dense(a), out));
    expect(strided.constants).toMatchObject({ kLayoutA: 2, kLayoutB: 0 });
    expect(strided.bindings.map((binding) => binding.role)).toEqual(['a', 'b', 'out', 'args']);
  });

  it('splits views of more than 8 unmergeable dims into one dispatch per outer index', () => {
    const shape = [2, 2, 2, 2, 2, 2, 2, 2, 2, 2];
    const strides = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]; // fully transposed: nothing merges
    const source = ref(backend, [1024]);
    const target = ref(backend, shape);
    const dispatches = plan(() => backend.copy(view(source, shape, strides), dense(target)));
    expect(dispatches).toHaveLength(4);
    expect(
      dispatches.every((dispatch) => dispatch.kernel === 'copy_strided_u32' && dispatch.threadgroups[0] === 1),
    ).toBe(true);
    // KilnStridedArgs: count, rank, out_offset, pad, shape[8], strides[3][8], offsets[3].
    const words = dispatches.map((dispatch) => dispatch.bindings[2].words!);
    expect(words.map((w) => [w[0], w[1]])).toEqual([
      [256, 8],
      [256, 8],
      [256, 8],
      [256, 8],
    ]);
    expect(words.map((w) => [w[4 + 8 + 24], w[4 + 8 + 24 + 1]])).toEqual([
      [0, 0],
      [2, 256],
      [1, 512],
      [3, 768],
    ]);
  });

  it('reduce: a threadgroup per row for long rows of the last axis, a thread per output otherwise', () => {
    const x = ref(backend, [3, 100]);
    const [rows] = plan(() => backend.reduce('max', x, ref(backend, [3]), 3, 100, 1));
    expect(rows).toMatchObject({
      kernel: 'reduce_rows_f32',
      threadgroups: [3, 1, 1],
      threads: [256, 1, 1],
      constants: { kReduceOp: 1 },
    });
    const [columns] = plan(() => backend.reduce('argmin', x, ref(backend, [10, 10], 'i32'), 10, 3, 10));
    expect(columns).toMatchObject({
      kernel: 'reduce_columns_f32',
      threadgroups: [1, 1, 1],
      constants: { kReduceOp: 4 },
    });
    expect(columns.bindings[2].words).toEqual([10, 3, 10, 0]);
  });

  it('reduce: few long rows and few long columns run two passes (chunk partials, then a fixed-order combine) picked by the shape', () => {
    const whole = ref(backend, [100000]);
    const [partial, combine, ...rest] = plan(() => backend.reduce('sum', whole, ref(backend, [1]), 1, 100000, 1));
    expect(rest).toEqual([]);
    // 256 threadgroups wanted, but chunks of at least 4096 elements: ⌊100000 / 4096⌋ = 24 chunks of 4167.
    expect(partial).toMatchObject({
      kernel: 'reduce_rows_partial_f32',
      threadgroups: [24, 1, 1],
      threads: [256, 1, 1],
      constants: { kReduceOp: 0 },
    });
    expect(partial.bindings.map((binding) => binding.role)).toEqual(['x', 'partials', 'args']);
    expect(partial.bindings[2].words).toEqual([1, 100000, 1, 24, 4167, 0, 0, 0]);
    expect(combine).toMatchObject({
      kernel: 'reduce_combine_f32',
      threadgroups: [1, 1, 1],
      constants: { kReduceOp: 0 },
    });
    expect(combine.bindings.map((binding) => binding.role)).toEqual(['partials', 'out', 'args']);
    const [rowsPartial] = plan(() =>
      backend.reduce('argmax', ref(backend, [3, 40000], 'bf16'), ref(backend, [3], 'i32'), 3, 40000, 1),
    );
    expect(rowsPartial).toMatchObject({
      kernel: 'reduce_rows_partial_bf16',
      threadgroups: [9, 3, 1],
      constants: { kReduceOp: 3 },
    });
    // A leading-axis sum of a small tensor: 16384 / 8 chunks wanted, at least 32 rows each: ⌊5000 / 32⌋ = 156 → chunks of 33 rows, 152 of them.
    const [columns, columnsCombine] = plan(() =>
      backend.reduce('sum', ref(backend, [5000, 8]), ref(backend, [8]), 1, 5000, 8),
    );
    expect(columns).toMatchObject({
      kernel: 'reduce_columns_partial_f32',
      threadgroups: [Math.ceil((8 * 152) / 256), 1, 1],
    });
    expect(columns.bindings[2].words!.slice(0, 5)).toEqual([1, 5000, 8, 152, 33]);
    expect(columnsCombine.kernel).toBe('reduce_combine_f32');
    // Many rows keep one threadgroup per row.
    expect(
      plan(() => backend.reduce('sum', ref(backend, [300, 10000]), ref(backend, [300]), 300, 10000, 1)).map(
        (d) => d.kernel,
      ),
    ).toEqual(['reduce_rows_f32']);
  });

  it('matmul: GEMV for m = 1, simdgroup-matrix tiles of 32×32 otherwise, threadgroup z the batch', () => {
    const params = { transposeA: false, transposeB: false, batchStrideA: 0, batchStrideB: 0 };
    const a = ref(backend, [3, 33, 70]);
    const b = ref(backend, [70, 65]);
    const [gemv] = plan(() =>
      backend.matmul(a, b, ref(backend, [3, 1, 65]), { ...params, batch: 3, m: 1, n: 65, k: 70, batchStrideA: 70 }),
    );
    expect(gemv).toMatchObject({ kernel: 'matmul_gemv_f32', threadgroups: [1, 1, 3], threads: [256, 1, 1] });
    const [gemvT] = plan(() =>
      backend.matmul(a, b, ref(backend, [1, 65]), { ...params, batch: 1, m: 1, n: 65, k: 70, transposeB: true }),
    );
    expect(gemvT).toMatchObject({
      kernel: 'matmul_gemv_t_f32',
      threadgroups: [9, 1, 1],
      constants: { kTransposeA: false, kTransposeB: true },
    });
    const [tiles] = plan(() =>
      backend.matmul(a, b, ref(backend, [3, 33, 65]), {
        ...params,
        batch: 3,
        m: 33,
        n: 65,
        k: 70,
        batchStrideA: 33 * 70,
      }),
    );
    expect(tiles).toMatchObject({ kernel: 'matmul_simdgroup_f32', threadgroups: [3, 2, 3], threads: [128, 1, 1] });
    expect(tiles.bindings[3].words).toEqual([33, 65, 70, 3, 33 * 70, 0, 0, 0]);
  });

  it('matmul on a GPU without simdgroup matrices (AMD, Intel): 16×16 threadgroup tiles', () => {
    configureSimulator({ simdgroupMatrix: false, family: 'mac2' });
    const amd = createSimulatedMetalBackend();
    configureSimulator({ simdgroupMatrix: true, family: 'apple9' });
    const a = ref(amd, [33, 70]);
    const b = ref(amd, [70, 65]);
    amd.recordDispatches(true);
    amd.matmul(a, b, ref(amd, [33, 65]), {
      batch: 1,
      m: 33,
      n: 65,
      k: 70,
      transposeA: true,
      transposeB: false,
      batchStrideA: 0,
      batchStrideB: 0,
    });
    expect(amd.takeDispatches()[0]).toMatchObject({
      kernel: 'matmul_tiled_f32',
      threadgroups: [5, 3, 1],
      threads: [16, 16, 1],
      constants: { kTransposeA: true },
    });
    amd.dispose();
  });

  it('gather and scatterAdd bind the device error record at [[buffer(4)]]', () => {
    const x = ref(backend, [4, 3], 'f16');
    const indices = ref(backend, [5], 'i32');
    const [gather] = plan(() => backend.gather(x, indices, ref(backend, [5, 3], 'f16'), 1, 4, 3));
    expect(gather.kernel).toBe('gather_u16');
    expect(gather.bindings.map((binding) => [binding.index, binding.role, binding.kind])).toEqual([
      [0, 'x', 'buffer'],
      [1, 'indices', 'buffer'],
      [2, 'out', 'buffer'],
      [3, 'args', 'bytes'],
      [4, 'errors', 'errors'],
    ]);
    expect(gather.bindings[3].words!.slice(0, 5)).toEqual([1, 4, 3, 5, 15]);
    const [scatter] = plan(() =>
      backend.scatterAdd(ref(backend, [5, 3], 'bf16'), indices, ref(backend, [4, 3], 'bf16'), 1, 4, 3),
    );
    expect(scatter.kernel).toBe('scatter_add_bf16');
    // No atomics: one thread per (row range, column); 4 rows, 3 columns → 4 ranges of 1 row.
    expect(scatter.bindings[3].words).toEqual([1, 4, 3, 5, 12, 4, 1, 0]);
    expect(scatter.threadgroups).toEqual([1, 1, 1]);
    const wide = plan(() =>
      backend.scatterAdd(ref(backend, [5, 200]), indices, ref(backend, [50000, 200]), 1, 50000, 200),
    )[0];
    // ⌈65536 / 200⌉ = 328 ranges wanted → ⌈50000 / 328⌉ = 153 rows each → 327 ranges (the last shorter).
    expect(wide.bindings[3].words).toEqual([1, 50000, 200, 5, 65400, 327, 153, 0]);
  });

  it('sumOfSquaresMulti: one chunk dispatch per non-empty tensor into pooled partials, then one total dispatch', () => {
    const tensors = [ref(backend, [10000]), ref(backend, [0]), ref(backend, [3], 'bf16')];
    const dispatches = plan(() => backend.sumOfSquaresMulti(tensors, ref(backend, [1])));
    expect(dispatches.map((d) => [d.kernel, d.threadgroups[0], d.threads[0]])).toEqual([
      ['sum_of_squares_chunks_f32', 2, 256],
      ['sum_of_squares_chunks_bf16', 1, 256],
      ['sum_of_squares_total', 1, 256],
    ]);
    expect(dispatches[1].bindings[2].words).toEqual([3, 2, 0, 0]);
    expect(dispatches[2].bindings[2].words).toEqual([3, 0, 0, 0]);
    expect(plan(() => backend.sumOfSquaresMulti([ref(backend, [0])], ref(backend, [1]))).map((d) => d.kernel)).toEqual([
      'fill_u32',
    ]);
  });

  it('adamwMulti: one adamw_multi dispatch per tensor with its own decay; the scale, guard and step scalars as device buffers or the control words', () => {
    const params = [ref(backend, [10], 'bf16'), ref(backend, [4])];
    const state = () => params.map((p) => ref(backend, [...p.shape]));
    const options = { lr: 0.5, beta1: 0.9, beta2: 0.99, eps: 1e-8, step: 1, weightDecays: [0.1, 0] };
    const [first, second] = plan(() =>
      backend.adamwMulti!(params, [ref(backend, [10]), ref(backend, [4], 'f16')], state(), state(), {
        ...options,
        gradientScale: 0.25,
      }),
    );
    expect([first.kernel, second.kernel]).toEqual(['adamw_multi_bf16_f32', 'adamw_multi_f32_f16']);
    expect(first.bindings.map((binding) => binding.role)).toEqual([
      'param',
      'grad',
      'm',
      'v',
      'args',
      'scale (unused)',
      'guard (unused)',
      'args',
      'scalars (unused)',
    ]);
    const decay = (dispatch: NativeDispatch) =>
      new Float32Array(new Uint32Array(dispatch.bindings[4].words!).buffer)[5];
    expect([decay(first), decay(second)]).toEqual([Math.fround(1 - 0.5 * 0.1), 1]);
    expect(new Float32Array(new Uint32Array(first.bindings[7].words!.slice(0, 1)).buffer)[0]).toBe(0.25);
    // Control words: scale, scale from buffer, guarded, scalars from buffer, decay slot, 3 pads.
    expect(first.bindings[7].words!.slice(1)).toEqual([0, 0, 0, 0, 0, 0, 0]);
    expect(second.bindings[7].words!.slice(1)).toEqual([0, 0, 0, 1, 0, 0, 0]);
    const scale = ref(backend, [1]);
    const [guarded] = plan(() =>
      backend.adamwMulti!(params, [ref(backend, [10]), ref(backend, [4])], state(), state(), {
        ...options,
        gradientScale: scale,
        skipIfNonFinite: scale,
      }),
    );
    expect(guarded.bindings.map((binding) => binding.role).slice(5, 7)).toEqual(['scale', 'guard']);
    expect(guarded.bindings[7].words!.slice(1)).toEqual([1, 1, 0, 0, 0, 0, 0]);
    // options.deviceScalars: bound at [[buffer(8)]] for every tensor, each dispatch naming its decay slot.
    const deviceScalars = ref(backend, [4]);
    const fromScalars = plan(() =>
      backend.adamwMulti!(params, [ref(backend, [10]), ref(backend, [4])], state(), state(), {
        ...options,
        gradientScale: 1,
        deviceScalars,
      }),
    );
    expect(fromScalars.map((dispatch) => dispatch.bindings[8].role)).toEqual(['scalars', 'scalars']);
    expect(fromScalars.map((dispatch) => dispatch.bindings[7].words!.slice(3, 5))).toEqual([
      [1, 0],
      [1, 1],
    ]);
  });

  it('fill rounds the float64 value once on the host; random passes the Philox key, offset and f64 parameters as words', () => {
    const half = ref(backend, [2], 'f16');
    const [fill] = plan(() => backend.fill(half, 1 + 2 ** -11 + 2 ** -30));
    expect(fill).toMatchObject({ kernel: 'fill_u16' });
    expect(fill.bindings[1].words![1]).toBe(0x3c01);
    const [random] = plan(() =>
      backend.random(ref(backend, [10]), { kind: 'uniform', low: -2, high: 3 }, 2 ** 33 + 9, 2 ** 34 + 1),
    );
    expect(random.kernel).toBe('random_uniform_f32');
    // count, key0, key1, pad, offset low/high, low = −2 (0xc0000000_00000000), high − low = 5 (0x40140000_00000000).
    expect(random.bindings[1].words).toEqual([10, 9, 2, 0, 1, 4, 0, 0xc0000000, 0, 0x40140000, 0, 0]);
  });

  it('where picks the kernel by word sizes and tests the condition as bits', () => {
    const condition = ref(backend, [6], 'bf16');
    const [where] = plan(() =>
      backend.where(dense(condition), dense(ref(backend, [6])), dense(ref(backend, [6])), ref(backend, [6])),
    );
    expect(where).toMatchObject({ kernel: 'where_c16_v32', constants: { kConditionKind: 2 } });
  });
  it('attention: one threadgroup per (batch, query head, 32-row block), the head-dim bucket and simdgroup/scalar variant in the kernel name', () => {
    // B=2, Hq=4, Hkv=2, Tq=33 (2 row blocks), Tk=40, D=40 (bucket 64); mask [Tq, Tk] broadcast over batch and heads at offset 5.
    const q = ref(backend, [2, 4, 33, 40], 'f16');
    const k = ref(backend, [2, 2, 40, 40], 'f16');
    const lse = ref(backend, [2, 4, 33]);
    const mask = view(ref(backend, [5 + 33 * 40]), [2, 4, 33, 40], [0, 0, 40, 1], 5);
    const [forward, ...rest] = plan(() => backend.attention(q, k, k, mask, q, lse, { scale: 0.5, causal: true }));
    expect(rest).toEqual([]);
    expect(forward).toMatchObject({
      kernel: 'attention_forward_simdgroup_f16_d64',
      threadgroups: [2 * 2 * 4, 1, 1],
      threads: [128, 1, 1],
      constants: {},
      what: 'attention f16 B=2 Hq=4 Hkv=2 Tq=33 Tk=40 D=40 causal masked',
    });
    expect(forward.bindings.map((binding) => [binding.index, binding.role])).toEqual([
      [0, 'q'],
      [1, 'k'],
      [2, 'v'],
      [3, 'mask'],
      [4, 'out'],
      [5, 'lse'],
      [6, 'args'],
    ]);
    // batch, Hq, Hkv, group, Tq, Tk, D, causal, shift = Tk − Tq, has_mask, mask offset, row blocks per head, mask strides, scale (f32 bits), rows, tokens-major, pad.
    expect(forward.bindings[6]).toMatchObject({
      type: 'KilnAttentionArgs',
      words: [2, 4, 2, 2, 33, 40, 40, 1, 7, 1, 5, 2, 0, 0, 40, 1, 0x3f000000, 0, 0, 0],
    });
    // Tokens-major q [B, Tq, Hq, D], k [B, Tk, Hkv, D]: the same logical sizes and grid, the layout word set.
    const [tokensMajor] = plan(() =>
      backend.attention(
        ref(backend, [2, 33, 4, 40], 'f16'),
        ref(backend, [2, 40, 2, 40], 'f16'),
        ref(backend, [2, 40, 2, 40], 'f16'),
        mask,
        ref(backend, [2, 33, 4, 40], 'f16'),
        lse,
        { scale: 0.5, causal: true, layout: 'tokens-major' },
      ),
    );
    expect(tokensMajor).toMatchObject({ kernel: 'attention_forward_simdgroup_f16_d64', threadgroups: [16, 1, 1] });
    expect(tokensMajor.bindings[6].words).toEqual([
      2, 4, 2, 2, 33, 40, 40, 1, 7, 1, 5, 2, 0, 0, 40, 1, 0x3f000000, 0, 1, 0,
    ]);
    // Without a mask, q is bound as a placeholder the kernel never reads; D = 128 takes the largest bucket, D = 1 the smallest.
    const wide = ref(backend, [1, 1, 3, 128]);
    const [noMask] = plan(() =>
      backend.attention(wide, wide, wide, null, wide, ref(backend, [1, 1, 3]), { scale: 1, causal: false }),
    );
    expect(noMask).toMatchObject({ kernel: 'attention_forward_simdgroup_f32_d128', threadgroups: [1, 1, 1] });
    expect(noMask.bindings[3].role).toBe('mask (none: placeholder)');
    const narrow = ref(backend, [1, 1, 3, 1], 'bf16');
    expect(
      plan(() =>
        backend.attention(narrow, narrow, narrow, null, narrow, ref(backend, [1, 1, 3]), { scale: 1, causal: false }),
      )[0].kernel,
    ).toBe('attention_forward_simdgroup_bf16_d32');
    // Tq = 0: nothing to run.
    const empty = ref(backend, [1, 2, 0, 8]);
    expect(
      plan(() =>
        backend.attention(
          empty,
          ref(backend, [1, 1, 4, 8]),
          ref(backend, [1, 1, 4, 8]),
          null,
          empty,
          ref(backend, [1, 2, 0]),
          { scale: 1, causal: true },
        ),
      ),
    ).toEqual([]);
  });

  it('attentionBackward: the delta kernel, then dK/dV per 32-key block of each kv head, then dQ per 32-row block (simdgroup matrices: 128 threads)', () => {
    const q = ref(backend, [1, 4, 40, 16]);
    const k = ref(backend, [1, 2, 70, 16]);
    const lse = ref(backend, [1, 4, 40]);
    const dispatches = plan(() =>
      backend.attentionBackward(q, k, k, null, q, lse, q, q, k, k, { scale: 0.25, causal: true }),
    );
    expect(dispatches.map((dispatch) => [dispatch.kernel, dispatch.threadgroups, dispatch.threads])).toEqual([
      ['attention_delta_f32', [1, 1, 1], [256, 1, 1]],
      ['attention_backward_kv_simdgroup_f32_d32', [3 * 2, 1, 1], [128, 1, 1]],
      ['attention_backward_q_simdgroup_f32_d32', [2 * 4, 1, 1], [128, 1, 1]],
    ]);
    expect(dispatches[0].bindings.map((binding) => binding.role)).toEqual(['out', 'dOut', 'delta', 'args']);
    expect(dispatches[1].bindings.map((binding) => binding.role)).toEqual([
      'q',
      'k',
      'v',
      'mask (none: placeholder)',
      'dOut',
      'lse',
      'delta',
      'dk',
      'dv',
      'args',
    ]);
    expect(dispatches[2].bindings.map((binding) => binding.role)).toEqual([
      'q',
      'k',
      'v',
      'mask (none: placeholder)',
      'dOut',
      'lse',
      'delta',
      'dq',
      'args',
    ]);
    // rows = B·Hq·Tq for the delta kernel; blocks per head ⌈Tk / 32⌉ for dK/dV and ⌈Tq / 32⌉ for dQ.
    expect(dispatches[0].bindings[3].words?.[17]).toBe(160);
    expect(dispatches[1].bindings[9].words?.[11]).toBe(3);
    expect(dispatches[2].bindings[8].words?.[11]).toBe(2);
  });

  it('attention on a GPU without simdgroup matrices: the scalar kernels, 32 threads (one row or key each)', () => {
    configureSimulator({ simdgroupMatrix: false, family: 'mac2' });
    const amd = createSimulatedMetalBackend();
    configureSimulator({ simdgroupMatrix: true, family: 'apple9' });
    const q = ref(amd, [1, 2, 65, 64]);
    const lse = ref(amd, [1, 2, 65]);
    amd.recordDispatches(true);
    amd.attention(q, q, q, null, q, lse, { scale: 1, causal: false });
    expect(amd.takeDispatches()[0]).toMatchObject({
      kernel: 'attention_forward_scalar_f32_d64',
      threadgroups: [3 * 2, 1, 1],
      threads: [32, 1, 1],
    });
    amd.attentionBackward(q, q, q, null, q, lse, q, q, q, q, { scale: 1, causal: false });
    expect(amd.takeDispatches().map((dispatch) => [dispatch.kernel, dispatch.threads])).toEqual([
      ['attention_delta_f32', [256, 1, 1]],
      ['attention_backward_kv_scalar_f32_d64', [32, 1, 1]],
      ['attention_backward_q_scalar_f32_d64', [32, 1, 1]],
    ]);
    amd.dispose();
  });

  it('fused row kernels: one threadgroup per row, 32–256 threads by row length, the softmax kind a function constant', () => {
    for (const [cols, threads] of [
      [1, 32],
      [128, 32],
      [129, 64],
      [600, 256],
      [5000, 256],
    ] as const) {
      const x = ref(backend, [3, cols]);
      const [softmax, ...rest] = plan(() => backend.softmax(x, x, 3, cols));
      expect(rest).toEqual([]);
      expect(softmax).toMatchObject({
        kernel: 'softmax_rows_f32',
        pipeline: 'softmax_rows_f32 {kSoftmaxKind=0}',
        threadgroups: [3, 1, 1],
        threads: [threads, 1, 1],
        what: `softmax f32 [3, ${cols}] as [3, ${cols}]`,
      });
      expect(softmax.bindings.map((binding) => [binding.index, binding.role, binding.kind])).toEqual([
        [0, 'x', 'buffer'],
        [1, 'out', 'buffer'],
        [2, 'args', 'bytes'],
      ]);
      expect(softmax.bindings[2]).toMatchObject({ type: 'KilnRowsArgs', words: [3, cols, 0, 0] });
    }
    const half = ref(backend, [2, 8], 'f16');
    expect(plan(() => backend.logSoftmax(half, half, 2, 8))[0]).toMatchObject({
      kernel: 'softmax_rows_f16',
      constants: { kSoftmaxKind: 1 },
    });
    expect(
      plan(() => backend.softmaxBackward(half, half, half, 2, 8))[0].bindings.map((binding) => binding.role),
    ).toEqual(['y', 'dy', 'dx', 'args']);
    // Rows beyond 65 535 threadgroups grid-stride.
    const tall = ref(backend, [70000, 1]);
    expect(plan(() => backend.softmax(tall, tall, 70000, 1))[0].threadgroups).toEqual([65535, 1, 1]);
    expect(plan(() => backend.softmax(ref(backend, [0, 4]), ref(backend, [0, 4]), 0, 4))).toEqual([]);
  });

  it('norms: eps in the row arguments as f32 bits, rstd f32; rmsNormBackward sums dWeight in fixed row chunks', () => {
    const [rows, cols] = [300, 70];
    const x = ref(backend, [rows, cols], 'bf16');
    const weight = ref(backend, [cols], 'bf16');
    const rstd = ref(backend, [rows]);
    const [norm] = plan(() => backend.rmsNorm(x, weight, x, rstd, rows, cols, 1e-5));
    expect(norm).toMatchObject({ kernel: 'rms_norm_rows_bf16', threads: [32, 1, 1] });
    expect(norm.bindings[4].words).toEqual([rows, cols, new Uint32Array(new Float32Array([1e-5]).buffer)[0], 0]);
    const dWeight = ref(backend, [cols]);
    const before = backend.memory().bufferCount;
    const backward = plan(() => backend.rmsNormBackward(x, weight, rstd, x, x, dWeight, rows, cols));
    // 300 rows → 5 chunks of 60 rows: dx, the per-chunk column sums into a scratch buffer, then the sum of the chunks.
    expect(backward.map((dispatch) => [dispatch.kernel, dispatch.threadgroups, dispatch.threads])).toEqual([
      ['rms_norm_backward_rows_bf16', [rows, 1, 1], [32, 1, 1]],
      ['rms_norm_weight_gradient_bf16', [3, 5, 1], [32, 8, 1]],
      ['sum_column_chunks', [1, 1, 1], [256, 1, 1]],
    ]);
    // The scratch comes from the pool (its size class: at least 5 chunks × 70 f32).
    expect(backward[1].bindings[3].role).toBe('scratch');
    expect(backward[1].bindings[3].bufferBytes).toBeGreaterThanOrEqual(5 * cols * 4);
    expect(backward[1].bindings[4]).toMatchObject({ type: 'KilnColumnSumArgs', words: [rows, cols, 60, 5] });
    expect(backend.memory().bufferCount).toBe(before);
    const small = plan(() =>
      backend.rmsNormBackward(
        ref(backend, [4, 8]),
        ref(backend, [8]),
        ref(backend, [4]),
        ref(backend, [4, 8]),
        ref(backend, [4, 8]),
        ref(backend, [8]),
        4,
        8,
      ),
    );
    expect(small.map((dispatch) => dispatch.kernel)).toEqual([
      'rms_norm_backward_rows_f32',
      'rms_norm_weight_gradient_f32',
    ]);
    expect(small[1].bindings[3].role).toBe('dWeight');
    // No rows: dWeight is zeroed.
    expect(
      plan(() =>
        backend.rmsNormBackward(
          ref(backend, [0, 8]),
          ref(backend, [8]),
          ref(backend, [0]),
          ref(backend, [0, 8]),
          ref(backend, [0, 8]),
          ref(backend, [8]),
          0,
          8,
        ),
      ).map((dispatch) => dispatch.kernel),
    ).toEqual(['fill_u32']);
    const [layer] = plan(() =>
      backend.layerNorm(ref(backend, [2, 6]), ref(backend, [6]), ref(backend, [6]), ref(backend, [2, 6]), 2, 6, 1e-3),
    );
    expect(layer.bindings.map((binding) => binding.role)).toEqual(['x', 'weight', 'bias', 'out', 'args']);
  });

  it('layerNormBackward: dx and the row statistics by rows, then dWeight and dBias by columns in fixed row chunks', () => {
    const [rows, cols] = [300, 70];
    const x = ref(backend, [rows, cols]);
    const weight = ref(backend, [cols]);
    const [dWeight, dBias] = [ref(backend, [cols]), ref(backend, [cols])];
    const before = backend.memory().bufferCount;
    const backward = plan(() => backend.layerNormBackward(x, weight, x, x, dWeight, dBias, rows, cols, 1e-3));
    // 300 rows → 5 chunks of 60: dx, both partial column sums in one kernel, then each sum of the chunks.
    expect(backward.map((dispatch) => [dispatch.kernel, dispatch.threadgroups, dispatch.threads])).toEqual([
      ['layer_norm_backward_rows_f32', [rows, 1, 1], [32, 1, 1]],
      ['layer_norm_parameter_gradient_f32', [3, 5, 1], [32, 8, 1]],
      ['sum_column_chunks', [1, 1, 1], [256, 1, 1]],
      ['sum_column_chunks', [1, 1, 1], [256, 1, 1]],
    ]);
    expect(backward[0].bindings.map((binding) => binding.role)).toEqual(['x', 'weight', 'dy', 'dx', 'stats', 'args']);
    expect(backward[0].bindings[5].words).toEqual([rows, cols, new Uint32Array(new Float32Array([1e-3]).buffer)[0], 0]);
    const columns = backward[1].bindings;
    expect(columns.map((binding) => binding.role)).toEqual([
      'x',
      'stats',
      'dy',
      'weightPartials',
      'biasPartials',
      'args',
    ]);
    expect(columns[5]).toMatchObject({ type: 'KilnColumnSumArgs', words: [rows, cols, 60, 5] });
    // One pooled scratch: the statistics (2 f32 a row), then dWeight's and dBias's partials (5 chunks × 70 f32 each).
    expect(columns.slice(1, 5).map((binding) => binding.offsetBytes ?? 0)).toEqual([
      0,
      0,
      2 * rows * 4,
      (2 * rows + 5 * cols) * 4,
    ]);
    expect(columns[1].bufferBytes).toBeGreaterThanOrEqual((2 * rows + 10 * cols) * 4);
    expect(backward[2].bindings.map((binding) => [binding.role, binding.offsetBytes ?? 0])).toEqual([
      ['scratch', 2 * rows * 4],
      ['target', 0],
      ['args', 0],
    ]);
    expect(backward[3].bindings[0].offsetBytes).toBe((2 * rows + 5 * cols) * 4);
    expect(backend.memory().bufferCount).toBe(before);
    // One chunk: the column kernel writes dWeight and dBias itself.
    const small = plan(() =>
      backend.layerNormBackward(
        ref(backend, [4, 8], 'bf16'),
        ref(backend, [8], 'bf16'),
        ref(backend, [4, 8], 'bf16'),
        ref(backend, [4, 8], 'bf16'),
        ref(backend, [8]),
        ref(backend, [8]),
        4,
        8,
        1e-5,
      ),
    );
    expect(small.map((dispatch) => dispatch.kernel)).toEqual([
      'layer_norm_backward_rows_bf16',
      'layer_norm_parameter_gradient_bf16',
    ]);
    expect(small[1].bindings.slice(3, 5).map((binding) => binding.role)).toEqual(['dWeight', 'dBias']);
    // No rows: dWeight and dBias are zeroed.
    const empty = plan(() =>
      backend.layerNormBackward(
        ref(backend, [0, 8]),
        ref(backend, [8]),
        ref(backend, [0, 8]),
        ref(backend, [0, 8]),
        ref(backend, [8]),
        ref(backend, [8]),
        0,
        8,
        1e-5,
      ),
    );
    expect(empty.map((dispatch) => dispatch.kernel)).toEqual(['fill_u32', 'fill_u32']);
  });

  it('mixed-precision norms: f32 x with a bf16/f16 out or dy runs the `_f32_<half>` instances, with no cast', () => {
    expect(backend.capabilities.mixedPrecisionNorm).toBe(true);
    expect(backend.capabilities.supports('layerNormBackward', 'f32')).toBe(true);
    const [rows, cols] = [3, 40];
    const x = ref(backend, [rows, cols]);
    const weight = ref(backend, [cols]);
    const rstd = ref(backend, [rows]);
    for (const half of ['bf16', 'f16'] as const) {
      const y = ref(backend, [rows, cols], half);
      expect(plan(() => backend.rmsNorm(x, weight, y, rstd, rows, cols, 1e-5)).map((d) => d.kernel)).toEqual([
        `rms_norm_rows_f32_${half}`,
      ]);
      expect(
        plan(() => backend.rmsNormBackward(x, weight, rstd, y, x, ref(backend, [cols]), rows, cols)).map(
          (d) => d.kernel,
        ),
      ).toEqual([`rms_norm_backward_rows_f32_${half}`, `rms_norm_weight_gradient_f32_${half}`]);
      expect(plan(() => backend.layerNorm(x, weight, weight, y, rows, cols, 1e-5)).map((d) => d.kernel)).toEqual([
        `layer_norm_rows_f32_${half}`,
      ]);
      expect(
        plan(() =>
          backend.layerNormBackward(x, weight, y, x, ref(backend, [cols]), ref(backend, [cols]), rows, cols, 1e-5),
        ).map((d) => d.kernel),
      ).toEqual([`layer_norm_backward_rows_f32_${half}`, `layer_norm_parameter_gradient_f32_${half}`]);
    }
  });

  it('rope: a thread per rotated pair, cos/sin tables in one pooled scratch buffer (f64 angles on the host)', () => {
    const x = ref(backend, [2, 3, 5, 8], 'f16');
    const before = backend.memory().bufferCount;
    const [rope, ...rest] = plan(() => backend.rope(x, x, 7, 10000, true));
    expect(rest).toEqual([]);
    expect(backend.memory().bufferCount).toBe(before);
    expect(rope).toMatchObject({
      kernel: 'rope_f16',
      threadgroups: [1, 1, 1],
      threads: [256, 1, 1],
      what: 'rope f16 [2, 3, 5, 8] inverse',
    });
    expect(rope.bindings.map((binding) => [binding.role, binding.offsetBytes ?? 0])).toEqual([
      ['x', 0],
      ['cos', 0],
      ['sin', 5 * 4 * 4],
      ['out', 0],
      ['args', 0],
    ]);
    // heads (1: heads-major), positions, D/2, pairs.
    expect(rope.bindings[4]).toMatchObject({ type: 'KilnRopeArgs', words: [1, 5, 4, 6 * 5 * 4] });
    // Tokens-major x [B, T, H, D] = [2, 5, 3, 8]: the same pairs, H rows of D between positions.
    const tokens = ref(backend, [2, 5, 3, 8], 'f16');
    const [tokensMajor] = plan(() => backend.rope(tokens, tokens, 7, 10000, false, 'tokens-major'));
    expect(tokensMajor).toMatchObject({ kernel: 'rope_f16', what: 'rope f16 [2, 5, 3, 8] tokens-major' });
    expect(tokensMajor.bindings[4]).toMatchObject({ type: 'KilnRopeArgs', words: [3, 5, 4, 6 * 5 * 4] });
    expect(plan(() => backend.rope(ref(backend, [1, 2, 0, 8]), ref(backend, [1, 2, 0, 8]), 0, 10000, false))).toEqual(
      [],
    );
  });

  it('elementwise fused kernels: swiglu, AdamW by (param, grad) dtypes with f64 scalars rounded once, cross-entropy with the error record', () => {
    const gate = ref(backend, [300]);
    const [swiglu] = plan(() => backend.swiglu(gate, gate, gate));
    expect(swiglu).toMatchObject({ kernel: 'swiglu_f32', threadgroups: [2, 1, 1], threads: [256, 1, 1] });
    expect(
      plan(() => backend.swigluBackward(gate, gate, gate, gate, gate))[0].bindings.map((binding) => binding.role),
    ).toEqual(['gate', 'up', 'dy', 'dGate', 'dUp', 'args']);
    const [adamw] = plan(() =>
      backend.adamw(ref(backend, [10], 'bf16'), ref(backend, [10]), ref(backend, [10]), ref(backend, [10]), {
        lr: 0.01,
        beta1: 0.9,
        beta2: 0.95,
        eps: 1e-8,
        weightDecay: 0.1,
        step: 3,
      }),
    );
    expect(adamw.kernel).toBe('adamw_bf16_f32');
    const scalars = new Float32Array(new Uint32Array(adamw.bindings[4].words!).buffer);
    expect(adamw.bindings[4].words![0]).toBe(10);
    expect([...scalars.slice(1, 9)]).toEqual([
      ...new Float32Array([
        0.9,
        1 - 0.9,
        0.95,
        1 - 0.95,
        1 - 0.01 * 0.1,
        0.01 / (1 - 0.9 ** 3),
        1 / Math.sqrt(1 - 0.95 ** 3),
        1e-8,
      ]),
    ]);
    const logits = ref(backend, [4, 1000], 'f16');
    const targets = ref(backend, [4], 'i32');
    const [loss] = plan(() => backend.crossEntropy(logits, targets, ref(backend, [4]), 4, 1000, -100));
    expect(loss).toMatchObject({ kernel: 'cross_entropy_rows_f16', threadgroups: [4, 1, 1], threads: [256, 1, 1] });
    expect(loss.bindings.map((binding) => [binding.index, binding.role, binding.kind])).toEqual([
      [0, 'logits', 'buffer'],
      [1, 'targets', 'buffer'],
      [2, 'loss', 'buffer'],
      [3, 'args', 'bytes'],
      [4, 'errors', 'errors'],
    ]);
    expect(loss.bindings[3].words!.slice(0, 3)).toEqual([4, 1000, 2 ** 32 - 100]);
    const [gradient] = plan(() => backend.crossEntropyBackward(logits, targets, logits, 4, 1000, -1, 0.25));
    expect(gradient.kernel).toBe('cross_entropy_backward_rows_f16');
    expect(gradient.bindings[3].words).toEqual([
      4,
      1000,
      2 ** 32 - 1,
      new Uint32Array(new Float32Array([0.25]).buffer)[0],
    ]);
  });
});
