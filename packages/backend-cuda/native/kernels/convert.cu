// kernels/convert.cu — strided copy, cast and fill.
//
// Algorithm: grid-stride loops, 256 threads per block. copy moves raw 2- or 4-byte words
// between two strided views (one cudaMemcpyAsync when both are contiguous; a (batched) transpose —
// the operands contiguous along different ones of the last two dims — through 32 × 32 shared
// tiles, so reads and writes are both coalesced; H200: the per-element kernel moved a 4096²
// bf16 transpose at 115 GB/s); cast converts
// contiguous elements: between two different float dtypes with both buffers 16-byte aligned, 8
// elements a thread at a time (16-byte packs in and out: an f32 → bf16 cast reads two packs and
// writes one), else one element at a time with runtime source/target dtypes; fill stores one
// precomputed bit pattern.
// Numerics: copy is bit-exact (NaN payloads, −0). cast: float → float rounds to nearest even
// (f16 ↔ bf16 goes through the exact f32 value, so it rounds once); i32 → f16/bf16 rounds once
// from the integer; float → i32 truncates toward zero, NaN → 0, saturating at [−2³¹, 2³¹−1].
// fill rounds the JS double once, on the host, straight to the target dtype.
#include "convert.cuh"

#include <atomic>
#include <type_traits>

#include "numerics.cuh"
#include "vector.cuh"

namespace kiln {
namespace {

constexpr int kThreads = 256;
std::atomic<unsigned long long> transpose_launches{0};
std::atomic<unsigned long long> packed_cast_launches{0};

template <typename Word>
__global__ void __launch_bounds__(kThreads)
    copy_kernel(const Word* src, Word* dst, StridedOperands<2> layout, Index count) {
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    Index offsets[2];
    strided_offsets(layout, i, offsets);
    dst[offsets[1]] = src[offsets[0]];
  }
}

/** Words per side of a transpose tile, and rows of threads of its 32 × 8 block (each thread moves 4 words). */
constexpr int kTransposeTile = 32;
constexpr int kTransposeRows = 8;

/**
 * A copy whose two operands are contiguous along different dims (a transpose): shape
 * [batch, extent_p, extent_q] with src stride 1 along p and dst stride 1 along q (strides in
 * words, offsets included in the pointers). A 32 × 32 tile goes through shared memory (rows padded
 * to 33 words, so the column reads hit 32 banks): loaded with consecutive threads along p and
 * stored with consecutive threads along q, so both sides are coalesced. Grid: p tiles × q tiles ×
 * batch (q tiles grid-strided past the device's grid y, batch past 65535).
 */
template <typename Word>
__global__ void __launch_bounds__(kTransposeTile* kTransposeRows)
    transpose_copy_kernel(const Word* src, Word* dst, Index batch, Index extent_p, Index extent_q, Index src_batch,
                          Index src_q, Index dst_batch, Index dst_p) {
  __shared__ Word tile[kTransposeTile][kTransposeTile + 1];
  const Index p0 = static_cast<Index>(blockIdx.x) * kTransposeTile;
  const int tx = static_cast<int>(threadIdx.x % kTransposeTile);
  const int ty = static_cast<int>(threadIdx.x / kTransposeTile);
  // q tiles past the device's grid y (LaunchContext::max_grid_y) are taken in steps of gridDim.y.
  const Index q_tiles = (extent_q + kTransposeTile - 1) / kTransposeTile;
  for (Index b = blockIdx.z; b < batch; b += gridDim.z) {
    const Word* from = src + b * src_batch;
    Word* to = dst + b * dst_batch;
    for (Index q0 = static_cast<Index>(blockIdx.y) * kTransposeTile; q0 < q_tiles * kTransposeTile;
         q0 += static_cast<Index>(gridDim.y) * kTransposeTile) {
      for (int k = ty; k < kTransposeTile; k += kTransposeRows) {
        const Index p = p0 + tx;
        const Index q = q0 + k;
        if (p < extent_p && q < extent_q) tile[k][tx] = from[p + q * src_q];
      }
      __syncthreads();
      for (int k = ty; k < kTransposeTile; k += kTransposeRows) {
        const Index q = q0 + tx;
        const Index p = p0 + k;
        if (p < extent_p && q < extent_q) to[p * dst_p + q] = tile[tx][k];
      }
      __syncthreads();
    }
  }
}

/** A transpose_copy_kernel launch: the layout's last two dims (and an optional batch dim before them). */
struct TransposePlan {
  Index batch;
  Index extent_p;
  Index extent_q;
  Index src_batch;
  Index src_q;
  Index dst_batch;
  Index dst_p;
};

/** True (with the plan) when the layout is a batched 2D transpose: src stride 1 along one of the last two dims, dst along the other. */
bool plan_transpose(const StridedOperands<2>& layout, TransposePlan& plan) {
  if (layout.rank != 2 && layout.rank != 3) return false;
  const int first = layout.rank - 2;
  for (int p_dim = first; p_dim < first + 2; p_dim++) {
    const int q_dim = p_dim == first ? first + 1 : first;
    if (layout.strides[0][p_dim] != 1 || layout.strides[1][q_dim] != 1) continue;
    plan.batch = layout.rank == 3 ? layout.shape[0] : 1;
    plan.extent_p = layout.shape[p_dim];
    plan.extent_q = layout.shape[q_dim];
    plan.src_batch = layout.rank == 3 ? layout.strides[0][0] : 0;
    plan.dst_batch = layout.rank == 3 ? layout.strides[1][0] : 0;
    plan.src_q = layout.strides[0][q_dim];
    plan.dst_p = layout.strides[1][p_dim];
    // Tiles along p sit in grid x; along q in grid y (strided past the device's limit).
    return (plan.extent_p + kTransposeTile - 1) / kTransposeTile <= 0x7fffffffLL;
  }
  return false;
}

template <typename Word>
cudaError_t launch_transpose(const LaunchContext& context, const char* name, const void* src, void* dst,
                             const StridedOperands<2>& layout, const TransposePlan& plan) {
  transpose_launches++;
  const dim3 blocks(static_cast<unsigned>((plan.extent_p + kTransposeTile - 1) / kTransposeTile),
                    grid_y_for((plan.extent_q + kTransposeTile - 1) / kTransposeTile, context),
                    static_cast<unsigned>(plan.batch < 65535 ? plan.batch : 65535));
  return vendor::launch(name, transpose_copy_kernel<Word>, blocks, dim3(kTransposeTile * kTransposeRows), 0,
                        context.stream, static_cast<const Word*>(src) + layout.offsets[0],
                        static_cast<Word*>(dst) + layout.offsets[1], plan.batch, plan.extent_p, plan.extent_q,
                        plan.src_batch, plan.src_q, plan.dst_batch, plan.dst_p);
}

__global__ void __launch_bounds__(kThreads) cast_kernel(int from, const void* x, int to, void* out, Index count) {
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    if (from == to) {
      if (dtype_bytes(to) == 2)
        static_cast<std::uint16_t*>(out)[i] = static_cast<const std::uint16_t*>(x)[i];
      else
        static_cast<std::uint32_t*>(out)[i] = static_cast<const std::uint32_t*>(x)[i];
    } else if (from == kI32) {
      store_i32(out, to, i, load_i32(x, i));
    } else {
      store_float(out, to, i, load_float(x, from, i));
    }
  }
}

