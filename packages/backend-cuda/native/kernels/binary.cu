// kernels/binary.cu — binary (out = a op b) and where (out = condition ? a : b) over views.
//
// Algorithm: grid-stride loops, 256 threads per block. When a, b and out share one dtype and each
// input is contiguous or one broadcast element, a vectorized kernel reads 16-byte packs; anything
// else takes a strided kernel that decomposes the linear index once per element and reads each
// operand at its own strides, with runtime dtypes (so any dtype mix works).
// Layout: out is contiguous; the inputs are StridedOperands already coalesced by the host.
// Numerics: see elementwise_ops.cuh; `where` moves raw bits when the dtypes match (NaN payloads
// and −0 survive), else converts through f32 or i32 with one rounding.
#include "elementwise.cuh"
#include "elementwise_ops.cuh"
#include "vector.cuh"

namespace kiln {
namespace {

constexpr int kThreads = 256;

// a_broadcast / b_broadcast: the operand is one element repeated. vectorize: every other pointer is 16-byte aligned.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    binary_contiguous_kernel(int op, const T* a, int a_broadcast, const T* b, int b_broadcast, T* out, Index count,
                             int vectorize) {
  constexpr int kWidth = Pack<T>::kWidth;
  const Index first = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x;
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  Index tail = 0;
  if (vectorize) {
    const Index packs = count / kWidth;
    Pack<T> left;
    Pack<T> right;
    if (a_broadcast) {
      for (int lane = 0; lane < kWidth; lane++) left.values[lane] = a[0];
    }
    if (b_broadcast) {
      for (int lane = 0; lane < kWidth; lane++) right.values[lane] = b[0];
    }
    for (Index pack = first; pack < packs; pack += stride) {
      if (!a_broadcast) left = load_pack(a, pack);
      if (!b_broadcast) right = load_pack(b, pack);
      Pack<T> result;
      for (int lane = 0; lane < kWidth; lane++)
        result.values[lane] = binary_value<T>(op, left.values[lane], right.values[lane]);
      store_pack(out, pack, result);
    }
    tail = packs * kWidth;
  }
  for (Index i = tail + first; i < count; i += stride)
    out[i] = binary_value<T>(op, a[a_broadcast ? 0 : i], b[b_broadcast ? 0 : i]);
}

__global__ void __launch_bounds__(kThreads)
    binary_strided_kernel(int op, int a_dtype, const void* a, int b_dtype, const void* b, int out_dtype, void* out,
                          StridedOperands<2> layout, Index count) {
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  const bool integer = a_dtype == kI32 && b_dtype == kI32;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    Index offsets[2];
    strided_offsets(layout, i, offsets);
    if (integer)
      store_i32(out, out_dtype, i, binary_int(op, load_i32(a, offsets[0]), load_i32(b, offsets[1])));
    else
      store_float(out, out_dtype, i,
                  binary_float(op, load_float(a, a_dtype, offsets[0]), load_float(b, b_dtype, offsets[1])));
  }
}

__global__ void __launch_bounds__(kThreads)
    where_kernel(int condition_dtype, const void* condition, int a_dtype, const void* a, int b_dtype, const void* b,
                 int out_dtype, void* out, StridedOperands<3> layout, Index count) {
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  const bool bits = a_dtype == out_dtype && b_dtype == out_dtype;
  const bool integer = a_dtype == kI32 && b_dtype == kI32;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    Index offsets[3];
    strided_offsets(layout, i, offsets);
    const bool pick_a = load_nonzero(condition, condition_dtype, offsets[0]);
    const void* source = pick_a ? a : b;
    const Index offset = pick_a ? offsets[1] : offsets[2];
    const int source_dtype = pick_a ? a_dtype : b_dtype;
    if (bits) {
      if (dtype_bytes(out_dtype) == 2)
        static_cast<std::uint16_t*>(out)[i] = static_cast<const std::uint16_t*>(source)[offset];
      else
        static_cast<std::uint32_t*>(out)[i] = static_cast<const std::uint32_t*>(source)[offset];
    } else if (integer) {
      store_i32(out, out_dtype, i, load_i32(source, offset));
    } else {
      store_float(out, out_dtype, i, load_float(source, source_dtype, offset));
    }
  }
}

