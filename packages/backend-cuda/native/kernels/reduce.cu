// kernels/reduce.cu — sum, max, min, argmax and argmin over the middle axis of [outer, size, inner].
//
// Algorithm (every path combines in an order fixed by the shape alone, no atomics, so the result
// has the same bits on every run and on every GPU):
//  - inner == 1, size < 64: one thread per row folds it sequentially.
//  - inner == 1, 64 ≤ size ≤ 1024: one warp per row (8 rows per 256-thread block), lanes fold a
//    strided slice, __shfl_down_sync combines them.
//  - inner == 1, longer rows: when there are enough rows to fill the device (outer ≥ 128) or the
//    row is short (< 16384), one 256-thread block per row (grid-stride over rows): threads fold a
//    strided slice, warps shuffle, warp leaders meet in shared memory. Otherwise two passes: grid
//    (chunks, outer), each block folds one chunk of ≥ 4096 consecutive elements into
//    scratch[row, chunk] (≤ 1024 chunks a row), then one block per row folds its chunks the same way.
//  - inner > 1: one thread per output folds its column (reads coalesced across inner). When there
//    are few outputs (< 16384) and long columns, two passes: thread (chunk, output) folds a chunk of
//    the column into scratch[chunk, output], then one thread per output folds the chunks in order.
// An accumulator type per (op, float|int) defines identity, combine and store, so all shapes share
// the arithmetic. Launch geometry: 256 threads a block; grid-stride grids capped at max_blocks.
// Layout: x contiguous [outer, size, inner]; out contiguous [outer, inner]; scratch holds
// reduce_scratch_bytes(...) bytes (partial states of kPartialBytes each) when a two-pass path runs.
// Numerics: float dtypes accumulate in f32 and round once; i32 sums wrap modulo 2³²; max/min
// propagate NaN; argmax/argmin return the first NaN's index if any, else the first index of the
// extremum (the combine is a total order, so the tree order does not change the answer).
#include <cstdint>

#include "numerics.cuh"
#include "kiln/op_codes.h"
#include "reduce.cuh"

