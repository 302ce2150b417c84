// reduce.metal — sum, max, min, argmax and argmin over the middle axis of x viewed
// [outer, size, inner] (kernels reduce_rows_<dtype>, reduce_columns_<dtype>).
//
// Algorithm: the operation is a function constant (KILN_FC_OP). reduce_rows (inner == 1, long
// rows): one threadgroup of KILN_THREADS per row; each thread folds a strided slice, the
// simdgroup combines with a shuffle-xor butterfly (width from threads_per_simdgroup: 32 on Apple
// GPUs, 32 or 64 on AMD), simdgroup leaders meet in threadgroup memory and simdgroup 0 combines
// them. reduce_columns: one thread per output folds its column in order (reads coalesce across
// inner). Few long rows or few long columns (a whole-tensor sum, a leading-axis sum of a small
// tensor) run in two passes picked by the host from the shape: reduce_rows_partial (one
// threadgroup per (chunk, row)) or reduce_columns_partial (one thread per (chunk, column)) write
// one state per chunk to a scratch [outer, chunks, inner], then reduce_combine folds each
// output's chunks in order. No atomics: the combine order depends on the shape only, so every
// run gives the same bits. The state is (value, index) so one combine serves every operation.
// Layout: x dense [outer, size, inner]; out dense [outer, inner], x's dtype (i32 for arg ops);
// partials: 8-byte states (value bits, index) [outer, chunks, inner].
// Numerics: floats accumulate in f32 and round once; i32 sums wrap modulo 2³²; max/min propagate
// NaN; argmax/argmin return the first NaN's index if any, else the first index of the extremum
// (the combine is a total order, so the tree shape cannot change the answer); an empty axis
// gives the identity (0, −Inf, +Inf; INT_MIN/INT_MAX for i32).
#include "kiln_metal_common.h"

constant int kReduceOp [[function_constant(KILN_FC_OP)]];

inline bool is_arg(int op) { return op == KILN_REDUCE_ARGMAX || op == KILN_REDUCE_ARGMIN; }
inline bool is_max(int op) { return op == KILN_REDUCE_MAX || op == KILN_REDUCE_ARGMAX; }

struct FloatState {
  float value;
  uint index;
};

struct IntState {
  int value;
  uint index;
};

inline FloatState float_identity(int op) {
  FloatState state;
  state.value = op == KILN_REDUCE_SUM ? 0.0f : (is_max(op) ? -INFINITY : INFINITY);
  state.index = 0xffffffffu;
  return state;
}

inline FloatState float_combine(int op, FloatState a, FloatState b) {
  if (op == KILN_REDUCE_SUM) {
    a.value = a.value + b.value;
    return a;
  }
  if (!is_arg(op)) {
    a.value = is_max(op) ? nan_max(a.value, b.value) : nan_min(a.value, b.value);
    return a;
  }
  const bool a_nan = isnan(a.value);
  const bool b_nan = isnan(b.value);
  if (a_nan || b_nan) {
    if (a_nan && b_nan) return a.index <= b.index ? a : b;
    return a_nan ? a : b;
  }
  if (is_max(op) ? a.value > b.value : a.value < b.value) return a;
  if (is_max(op) ? b.value > a.value : b.value < a.value) return b;
  return a.index <= b.index ? a : b;
}

inline IntState int_identity(int op) {
  IntState state;
  state.value = op == KILN_REDUCE_SUM ? 0 : (is_max(op) ? int(0x80000000u) : 0x7fffffff);
  state.index = 0xffffffffu;
  return state;
}

inline IntState int_combine(int op, IntState a, IntState b) {
  if (op == KILN_REDUCE_SUM) {
    a.value = wrap_add(a.value, b.value);
    return a;
  }
  if (!is_arg(op)) {
    a.value = is_max(op) ? max(a.value, b.value) : min(a.value, b.value);
    return a;
  }
  if (is_max(op) ? a.value > b.value : a.value < b.value) return a;
  if (is_max(op) ? b.value > a.value : b.value < a.value) return b;
  return a.index <= b.index ? a : b;
}

/** Per storage type: the state, its identity, combine, load, the simdgroup butterfly and the store. */
template <typename S>
struct Reducer {
  typedef FloatState State;
  static State identity(int op) { return float_identity(op); }
  static State combine(int op, State a, State b) { return float_combine(op, a, b); }
  static State load(S value, uint index) {
    State state;
    state.value = Storage<S>::load(value);
    state.index = index;
    return state;
  }
  static State simd_combine(int op, State state, uint width) {
    for (uint offset = width / 2u; offset > 0u; offset /= 2u) {
      State other;
      other.value = simd_shuffle_xor(state.value, ushort(offset));
      other.index = simd_shuffle_xor(state.index, ushort(offset));
      state = combine(op, state, other);
    }
    return state;
  }
  static void store(int op, device uchar* out, uint position, State state) {
    if (is_arg(op))
      ((device int*)out)[position] = int(state.index);
    else
      ((device S*)out)[position] = Storage<S>::store(state.value);
  }
};