/** Elements of a cast_packed_kernel step: one 16-byte pack of a 16-bit dtype, two of f32. */
constexpr int kCastGroup = 8;

/**
 * out[i] = x[i] converted from From to To (f32, f16 or bf16, From ≠ To; both 16-byte aligned):
 * kCastGroup elements a thread per step in whole 16-byte packs, then the last count % kCastGroup
 * one by one. Each element converts exactly as cast_kernel converts it (through its f32 value).
 */
template <typename From, typename To>
__global__ void __launch_bounds__(kThreads) cast_packed_kernel(const From* x, To* out, Index count) {
  constexpr int kFromWidth = Pack<From>::kWidth;
  constexpr int kToWidth = Pack<To>::kWidth;
  const Index first = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x;
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  const Index groups = count / kCastGroup;
  for (Index group = first; group < groups; group += stride) {
    float values[kCastGroup];
    for (int pack = 0; pack < kCastGroup / kFromWidth; pack++)
      load_floats<From, kFromWidth>(x, group * (kCastGroup / kFromWidth) + pack, values + pack * kFromWidth);
    for (int pack = 0; pack < kCastGroup / kToWidth; pack++)
      store_floats<To, kToWidth>(out, group * (kCastGroup / kToWidth) + pack, values + pack * kToWidth);
  }
  for (Index i = groups * kCastGroup + first; i < count; i += stride) out[i] = from_float<To>(to_float(x[i]));
}

/** Launches cast_packed_kernel<From, To> over `count` elements: a thread per kCastGroup of them. */
template <typename From, typename To>
cudaError_t launch_cast_packed(const LaunchContext& context, const char* name, const void* x, void* out, Index count) {
  packed_cast_launches++;
  const Index threads = count / kCastGroup > 0 ? count / kCastGroup : count;
  return vendor::launch(name, cast_packed_kernel<From, To>, dim3(grid_for(threads, kThreads, context.max_blocks)),
                        dim3(kThreads), 0, context.stream, static_cast<const From*>(x), static_cast<To*>(out), count);
}

/** cast_packed_kernel from From to `to` (a float dtype other than From's). */
template <typename From>
cudaError_t launch_cast_packed_from(const LaunchContext& context, const char* const (&names)[3], const void* x, int to,
                                    void* out, Index count) {
  if constexpr (!std::is_same_v<From, float>) {
    if (to == kF32) return launch_cast_packed<From, float>(context, names[kF32], x, out, count);
  }
  if constexpr (!std::is_same_v<From, __half>) {
    if (to == kF16) return launch_cast_packed<From, __half>(context, names[kF16], x, out, count);
  }
  if constexpr (!std::is_same_v<From, __nv_bfloat16>) {
    if (to == kBF16) return launch_cast_packed<From, __nv_bfloat16>(context, names[kBF16], x, out, count);
  }
  return cudaErrorInvalidValue;  // launch_cast sends only two different float dtypes here
}