namespace kiln {
namespace {

constexpr int kThreads = 256;
constexpr Index kNoIndex = 0x7fffffffffffffffLL;

struct FloatSum {
  using State = float;
  __device__ static State identity() { return 0.0f; }
  __device__ static State load(const void* x, int dtype, Index offset, Index) { return load_float(x, dtype, offset); }
  __device__ static State combine(State a, State b) { return a + b; }
  __device__ static State shuffle_down(State s, int offset) { return __shfl_down_sync(0xffffffffu, s, offset); }
  __device__ static void store(void* out, int dtype, Index i, State s) { store_float(out, dtype, i, s); }
};

template <bool Max>
struct FloatExtremum {
  using State = float;
  __device__ static State identity() { return Max ? -INFINITY : INFINITY; }
  __device__ static State load(const void* x, int dtype, Index offset, Index) { return load_float(x, dtype, offset); }
  __device__ static State combine(State a, State b) { return Max ? nan_max(a, b) : nan_min(a, b); }
  __device__ static State shuffle_down(State s, int offset) { return __shfl_down_sync(0xffffffffu, s, offset); }
  __device__ static void store(void* out, int dtype, Index i, State s) { store_float(out, dtype, i, s); }
};

struct IntSum {
  using State = std::uint32_t;
  __device__ static State identity() { return 0u; }
  __device__ static State load(const void* x, int, Index offset, Index) {
    return static_cast<std::uint32_t>(load_i32(x, offset));
  }
  __device__ static State combine(State a, State b) { return a + b; }
  __device__ static State shuffle_down(State s, int offset) { return __shfl_down_sync(0xffffffffu, s, offset); }
  __device__ static void store(void* out, int dtype, Index i, State s) {
    store_i32(out, dtype, i, static_cast<std::int32_t>(s));
  }
};

template <bool Max>
struct IntExtremum {
  using State = std::int32_t;
  __device__ static State identity() { return Max ? (-2147483647 - 1) : 2147483647; }
  __device__ static State load(const void* x, int, Index offset, Index) { return load_i32(x, offset); }
  __device__ static State combine(State a, State b) { return Max ? (a > b ? a : b) : (a < b ? a : b); }
  __device__ static State shuffle_down(State s, int offset) { return __shfl_down_sync(0xffffffffu, s, offset); }
  __device__ static void store(void* out, int dtype, Index i, State s) { store_i32(out, dtype, i, s); }
};

template <typename Value>
struct ArgState {
  Value value;
  Index index;
};

/** argmax (Max) / argmin over float (Float) or i32 values; NaN (floats only) wins, first index on ties. */
template <bool Max, bool Float>
struct ArgExtremum {
  using Value = std::conditional_t<Float, float, std::int32_t>;
  using State = ArgState<Value>;
  __device__ static State identity() {
    if constexpr (Float)
      return State{Max ? -INFINITY : INFINITY, kNoIndex};
    else
      return State{Max ? (-2147483647 - 1) : 2147483647, kNoIndex};
  }
  __device__ static State load(const void* x, int dtype, Index offset, Index position) {
    if constexpr (Float)
      return State{load_float(x, dtype, offset), position};
    else
      return State{load_i32(x, offset), position};
  }
  __device__ static State combine(State a, State b) {
    if constexpr (Float) {
      const bool a_nan = a.value != a.value;
      const bool b_nan = b.value != b.value;
      if (a_nan || b_nan) {
        if (a_nan && b_nan) return a.index <= b.index ? a : b;
        return a_nan ? a : b;
      }
    }
    if (Max ? a.value > b.value : a.value < b.value) return a;
    if (Max ? b.value > a.value : b.value < a.value) return b;
    return a.index <= b.index ? a : b;
  }
  __device__ static State shuffle_down(State s, int offset) {
    return State{__shfl_down_sync(0xffffffffu, s.value, offset), __shfl_down_sync(0xffffffffu, s.index, offset)};
  }
  __device__ static void store(void* out, int, Index i, State s) {
    static_cast<std::int32_t*>(out)[i] = static_cast<std::int32_t>(s.index);
  }
};

template <typename Accumulator>
__device__ __forceinline__ typename Accumulator::State warp_reduce(typename Accumulator::State state) {
  for (int offset = 16; offset > 0; offset /= 2)
    state = Accumulator::combine(state, Accumulator::shuffle_down(state, offset));
  return state;
}

/** Combines the states of a kThreads block; the result is valid in thread 0. `partial` has one slot per warp. */
template <typename Accumulator>
__device__ __forceinline__ typename Accumulator::State block_reduce(typename Accumulator::State state,
                                                                    typename Accumulator::State* partial) {
  const unsigned lane = threadIdx.x % 32;
  const unsigned warp = threadIdx.x / 32;
  state = warp_reduce<Accumulator>(state);
  __syncthreads();  // partial[] may still be read by the previous row
  if (lane == 0) partial[warp] = state;
  __syncthreads();
  if (warp == 0) {
    state = lane < blockDim.x / 32 ? partial[lane] : Accumulator::identity();
    state = warp_reduce<Accumulator>(state);
  }
  return state;
}

/** One block per row (grid-stride over rows). */
template <typename Accumulator>
__global__ void __launch_bounds__(kThreads)
    reduce_rows_kernel(const void* x, int dtype, void* out, int out_dtype, Index outer, Index size) {
  using State = typename Accumulator::State;
  __shared__ State partial[kThreads / 32];
  for (Index row = blockIdx.x; row < outer; row += gridDim.x) {
    State state = Accumulator::identity();
    for (Index k = threadIdx.x; k < size; k += blockDim.x)
      state = Accumulator::combine(state, Accumulator::load(x, dtype, row * size + k, k));
    state = block_reduce<Accumulator>(state, partial);
    if (threadIdx.x == 0) Accumulator::store(out, out_dtype, row, state);
  }
}

/** One warp per row (grid-stride over groups of kThreads / 32 rows). */
template <typename Accumulator>
__global__ void __launch_bounds__(kThreads)
    reduce_warp_rows_kernel(const void* x, int dtype, void* out, int out_dtype, Index outer, Index size) {
  using State = typename Accumulator::State;
  const unsigned lane = threadIdx.x % 32;
  const Index warps = kThreads / 32;
  for (Index first = static_cast<Index>(blockIdx.x) * warps; first < outer;
       first += static_cast<Index>(gridDim.x) * warps) {
    const Index row = first + threadIdx.x / 32;
    State state = Accumulator::identity();
    if (row < outer) {
      for (Index k = lane; k < size; k += 32)
        state = Accumulator::combine(state, Accumulator::load(x, dtype, row * size + k, k));
    }
    state = warp_reduce<Accumulator>(state);  // the whole warp runs this (rows past outer fold the identity)
    if (row < outer && lane == 0) Accumulator::store(out, out_dtype, row, state);
  }
}

/**
 * Pass 1 of a long row: block (chunk, row) folds elements [chunk·chunk_size, +chunk_size) into
 * partials[row·chunks + chunk]; rows past the device's grid y are taken in steps of gridDim.y.
 */
template <typename Accumulator>
__global__ void __launch_bounds__(kThreads)
    reduce_row_chunks_kernel(const void* x, int dtype, typename Accumulator::State* partials, Index rows, Index size,
                             Index chunk_size) {
  using State = typename Accumulator::State;
  __shared__ State partial[kThreads / 32];
  const Index begin = static_cast<Index>(blockIdx.x) * chunk_size;
  const Index end = begin + chunk_size < size ? begin + chunk_size : size;
  for (Index row = blockIdx.y; row < rows; row += gridDim.y) {
    State state = Accumulator::identity();
    for (Index k = begin + threadIdx.x; k < end; k += blockDim.x)
      state = Accumulator::combine(state, Accumulator::load(x, dtype, row * size + k, k));
    state = block_reduce<Accumulator>(state, partial);
    if (threadIdx.x == 0) partials[row * gridDim.x + blockIdx.x] = state;
  }
}

/** Pass 2 of a long row: one block per row folds its `chunks` partial states. */
template <typename Accumulator>
__global__ void __launch_bounds__(kThreads)
    reduce_row_partials_kernel(const typename Accumulator::State* partials, void* out, int out_dtype, Index chunks) {
  using State = typename Accumulator::State;
  __shared__ State partial[kThreads / 32];
  const Index row = blockIdx.x;
  State state = Accumulator::identity();
  for (Index chunk = threadIdx.x; chunk < chunks; chunk += blockDim.x)
    state = Accumulator::combine(state, partials[row * chunks + chunk]);
  state = block_reduce<Accumulator>(state, partial);
  if (threadIdx.x == 0) Accumulator::store(out, out_dtype, row, state);
}

/** One thread per output folds rows [k_begin, k_end) of its column; writes out (chunked = false) or partials[chunk, output]. */
template <typename Accumulator, bool Chunked>
__global__ void __launch_bounds__(kThreads)
    reduce_columns_kernel(const void* x, int dtype, void* out, int out_dtype, typename Accumulator::State* partials,
                          Index outer, Index size, Index inner, Index chunks, Index chunk_size) {
  using State = typename Accumulator::State;
  const Index outputs = outer * inner;
  const Index total = outputs * chunks;
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index work = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; work < total; work += stride) {
    const Index chunk = work / outputs;
    const Index output = work % outputs;
    const Index block = output / inner;
    const Index column = output % inner;
    const Index begin = chunk * chunk_size;
    const Index end = begin + chunk_size < size ? begin + chunk_size : size;
    State state = Accumulator::identity();
    for (Index k = begin; k < end; k++)
      state = Accumulator::combine(state, Accumulator::load(x, dtype, (block * size + k) * inner + column, k));
    if constexpr (Chunked)
      partials[chunk * outputs + output] = state;
    else
      Accumulator::store(out, out_dtype, output, state);
  }
}

/** Pass 2 of the chunked column path: one thread per output folds partials[0..chunks, output] in order. */
template <typename Accumulator>
__global__ void __launch_bounds__(kThreads)
    reduce_column_partials_kernel(const typename Accumulator::State* partials, void* out, int out_dtype, Index outputs,
                                  Index chunks) {
  using State = typename Accumulator::State;
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index output = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; output < outputs; output += stride) {
    State state = Accumulator::identity();
    for (Index chunk = 0; chunk < chunks; chunk++)
      state = Accumulator::combine(state, partials[chunk * outputs + output]);
    Accumulator::store(out, out_dtype, output, state);
  }
}