template <>
struct Reducer<int> {
  typedef IntState State;
  static State identity(int op) { return int_identity(op); }
  static State combine(int op, State a, State b) { return int_combine(op, a, b); }
  static State load(int value, uint index) {
    State state;
    state.value = value;
    state.index = index;
    return state;
  }
  static State simd_combine(int op, State state, uint width) {
    for (uint offset = width / 2u; offset > 0u; offset /= 2u) {
      State other;
      other.value = simd_shuffle_xor(state.value, ushort(offset));
      other.index = simd_shuffle_xor(state.index, ushort(offset));
      state = combine(op, state, other);
    }
    return state;
  }
  static void store(int op, device uchar* out, uint position, State state) {
    ((device int*)out)[position] = is_arg(op) ? int(state.index) : state.value;
  }
};

/** Folds values[begin..end) over the threadgroup: threads strided, then the simdgroup butterfly and simdgroup 0; the result is valid in thread 0. */
template <typename S>
inline typename Reducer<S>::State threadgroup_fold(device const S* values, uint begin, uint end,
                                                   threadgroup typename Reducer<S>::State* partial, uint tid,
                                                   uint threads, uint lane, uint simdgroup, uint width,
                                                   uint simdgroups) {
  typedef typename Reducer<S>::State State;
  State state = Reducer<S>::identity(kReduceOp);
  for (uint k = begin + tid; k < end; k += threads)
    state = Reducer<S>::combine(kReduceOp, state, Reducer<S>::load(values[k], k));
  state = Reducer<S>::simd_combine(kReduceOp, state, width);
  if (lane == 0u) partial[simdgroup] = state;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (simdgroup == 0u) {
    state = lane < simdgroups ? partial[lane] : Reducer<S>::identity(kReduceOp);
    state = Reducer<S>::simd_combine(kReduceOp, state, width);
  }
  return state;
}

template <typename S>
kernel void reduce_rows(device const S* x [[buffer(0)]], device uchar* out [[buffer(1)]],
                        constant KilnReduceArgs& args [[buffer(2)]], uint row [[threadgroup_position_in_grid]],
                        uint tid [[thread_index_in_threadgroup]], uint threads [[threads_per_threadgroup]],
                        uint lane [[thread_index_in_simdgroup]], uint simdgroup [[simdgroup_index_in_threadgroup]],
                        uint width [[threads_per_simdgroup]], uint simdgroups [[simdgroups_per_threadgroup]]) {
  threadgroup typename Reducer<S>::State partial[32];
  const typename Reducer<S>::State state = threadgroup_fold<S>(x + row * args.size, 0u, args.size, partial, tid,
                                                               threads, lane, simdgroup, width, simdgroups);
  if (tid == 0u) Reducer<S>::store(kReduceOp, out, row, state);
}

