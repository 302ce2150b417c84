// kernels/elementwise.cu — unary, binary and where.
//
// Algorithm: grid-stride loops, 256 threads per block. Operands that are contiguous (or one
// element broadcast to all) with one dtype for all go through 16-byte packs (vectorized loads and
// stores); everything else takes a generic strided kernel that decomposes the linear index once
// per element and reads each operand at its own strides, with runtime dtypes (any mix works).
// Layout: out is contiguous; the inputs are StridedOperands already coalesced by the host.
// Numerics: float dtypes compute in f32 and round once to the output dtype; i32 wraps modulo
// 2³²; maximum/minimum propagate NaN; comparisons write 1 or 0 (NaN compares false except
// notEqual); `where` moves raw bits when the dtypes match (NaN payloads and −0 survive).
#include <type_traits>

#include "elementwise.cuh"
#include "numerics.cuh"
#include "op_codes.h"
#include "vector.cuh"

namespace kiln {
namespace {

constexpr int kThreads = 256;
constexpr float kGeluScale = 0.7978845608028654f;  // √(2/π)
constexpr float kGeluCubic = 0.044715f;

__device__ __forceinline__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

__device__ __forceinline__ float unary_float(int op, float x) {
  switch (op) {
    case kNeg: return -x;
    case kAbs: return fabsf(x);
    case kSign: return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x;
    case kExp: return expf(x);
    case kLog: return logf(x);
    case kSqrt: return sqrtf(x);
    case kRsqrt: return 1.0f / sqrtf(x);
    case kReciprocal: return 1.0f / x;
    case kSquare: return x * x;
    case kTanh: return tanhf(x);
    case kSigmoid: return sigmoid(x);
    case kRelu: return x > 0.0f ? x : (x != x ? x : 0.0f);
    case kGelu: return 0.5f * x * (1.0f + tanhf(kGeluScale * (x + kGeluCubic * x * x * x)));
    case kSilu: return x * sigmoid(x);
    case kGeluGrad: {
      const float t = tanhf(kGeluScale * (x + kGeluCubic * x * x * x));
      return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * kGeluScale * (1.0f + 3.0f * kGeluCubic * x * x);
    }
    case kSiluGrad: {
      const float s = sigmoid(x);
      return s * (1.0f + x * (1.0f - s));
    }
    default: return x;
  }
}

__device__ __forceinline__ std::int32_t unary_int(int op, std::int32_t x) {
  switch (op) {
    case kNeg: return wrap_sub(0, x);
    case kAbs: return x < 0 ? wrap_sub(0, x) : x;
    case kSign: return (x > 0) - (x < 0);
    case kSquare: return wrap_mul(x, x);
    default: return x;
  }
}

__device__ __forceinline__ float binary_float(int op, float a, float b) {
  switch (op) {
    case kAdd: return a + b;
    case kSub: return a - b;
    case kMul: return a * b;
    case kDiv: return a / b;
    case kPow: return powf(a, b);
    case kMaximum: return nan_max(a, b);
    case kMinimum: return nan_min(a, b);
    case kGreater: return a > b ? 1.0f : 0.0f;
    case kGreaterEqual: return a >= b ? 1.0f : 0.0f;
    case kLess: return a < b ? 1.0f : 0.0f;
    case kLessEqual: return a <= b ? 1.0f : 0.0f;
    case kEqual: return a == b ? 1.0f : 0.0f;
    case kNotEqual: return a != b ? 1.0f : 0.0f;
    default: return a;
  }
}

__device__ __forceinline__ std::int32_t binary_int(int op, std::int32_t a, std::int32_t b) {
  switch (op) {
    case kAdd: return wrap_add(a, b);
    case kSub: return wrap_sub(a, b);
    case kMul: return wrap_mul(a, b);
    case kMaximum: return a > b ? a : b;
    case kMinimum: return a < b ? a : b;
    case kGreater: return a > b ? 1 : 0;
    case kGreaterEqual: return a >= b ? 1 : 0;
    case kLess: return a < b ? 1 : 0;
    case kLessEqual: return a <= b ? 1 : 0;
    case kEqual: return a == b ? 1 : 0;
    case kNotEqual: return a != b ? 1 : 0;
    default: return a;
  }
}

template <typename T>
__device__ __forceinline__ T unary_value(int op, T x) {
  if constexpr (std::is_same_v<T, std::int32_t>) return unary_int(op, x);
  else return from_float<T>(unary_float(op, to_float(x)));
}

template <typename T>
__device__ __forceinline__ T binary_value(int op, T a, T b) {
  if constexpr (std::is_same_v<T, std::int32_t>) return binary_int(op, a, b);
  else return from_float<T>(binary_float(op, to_float(a), to_float(b)));
}

template <typename T>
__global__ void __launch_bounds__(kThreads) unary_kernel(int op, const T* x, T* out, Index count) {
  constexpr int kWidth = Pack<T>::kWidth;
  const Index first = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x;
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  const Index packs = count / kWidth;
  for (Index pack = first; pack < packs; pack += stride) {
    Pack<T> values = load_pack(x, pack);
    for (int lane = 0; lane < kWidth; lane++) values.values[lane] = unary_value<T>(op, values.values[lane]);
    store_pack(out, pack, values);
  }
  for (Index i = packs * kWidth + first; i < count; i += stride) out[i] = unary_value<T>(op, x[i]);
}

// a_broadcast / b_broadcast: the operand is one element repeated. vectorize: every other pointer is 16-byte aligned.
template <typename T>
__global__ void __launch_bounds__(kThreads) binary_contiguous_kernel(int op, const T* a, int a_broadcast, const T* b, int b_broadcast, T* out,
                                                                     Index count, int vectorize) {
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
      for (int lane = 0; lane < kWidth; lane++) result.values[lane] = binary_value<T>(op, left.values[lane], right.values[lane]);
      store_pack(out, pack, result);
    }
    tail = packs * kWidth;
  }
  for (Index i = tail + first; i < count; i += stride) out[i] = binary_value<T>(op, a[a_broadcast ? 0 : i], b[b_broadcast ? 0 : i]);
}