/** Which kernels a reduction runs, decided from the shape alone (so the combine order never depends on the device). */
struct ReducePlan {
  enum Path { kThreadRows, kWarpRows, kBlockRows, kChunkedRows, kColumns, kChunkedColumns } path;
  /** Chunks per row (kChunkedRows) or per column (kChunkedColumns); 1 otherwise. */
  Index chunks;
  /** Elements of a row / column per chunk. */
  Index chunk_size;
};

constexpr Index kMinChunkElements = 4096;
constexpr Index kMaxRowChunks = 1024;
constexpr Index kManyRows = 128;
constexpr Index kLongRow = 16384;
constexpr Index kFewOutputs = 16384;
constexpr Index kMinColumnChunk = 64;

ReducePlan plan_reduce(Index outer, Index size, Index inner) {
  if (inner == 1) {
    if (size < 64) return {ReducePlan::kThreadRows, 1, size};
    if (size <= 1024) return {ReducePlan::kWarpRows, 1, size};
    if (outer >= kManyRows || size < kLongRow) return {ReducePlan::kBlockRows, 1, size};
    Index chunk_size = (size + kMaxRowChunks - 1) / kMaxRowChunks;
    if (chunk_size < kMinChunkElements) chunk_size = kMinChunkElements;
    return {ReducePlan::kChunkedRows, (size + chunk_size - 1) / chunk_size, chunk_size};
  }
  const Index outputs = outer * inner;
  if (outputs >= kFewOutputs || size < 2 * kMinColumnChunk) return {ReducePlan::kColumns, 1, size};
  // Enough (chunk, output) pairs to fill the device, chunks of at least kMinColumnChunk rows.
  Index chunks = (kFewOutputs * 4 + outputs - 1) / outputs;
  if (chunks > size / kMinColumnChunk) chunks = size / kMinColumnChunk;
  const Index chunk_size = (size + chunks - 1) / chunks;
  return {ReducePlan::kChunkedColumns, (size + chunk_size - 1) / chunk_size, chunk_size};
}