/** Contiguous (0), one broadcast element (1) or anything else (2), for operand `operand`. */
template <int Operands>
int classify(const StridedOperands<Operands>& layout, int operand) {
  bool all_zero = true;
  bool contiguous = true;
  Index expected = 1;
  for (int dim = layout.rank - 1; dim >= 0; dim--) {
    const Index stride = layout.strides[operand][dim];
    if (stride != 0) all_zero = false;
    if (layout.shape[dim] != 1 && stride != expected) contiguous = false;
    expected *= layout.shape[dim];
  }
  return contiguous ? 0 : all_zero ? 1 : 2;
}

template <typename T>
cudaError_t launch_binary_contiguous(const LaunchContext& context, int op, const void* a, int a_kind, const void* b,
                                     int b_kind, void* out, Index a_offset, Index b_offset, Index count) {
  const T* left = static_cast<const T*>(a) + a_offset;
  const T* right = static_cast<const T*>(b) + b_offset;
  T* result = static_cast<T*>(out);
  const bool vectorize = (a_kind == 1 || aligned16(left)) && (b_kind == 1 || aligned16(right)) && aligned16(result);
  const unsigned grid =
      grid_for(vectorize ? (count + Pack<T>::kWidth - 1) / Pack<T>::kWidth : count, kThreads, context.max_blocks);
  return vendor::launch("binary_contiguous_kernel", binary_contiguous_kernel<T>, dim3(grid), dim3(kThreads), 0,
                        context.stream, op, left, a_kind == 1 ? 1 : 0, right, b_kind == 1 ? 1 : 0, result, count,
                        vectorize ? 1 : 0);
}

}  // namespace

cudaError_t launch_binary(const LaunchContext& context, int op, int a_dtype, const void* a, int b_dtype, const void* b,
                          int out_dtype, void* out, const StridedOperands<2>& layout, Index count) {
  if (count == 0) return cudaSuccess;
  const int a_kind = classify(layout, 0);
  const int b_kind = classify(layout, 1);
  if (a_dtype == out_dtype && b_dtype == out_dtype && a_kind != 2 && b_kind != 2) {
    const Index a_offset = layout.offsets[0];
    const Index b_offset = layout.offsets[1];
    switch (out_dtype) {
      case kF32:
        return launch_binary_contiguous<float>(context, op, a, a_kind, b, b_kind, out, a_offset, b_offset, count);
      case kF16:
        return launch_binary_contiguous<__half>(context, op, a, a_kind, b, b_kind, out, a_offset, b_offset, count);
      case kBF16:
        return launch_binary_contiguous<__nv_bfloat16>(context, op, a, a_kind, b, b_kind, out, a_offset, b_offset,
                                                       count);
      default:
        return launch_binary_contiguous<std::int32_t>(context, op, a, a_kind, b, b_kind, out, a_offset, b_offset,
                                                      count);
    }
  }
  return vendor::launch("binary_strided_kernel", binary_strided_kernel,
                        dim3(grid_for(count, kThreads, context.max_blocks)), dim3(kThreads), 0, context.stream, op,
                        a_dtype, a, b_dtype, b, out_dtype, out, layout, count);
}

cudaError_t launch_where(const LaunchContext& context, int condition_dtype, const void* condition, int a_dtype,
                         const void* a, int b_dtype, const void* b, int out_dtype, void* out,
                         const StridedOperands<3>& layout, Index count) {
  if (count == 0) return cudaSuccess;
  return vendor::launch("where_kernel", where_kernel, dim3(grid_for(count, kThreads, context.max_blocks)),
                        dim3(kThreads), 0, context.stream, condition_dtype, condition, a_dtype, a, b_dtype, b,
                        out_dtype, out, layout, count);
}

}  // namespace kiln