__global__ void __launch_bounds__(kThreads) binary_strided_kernel(int op, int a_dtype, const void* a, int b_dtype, const void* b, int out_dtype,
                                                                  void* out, StridedOperands<2> layout, Index count) {
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  const bool integer = a_dtype == kI32 && b_dtype == kI32;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    Index offsets[2];
    strided_offsets(layout, i, offsets);
    if (integer) store_i32(out, out_dtype, i, binary_int(op, load_i32(a, offsets[0]), load_i32(b, offsets[1])));
    else store_float(out, out_dtype, i, binary_float(op, load_float(a, a_dtype, offsets[0]), load_float(b, b_dtype, offsets[1])));
  }
}

__global__ void __launch_bounds__(kThreads) where_kernel(int condition_dtype, const void* condition, int a_dtype, const void* a, int b_dtype,
                                                         const void* b, int out_dtype, void* out, StridedOperands<3> layout, Index count) {
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
      if (dtype_bytes(out_dtype) == 2) static_cast<std::uint16_t*>(out)[i] = static_cast<const std::uint16_t*>(source)[offset];
      else static_cast<std::uint32_t*>(out)[i] = static_cast<const std::uint32_t*>(source)[offset];
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
cudaError_t launch_binary_contiguous(const LaunchContext& context, int op, const void* a, int a_kind, const void* b, int b_kind, void* out,
                                     Index a_offset, Index b_offset, Index count) {
  const T* left = static_cast<const T*>(a) + a_offset;
  const T* right = static_cast<const T*>(b) + b_offset;
  T* result = static_cast<T*>(out);
  const bool vectorize = (a_kind == 1 || aligned16(left)) && (b_kind == 1 || aligned16(right)) && aligned16(result);
  const unsigned grid = grid_for(vectorize ? (count + Pack<T>::kWidth - 1) / Pack<T>::kWidth : count, kThreads, context.max_blocks);
  return vendor::launch("binary_contiguous_kernel", binary_contiguous_kernel<T>, dim3(grid), dim3(kThreads), 0, context.stream, op, left,
                        a_kind == 1 ? 1 : 0, right, b_kind == 1 ? 1 : 0, result, count, vectorize ? 1 : 0);
}

}  // namespace

