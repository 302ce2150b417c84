// kernels/reduce.cu — sum, max, min, argmax and argmin over the middle axis of [outer, size, inner].
//
// Algorithm: with inner == 1 and long rows, one 256-thread block per row (grid-stride over rows):
// each thread folds a strided slice, warps combine with __shfl_down_sync, warp leaders meet in
// shared memory, warp 0 combines the leaders. Otherwise one thread per output folds its column
// sequentially (reads are coalesced across inner). An accumulator type per (op, float|int)
// defines identity, combine and store, so both shapes share the arithmetic.
// Layout: x contiguous [outer, size, inner]; out contiguous [outer, inner].
// Numerics: float dtypes accumulate in f32 and round once; i32 sums wrap modulo 2³²; max/min
// propagate NaN; argmax/argmin return the first NaN's index if any, else the first index of the
// extremum (the combine is a total order, so the tree order does not change the answer).
#include <cstdint>

#include "numerics.cuh"
#include "op_codes.h"
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
  __device__ static State load(const void* x, int, Index offset, Index) { return static_cast<std::uint32_t>(load_i32(x, offset)); }
  __device__ static State combine(State a, State b) { return a + b; }
  __device__ static State shuffle_down(State s, int offset) { return __shfl_down_sync(0xffffffffu, s, offset); }
  __device__ static void store(void* out, int dtype, Index i, State s) { store_i32(out, dtype, i, static_cast<std::int32_t>(s)); }
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
    if constexpr (Float) return State{Max ? -INFINITY : INFINITY, kNoIndex};
    else return State{Max ? (-2147483647 - 1) : 2147483647, kNoIndex};
  }
  __device__ static State load(const void* x, int dtype, Index offset, Index position) {
    if constexpr (Float) return State{load_float(x, dtype, offset), position};
    else return State{load_i32(x, offset), position};
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
  __device__ static void store(void* out, int, Index i, State s) { static_cast<std::int32_t*>(out)[i] = static_cast<std::int32_t>(s.index); }
};

template <typename Accumulator>
__device__ __forceinline__ typename Accumulator::State warp_reduce(typename Accumulator::State state) {
  for (int offset = 16; offset > 0; offset /= 2) state = Accumulator::combine(state, Accumulator::shuffle_down(state, offset));
  return state;
}

template <typename Accumulator>
__global__ void __launch_bounds__(kThreads) reduce_rows_kernel(const void* x, int dtype, void* out, int out_dtype, Index outer, Index size) {
  using State = typename Accumulator::State;
  __shared__ State partial[kThreads / 32];
  const unsigned lane = threadIdx.x % 32;
  const unsigned warp = threadIdx.x / 32;
  for (Index row = blockIdx.x; row < outer; row += gridDim.x) {
    State state = Accumulator::identity();
    for (Index k = threadIdx.x; k < size; k += blockDim.x) state = Accumulator::combine(state, Accumulator::load(x, dtype, row * size + k, k));
    state = warp_reduce<Accumulator>(state);
    if (lane == 0) partial[warp] = state;
    __syncthreads();
    if (warp == 0) {
      state = lane < blockDim.x / 32 ? partial[lane] : Accumulator::identity();
      state = warp_reduce<Accumulator>(state);
      if (lane == 0) Accumulator::store(out, out_dtype, row, state);
    }
    __syncthreads();  // partial[] is reused by the next row
  }
}

template <typename Accumulator>
__global__ void __launch_bounds__(kThreads) reduce_columns_kernel(const void* x, int dtype, void* out, int out_dtype, Index outer, Index size,
                                                                  Index inner) {
  using State = typename Accumulator::State;
  const Index outputs = outer * inner;
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index output = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; output < outputs; output += stride) {
    const Index block = output / inner;
    const Index column = output % inner;
    State state = Accumulator::identity();
    for (Index k = 0; k < size; k++) state = Accumulator::combine(state, Accumulator::load(x, dtype, (block * size + k) * inner + column, k));
    Accumulator::store(out, out_dtype, output, state);
  }
}

template <typename Accumulator>
cudaError_t launch_with(const LaunchContext& context, const char* name, int dtype, const void* x, int out_dtype, void* out, Index outer, Index size,
                        Index inner) {
  if (inner == 1 && size >= 64) {
    const dim3 blocks(static_cast<unsigned>(outer < context.max_blocks ? outer : context.max_blocks));
    return vendor::launch(name, reduce_rows_kernel<Accumulator>, blocks, dim3(kThreads), 0, context.stream, x, dtype, out, out_dtype, outer, size);
  }
  return vendor::launch(name, reduce_columns_kernel<Accumulator>, dim3(grid_for(outer * inner, kThreads, context.max_blocks)), dim3(kThreads), 0,
                        context.stream, x, dtype, out, out_dtype, outer, size, inner);
}

}  // namespace

cudaError_t launch_reduce(const LaunchContext& context, int op, int dtype, const void* x, int out_dtype, void* out, Index outer, Index size, Index inner) {
  if (outer * inner == 0) return cudaSuccess;
  const bool integer = dtype == kI32;
  switch (op) {
    case kSum:
      return integer ? launch_with<IntSum>(context, "reduce_kernel<sum,i32>", dtype, x, out_dtype, out, outer, size, inner)
                     : launch_with<FloatSum>(context, "reduce_kernel<sum>", dtype, x, out_dtype, out, outer, size, inner);
    case kMax:
      return integer ? launch_with<IntExtremum<true>>(context, "reduce_kernel<max,i32>", dtype, x, out_dtype, out, outer, size, inner)
                     : launch_with<FloatExtremum<true>>(context, "reduce_kernel<max>", dtype, x, out_dtype, out, outer, size, inner);
    case kMin:
      return integer ? launch_with<IntExtremum<false>>(context, "reduce_kernel<min,i32>", dtype, x, out_dtype, out, outer, size, inner)
                     : launch_with<FloatExtremum<false>>(context, "reduce_kernel<min>", dtype, x, out_dtype, out, outer, size, inner);
    case kArgmax:
      return integer ? launch_with<ArgExtremum<true, false>>(context, "reduce_kernel<argmax,i32>", dtype, x, out_dtype, out, outer, size, inner)
                     : launch_with<ArgExtremum<true, true>>(context, "reduce_kernel<argmax>", dtype, x, out_dtype, out, outer, size, inner);
    default:
      return integer ? launch_with<ArgExtremum<false, false>>(context, "reduce_kernel<argmin,i32>", dtype, x, out_dtype, out, outer, size, inner)
                     : launch_with<ArgExtremum<false, true>>(context, "reduce_kernel<argmin>", dtype, x, out_dtype, out, outer, size, inner);
  }
}

}  // namespace kiln