template <typename Accumulator>
cudaError_t launch_with(const LaunchContext& context, const char* name, int dtype, const void* x, int out_dtype,
                        void* out, Index outer, Index size, Index inner, void* scratch) {
  using State = typename Accumulator::State;
  static_assert(sizeof(State) <= kPartialBytes, "a partial state must fit its scratch slot");
  const ReducePlan plan = plan_reduce(outer, size, inner);
  const dim3 threads(kThreads);
  State* partials = static_cast<State*>(scratch);
  switch (plan.path) {
    case ReducePlan::kWarpRows:
      return vendor::launch(name, reduce_warp_rows_kernel<Accumulator>,
                            dim3(grid_for(outer * 32, kThreads, context.max_blocks)), threads, 0, context.stream, x,
                            dtype, out, out_dtype, outer, size);
    case ReducePlan::kBlockRows:
      return vendor::launch(name, reduce_rows_kernel<Accumulator>,
                            dim3(static_cast<unsigned>(outer < context.max_blocks ? outer : context.max_blocks)),
                            threads, 0, context.stream, x, dtype, out, out_dtype, outer, size);
    case ReducePlan::kChunkedRows: {
      const cudaError_t error =
          vendor::launch(name, reduce_row_chunks_kernel<Accumulator>,
                         dim3(static_cast<unsigned>(plan.chunks), grid_y_for(outer, context)), threads, 0,
                         context.stream, x, dtype, partials, outer, size, plan.chunk_size);
      if (error != cudaSuccess) return error;
      return vendor::launch(name, reduce_row_partials_kernel<Accumulator>, dim3(static_cast<unsigned>(outer)), threads,
                            0, context.stream, static_cast<const State*>(partials), out, out_dtype, plan.chunks);
    }
    case ReducePlan::kChunkedColumns: {
      const Index outputs = outer * inner;
      const cudaError_t error = vendor::launch(name, reduce_columns_kernel<Accumulator, true>,
                                               dim3(grid_for(outputs * plan.chunks, kThreads, context.max_blocks)),
                                               threads, 0, context.stream, x, dtype, out, out_dtype, partials, outer,
                                               size, inner, plan.chunks, plan.chunk_size);
      if (error != cudaSuccess) return error;
      return vendor::launch(name, reduce_column_partials_kernel<Accumulator>,
                            dim3(grid_for(outputs, kThreads, context.max_blocks)), threads, 0, context.stream,
                            static_cast<const State*>(partials), out, out_dtype, outputs, plan.chunks);
    }
    default:  // kThreadRows and kColumns: one thread per output, the whole axis as one chunk.
      return vendor::launch(name, reduce_columns_kernel<Accumulator, false>,
                            dim3(grid_for(outer * inner, kThreads, context.max_blocks)), threads, 0, context.stream, x,
                            dtype, out, out_dtype, partials, outer, size, inner, Index{1}, size);
  }
}

}  // namespace