cudaError_t launch_unary(const LaunchContext& context, int op, int dtype, const void* x, void* out, Index count) {
  if (count == 0) return cudaSuccess;
  const unsigned grid = grid_for((count + 3) / 4, kThreads, context.max_blocks);
  const dim3 blocks(grid);
  const dim3 threads(kThreads);
  switch (dtype) {
    case kF32: return vendor::launch("unary_kernel<f32>", unary_kernel<float>, blocks, threads, 0, context.stream, op, static_cast<const float*>(x), static_cast<float*>(out), count);
    case kF16: return vendor::launch("unary_kernel<f16>", unary_kernel<__half>, blocks, threads, 0, context.stream, op, static_cast<const __half*>(x), static_cast<__half*>(out), count);
    case kBF16: return vendor::launch("unary_kernel<bf16>", unary_kernel<__nv_bfloat16>, blocks, threads, 0, context.stream, op, static_cast<const __nv_bfloat16*>(x), static_cast<__nv_bfloat16*>(out), count);
    default: return vendor::launch("unary_kernel<i32>", unary_kernel<std::int32_t>, blocks, threads, 0, context.stream, op, static_cast<const std::int32_t*>(x), static_cast<std::int32_t*>(out), count);
  }
}

cudaError_t launch_binary(const LaunchContext& context, int op, int a_dtype, const void* a, int b_dtype, const void* b, int out_dtype, void* out,
                          const StridedOperands<2>& layout, Index count) {
  if (count == 0) return cudaSuccess;
  const int a_kind = classify(layout, 0);
  const int b_kind = classify(layout, 1);
  if (a_dtype == out_dtype && b_dtype == out_dtype && a_kind != 2 && b_kind != 2) {
    const Index a_offset = layout.offsets[0];
    const Index b_offset = layout.offsets[1];
    switch (out_dtype) {
      case kF32: return launch_binary_contiguous<float>(context, op, a, a_kind, b, b_kind, out, a_offset, b_offset, count);
      case kF16: return launch_binary_contiguous<__half>(context, op, a, a_kind, b, b_kind, out, a_offset, b_offset, count);
      case kBF16: return launch_binary_contiguous<__nv_bfloat16>(context, op, a, a_kind, b, b_kind, out, a_offset, b_offset, count);
      default: return launch_binary_contiguous<std::int32_t>(context, op, a, a_kind, b, b_kind, out, a_offset, b_offset, count);
    }
  }
  return vendor::launch("binary_strided_kernel", binary_strided_kernel, dim3(grid_for(count, kThreads, context.max_blocks)), dim3(kThreads), 0,
                        context.stream, op, a_dtype, a, b_dtype, b, out_dtype, out, layout, count);
}

cudaError_t launch_where(const LaunchContext& context, int condition_dtype, const void* condition, int a_dtype, const void* a, int b_dtype,
                         const void* b, int out_dtype, void* out, const StridedOperands<3>& layout, Index count) {
  if (count == 0) return cudaSuccess;
  return vendor::launch("where_kernel", where_kernel, dim3(grid_for(count, kThreads, context.max_blocks)), dim3(kThreads), 0, context.stream,
                        condition_dtype, condition, a_dtype, a, b_dtype, b, out_dtype, out, layout, count);
}

}  // namespace kiln