template <typename Word>
__global__ void __launch_bounds__(kThreads) fill_kernel(Word* out, Word value, Index count) {
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) out[i] = value;
}

bool contiguous(const StridedOperands<2>& layout, int operand) {
  Index expected = 1;
  for (int dim = layout.rank - 1; dim >= 0; dim--) {
    if (layout.shape[dim] != 1 && layout.strides[operand][dim] != expected) return false;
    expected *= layout.shape[dim];
  }
  return true;
}

}  // namespace

unsigned long long transpose_copy_launches() { return transpose_launches.load(); }

unsigned long long cast_packed_launches() { return packed_cast_launches.load(); }

cudaError_t launch_copy(const LaunchContext& context, int dtype, const void* src, void* dst,
                        const StridedOperands<2>& layout, Index count) {
  if (count == 0) return cudaSuccess;
  const int bytes = dtype_bytes(dtype);
  if (contiguous(layout, 0) && contiguous(layout, 1)) {
    return cudaMemcpyAsync(static_cast<char*>(dst) + layout.offsets[1] * bytes,
                           static_cast<const char*>(src) + layout.offsets[0] * bytes,
                           static_cast<size_t>(count) * bytes, cudaMemcpyDeviceToDevice, context.stream);
  }
  TransposePlan plan;
  if (plan_transpose(layout, plan)) {
    if (bytes == 2)
      return launch_transpose<std::uint16_t>(context, "transpose_copy_kernel<16-bit>", src, dst, layout, plan);
    return launch_transpose<std::uint32_t>(context, "transpose_copy_kernel<32-bit>", src, dst, layout, plan);
  }
  const dim3 blocks(grid_for(count, kThreads, context.max_blocks));
  if (bytes == 2) {
    return vendor::launch("copy_kernel<16-bit>", copy_kernel<std::uint16_t>, blocks, dim3(kThreads), 0, context.stream,
                          static_cast<const std::uint16_t*>(src), static_cast<std::uint16_t*>(dst), layout, count);
  }
  return vendor::launch("copy_kernel<32-bit>", copy_kernel<std::uint32_t>, blocks, dim3(kThreads), 0, context.stream,
                        static_cast<const std::uint32_t*>(src), static_cast<std::uint32_t*>(dst), layout, count);
}

cudaError_t launch_cast(const LaunchContext& context, int from, const void* x, int to, void* out, Index count) {
  if (count == 0) return cudaSuccess;
  if (from != to && from != kI32 && to != kI32 && aligned16(x) && aligned16(out)) {
    // Kernel names by source, then target dtype (kF32, kF16, kBF16); the diagonal is never launched.
    static constexpr const char* kNames[3][3] = {
        {"", "cast_packed_kernel<f32, f16>", "cast_packed_kernel<f32, bf16>"},
        {"cast_packed_kernel<f16, f32>", "", "cast_packed_kernel<f16, bf16>"},
        {"cast_packed_kernel<bf16, f32>", "cast_packed_kernel<bf16, f16>", ""},
    };
    switch (from) {
      case kF32: return launch_cast_packed_from<float>(context, kNames[kF32], x, to, out, count);
      case kF16: return launch_cast_packed_from<__half>(context, kNames[kF16], x, to, out, count);
      default: return launch_cast_packed_from<__nv_bfloat16>(context, kNames[kBF16], x, to, out, count);
    }
  }
  return vendor::launch("cast_kernel", cast_kernel, dim3(grid_for(count, kThreads, context.max_blocks)), dim3(kThreads),
                        0, context.stream, from, x, to, out, count);
}

cudaError_t launch_fill(const LaunchContext& context, int dtype, void* out, std::uint32_t bits, Index count) {
  if (count == 0) return cudaSuccess;
  const dim3 blocks(grid_for(count, kThreads, context.max_blocks));
  if (dtype_bytes(dtype) == 2) {
    return vendor::launch("fill_kernel<16-bit>", fill_kernel<std::uint16_t>, blocks, dim3(kThreads), 0, context.stream,
                          static_cast<std::uint16_t*>(out), static_cast<std::uint16_t>(bits), count);
  }
  return vendor::launch("fill_kernel<32-bit>", fill_kernel<std::uint32_t>, blocks, dim3(kThreads), 0, context.stream,
                        static_cast<std::uint32_t*>(out), bits, count);
}

std::uint32_t fill_bits(int dtype, double value) {
  switch (dtype) {
    case kF32: return bit_cast<std::uint32_t>(double_to_f32(value));
    case kF16: return double_to_f16_bits(value);
    case kBF16: return double_to_bf16_bits(value);
    default: return static_cast<std::uint32_t>(double_to_i32(value));
  }
}

}  // namespace kiln