std::size_t reduce_scratch_bytes(Index outer, Index size, Index inner) {
  if (outer * inner == 0) return 0;
  const ReducePlan plan = plan_reduce(outer, size, inner);
  if (plan.path != ReducePlan::kChunkedRows && plan.path != ReducePlan::kChunkedColumns) return 0;
  return static_cast<std::size_t>(outer * inner * plan.chunks) * kPartialBytes;
}

cudaError_t launch_reduce(const LaunchContext& context, int op, int dtype, const void* x, int out_dtype, void* out,
                          Index outer, Index size, Index inner, void* scratch) {
  if (outer * inner == 0) return cudaSuccess;
  const bool integer = dtype == kI32;
  switch (op) {
    case KILN_REDUCE_SUM:
      return integer ? launch_with<IntSum>(context, "reduce_kernel<sum,i32>", dtype, x, out_dtype, out, outer, size,
                                           inner, scratch)
                     : launch_with<FloatSum>(context, "reduce_kernel<sum>", dtype, x, out_dtype, out, outer, size,
                                             inner, scratch);
    case KILN_REDUCE_MAX:
      return integer ? launch_with<IntExtremum<true>>(context, "reduce_kernel<max,i32>", dtype, x, out_dtype, out,
                                                      outer, size, inner, scratch)
                     : launch_with<FloatExtremum<true>>(context, "reduce_kernel<max>", dtype, x, out_dtype, out, outer,
                                                        size, inner, scratch);
    case KILN_REDUCE_MIN:
      return integer ? launch_with<IntExtremum<false>>(context, "reduce_kernel<min,i32>", dtype, x, out_dtype, out,
                                                       outer, size, inner, scratch)
                     : launch_with<FloatExtremum<false>>(context, "reduce_kernel<min>", dtype, x, out_dtype, out, outer,
                                                         size, inner, scratch);
    case KILN_REDUCE_ARGMAX:
      return integer ? launch_with<ArgExtremum<true, false>>(context, "reduce_kernel<argmax,i32>", dtype, x, out_dtype,
                                                             out, outer, size, inner, scratch)
                     : launch_with<ArgExtremum<true, true>>(context, "reduce_kernel<argmax>", dtype, x, out_dtype, out,
                                                            outer, size, inner, scratch);
    default:
      return integer ? launch_with<ArgExtremum<false, false>>(context, "reduce_kernel<argmin,i32>", dtype, x, out_dtype,
                                                              out, outer, size, inner, scratch)
                     : launch_with<ArgExtremum<false, true>>(context, "reduce_kernel<argmin>", dtype, x, out_dtype, out,
                                                             outer, size, inner, scratch);
  }
}

}  // namespace kiln