/** Pass 1 of the two-pass row reduce: threadgroup (chunk, row) folds its chunk of the row into partials[row · chunks + chunk]. */
template <typename S>
kernel void reduce_rows_partial(device const S* x [[buffer(0)]],
                                device typename Reducer<S>::State* partials [[buffer(1)]],
                                constant KilnReduceChunkArgs& args [[buffer(2)]],
                                uint2 group [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                                uint2 threads [[threads_per_threadgroup]], uint lane [[thread_index_in_simdgroup]],
                                uint simdgroup [[simdgroup_index_in_threadgroup]], uint width [[threads_per_simdgroup]],
                                uint simdgroups [[simdgroups_per_threadgroup]]) {
  // threads is uint2 like group: MSL wants the grid-position builtins of one kernel in one dimensionality.
  threadgroup typename Reducer<S>::State partial[32];
  const uint begin = group.x * args.chunk_size;
  const uint end = min(begin + args.chunk_size, args.size);
  const typename Reducer<S>::State state = threadgroup_fold<S>(x + group.y * args.size, begin, end, partial, tid,
                                                               threads.x, lane, simdgroup, width, simdgroups);
  if (tid == 0u) partials[group.y * args.chunks + group.x] = state;
}

template <typename S>
kernel void reduce_columns(device const S* x [[buffer(0)]], device uchar* out [[buffer(1)]],
                           constant KilnReduceArgs& args [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  if (gid >= args.outer * args.inner) return;
  const uint block = gid / args.inner;
  const uint column = gid % args.inner;
  typename Reducer<S>::State state = Reducer<S>::identity(kReduceOp);
  for (uint k = 0u; k < args.size; k++) {
    state =
        Reducer<S>::combine(kReduceOp, state, Reducer<S>::load(x[(block * args.size + k) * args.inner + column], k));
  }
  Reducer<S>::store(kReduceOp, out, gid, state);
}

/** Pass 1 of the two-pass column reduce: thread (block, chunk, column) folds its chunk of the column in order into partials [outer, chunks, inner]. */
template <typename S>
kernel void reduce_columns_partial(device const S* x [[buffer(0)]],
                                   device typename Reducer<S>::State* partials [[buffer(1)]],
                                   constant KilnReduceChunkArgs& args [[buffer(2)]],
                                   uint gid [[thread_position_in_grid]]) {
  if (gid >= args.outer * args.chunks * args.inner) return;
  const uint column = gid % args.inner;
  const uint chunk = (gid / args.inner) % args.chunks;
  const uint block = gid / (args.inner * args.chunks);
  const uint end = min((chunk + 1u) * args.chunk_size, args.size);
  typename Reducer<S>::State state = Reducer<S>::identity(kReduceOp);
  for (uint k = chunk * args.chunk_size; k < end; k++) {
    state =
        Reducer<S>::combine(kReduceOp, state, Reducer<S>::load(x[(block * args.size + k) * args.inner + column], k));
  }
  partials[gid] = state;
}

/** Pass 2 of both two-pass reduces: thread (block, column) folds partials [outer, chunks, inner] over the chunks in order and stores. */
template <typename S>
kernel void reduce_combine(device const typename Reducer<S>::State* partials [[buffer(0)]],
                           device uchar* out [[buffer(1)]], constant KilnReduceChunkArgs& args [[buffer(2)]],
                           uint gid [[thread_position_in_grid]]) {
  if (gid >= args.outer * args.inner) return;
  const uint block = gid / args.inner;
  const uint column = gid % args.inner;
  typename Reducer<S>::State state = Reducer<S>::identity(kReduceOp);
  for (uint chunk = 0u; chunk < args.chunks; chunk++)
    state = Reducer<S>::combine(kReduceOp, state, partials[(block * args.chunks + chunk) * args.inner + column]);
  Reducer<S>::store(kReduceOp, out, gid, state);
}

template [[host_name("reduce_rows_f32")]] kernel decltype(reduce_rows<float>) reduce_rows<float>;
template [[host_name("reduce_rows_f16")]] kernel decltype(reduce_rows<half>) reduce_rows<half>;
template [[host_name("reduce_rows_bf16")]] kernel decltype(reduce_rows<bf16>) reduce_rows<bf16>;
template [[host_name("reduce_rows_i32")]] kernel decltype(reduce_rows<int>) reduce_rows<int>;
template [[host_name("reduce_columns_f32")]] kernel decltype(reduce_columns<float>) reduce_columns<float>;
template [[host_name("reduce_columns_f16")]] kernel decltype(reduce_columns<half>) reduce_columns<half>;
template [[host_name("reduce_columns_bf16")]] kernel decltype(reduce_columns<bf16>) reduce_columns<bf16>;
template [[host_name("reduce_columns_i32")]] kernel decltype(reduce_columns<int>) reduce_columns<int>;
template
    [[host_name("reduce_rows_partial_f32")]] kernel decltype(reduce_rows_partial<float>) reduce_rows_partial<float>;
template [[host_name("reduce_rows_partial_f16")]] kernel decltype(reduce_rows_partial<half>) reduce_rows_partial<half>;
template [[host_name("reduce_rows_partial_bf16")]] kernel decltype(reduce_rows_partial<bf16>) reduce_rows_partial<bf16>;
template [[host_name("reduce_rows_partial_i32")]] kernel decltype(reduce_rows_partial<int>) reduce_rows_partial<int>;
template [[host_name(
    "reduce_columns_partial_f32")]] kernel decltype(reduce_columns_partial<float>) reduce_columns_partial<float>;
template [[host_name(
    "reduce_columns_partial_f16")]] kernel decltype(reduce_columns_partial<half>) reduce_columns_partial<half>;
template [[host_name(
    "reduce_columns_partial_bf16")]] kernel decltype(reduce_columns_partial<bf16>) reduce_columns_partial<bf16>;
template [[host_name(
    "reduce_columns_partial_i32")]] kernel decltype(reduce_columns_partial<int>) reduce_columns_partial<int>;
template [[host_name("reduce_combine_f32")]] kernel decltype(reduce_combine<float>) reduce_combine<float>;
template [[host_name("reduce_combine_f16")]] kernel decltype(reduce_combine<half>) reduce_combine<half>;
template [[host_name("reduce_combine_bf16")]] kernel decltype(reduce_combine<bf16>) reduce_combine<bf16>;
template [[host_name("reduce_combine_i32")]] kernel decltype(reduce_combine<int>) reduce_combine<int>;
