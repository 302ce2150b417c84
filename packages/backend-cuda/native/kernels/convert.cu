// kernels/convert.cu — strided copy, cast and fill.
//
// Algorithm: grid-stride loops, 256 threads per block. copy moves raw 2- or 4-byte words
// between two strided views (one cudaMemcpyAsync when both are contiguous); cast converts
// contiguous elements with runtime source/target dtypes; fill stores one precomputed bit pattern.
// Numerics: copy is bit-exact (NaN payloads, −0). cast: float → float rounds to nearest even
// (f16 ↔ bf16 goes through the exact f32 value, so it rounds once); i32 → f16/bf16 rounds once
// from the integer; float → i32 truncates toward zero, NaN → 0, saturating at [−2³¹, 2³¹−1].
// fill rounds the JS double once, on the host, straight to the target dtype.
#include "convert.cuh"
#include "numerics.cuh"

namespace kiln {
namespace {

constexpr int kThreads = 256;

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

cudaError_t launch_copy(const LaunchContext& context, int dtype, const void* src, void* dst,
                        const StridedOperands<2>& layout, Index count) {
  if (count == 0) return cudaSuccess;
  const int bytes = dtype_bytes(dtype);
  if (contiguous(layout, 0) && contiguous(layout, 1)) {
    return cudaMemcpyAsync(static_cast<char*>(dst) + layout.offsets[1] * bytes,
                           static_cast<const char*>(src) + layout.offsets[0] * bytes,
                           static_cast<size_t>(count) * bytes, cudaMemcpyDeviceToDevice, context.stream);
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
