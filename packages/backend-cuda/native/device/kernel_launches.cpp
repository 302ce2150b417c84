// device/kernel_launches.cpp — the primitive kernels on CudaDevice: coalesce strided views
// (runtime/layout.h), launch on the stream, and check each launch with a description naming the
// kernel and its shapes (and the bytes and flops the profiler reports). The host read and checked
// every argument (kiln/call_readers.h).
#include <initializer_list>
#include <optional>

#include "../kernels/convert.cuh"
#include "../kernels/elementwise.cuh"
#include "../kernels/indexing.cuh"
#include "../kernels/matmul.cuh"
#include "../kernels/random.cuh"
#include "../kernels/reduce.cuh"
#include "../runtime/layout.h"
#include "cuda_device.h"
#include "kiln/op_names.h"

namespace kiln {
namespace {

char* element_pointer(const TensorView& tensor, Index element) {
  return static_cast<char*>(tensor.base()) + element * dtype_bytes(tensor.dtype);
}

/** Profile work of an elementwise launch: `count` elements of each operand's dtype read or written. */
LaunchWork elementwise_work(Index count, std::initializer_list<int> dtypes) {
  double bytes = 0;
  for (const int dtype : dtypes) bytes += static_cast<double>(count) * dtype_bytes(dtype);
  return LaunchWork{bytes, 0};
}

}  // namespace

void CudaDevice::unary(Napi::Env, const UnaryCall& call) {
  DeviceContext& device = *context_;
  device.after_launch(
      launch_unary(device.launch_context(), call.op, call.x.dtype, call.x.base(), call.out.base(), call.x.count),
      std::string("unary ") + kUnaryOpNames[call.op] + " " + describe(call.x),
      elementwise_work(call.x.count, {call.x.dtype, call.out.dtype}));
}

void CudaDevice::binary(Napi::Env, const BinaryCall& call) {
  DeviceContext& device = *context_;
  const TensorView& a = call.a;
  const TensorView& b = call.b;
  const TensorView& out = call.out;
  const std::string description = std::string("binary ") + kBinaryOpNames[call.op] + " " + describe(out);
  const LaunchContext launch = device.launch_context();
  for_each_chunk<2>(out.shape, {&a.strides, &b.strides}, {a.offset, b.offset},
                    [&](const StridedOperands<2>& layout, Index count, Index start) {
                      device.after_launch(launch_binary(launch, call.op, a.dtype, a.base(), b.dtype, b.base(),
                                                        out.dtype, element_pointer(out, start), layout, count),
                                          description, elementwise_work(count, {a.dtype, b.dtype, out.dtype}));
                    });
}

void CudaDevice::where(Napi::Env, const WhereCall& call) {
  DeviceContext& device = *context_;
  const TensorView& condition = call.condition;
  const TensorView& a = call.a;
  const TensorView& b = call.b;
  const TensorView& out = call.out;
  const std::string description = "where " + describe(out);
  const LaunchContext launch = device.launch_context();
  for_each_chunk<3>(out.shape, {&condition.strides, &a.strides, &b.strides}, {condition.offset, a.offset, b.offset},
                    [&](const StridedOperands<3>& layout, Index count, Index start) {
                      device.after_launch(
                          launch_where(launch, condition.dtype, condition.base(), a.dtype, a.base(), b.dtype, b.base(),
                                       out.dtype, element_pointer(out, start), layout, count),
                          description, elementwise_work(count, {condition.dtype, a.dtype, b.dtype, out.dtype}));
                    });
}

void CudaDevice::reduce(Napi::Env, const ReduceCall& call) {
  DeviceContext& device = *context_;
  const std::size_t scratch_bytes = reduce_scratch_bytes(call.outer, call.size, call.inner);
  ScratchBuffer scratch(device.pool(), scratch_bytes);
  device.after_launch(
      launch_reduce(device.launch_context(), call.op, call.x.dtype, call.x.base(), call.out.dtype, call.out.base(),
                    call.outer, call.size, call.inner, scratch_bytes > 0 ? scratch.get() : nullptr),
      std::string("reduce ") + kReduceOpNames[call.op] + " " + describe(call.x) + " as [" + std::to_string(call.outer) +
          ", " + std::to_string(call.size) + ", " + std::to_string(call.inner) + "]",
      LaunchWork{static_cast<double>(call.x.count) * dtype_bytes(call.x.dtype) +
                     static_cast<double>(call.out.count) * dtype_bytes(call.out.dtype),
                 0});
}

void CudaDevice::matmul(Napi::Env, const MatmulCall& call) {
  DeviceContext& device = *context_;
  const MatmulShape& shape = call.shape;
  const TensorView& a = call.a;
  const std::string description = std::string("matmul ") + kDTypeNames[a.dtype] +
                                  " batch=" + std::to_string(shape.batch) + " m=" + std::to_string(shape.m) +
                                  " n=" + std::to_string(shape.n) + " k=" + std::to_string(shape.k) +
                                  (shape.transpose_a ? " transA" : "") + (shape.transpose_b ? " transB" : "");
  const LaunchWork work{static_cast<double>(shape.batch) * static_cast<double>(shape.m + shape.n) *
                                static_cast<double>(shape.k) * dtype_bytes(a.dtype) +
                            static_cast<double>(call.out.count) * dtype_bytes(call.out.dtype),
                        2.0 * static_cast<double>(shape.batch) * static_cast<double>(shape.m) *
                            static_cast<double>(shape.n) * static_cast<double>(shape.k)};
  const LaunchContext launch = device.launch_context();
  if (matmul_goes_to_cublas(call)) {
    CublasSession* cublas = device.cublas();
    cublas->gemm(a.dtype, a.base(), call.b.base(), call.out.base(), shape);
    device.after_launch(cudaSuccess, description + " (cuBLAS)", work);
    return;
  }
  // Split-K's f32 partials (matmul_split_k.cuh) and padded operands (matmul_pad.cuh): pool scratch,
  // served from the cache during graph capture. Padding is an optimisation: without memory for it
  // the operands are read as they are (WMMA).
  bool allow_padding = true;
  std::size_t workspace_bytes =
      static_cast<std::size_t>(matmul_workspace_bytes(launch, a.dtype, a.base(), call.b.base(), shape));
  std::optional<ScratchBuffer> workspace;
  try {
    workspace.emplace(device.pool(), workspace_bytes);
  } catch (const NativeError& error) {
    if (error.kind() != ErrorKind::kOutOfMemory) throw;
    allow_padding = false;
    workspace_bytes =
        static_cast<std::size_t>(matmul_workspace_bytes(launch, a.dtype, a.base(), call.b.base(), shape, false));
    workspace.emplace(device.pool(), workspace_bytes);
  }
  MatmulRoute route;
  const cudaError_t launched = launch_matmul(launch, a.dtype, a.base(), call.b.base(), call.out.base(), shape,
                                             workspace_bytes > 0 ? workspace->get() : nullptr, &route, allow_padding);
  device.after_launch(launched,
                      description + " (kiln " + route.kernel +
                          (route.splits > 1 ? ", split-K " + std::to_string(route.splits) : "") +
                          (route.folded ? ", batch folded" : "") + (route.padded ? ", operands padded" : "") + ")",
                      work);
}

void CudaDevice::copy(Napi::Env, const CopyCall& call) {
  DeviceContext& device = *context_;
  const TensorView& src = call.src;
  const TensorView& dst = call.dst;
  const std::string description = "copy " + describe(src);
  const LaunchContext launch = device.launch_context();
  for_each_chunk<2>(src.shape, {&src.strides, &dst.strides}, {src.offset, dst.offset},
                    [&](const StridedOperands<2>& layout, Index count, Index) {
                      device.after_launch(launch_copy(launch, src.dtype, src.base(), dst.base(), layout, count),
                                          description, elementwise_work(count, {src.dtype, dst.dtype}));
                    });
}

void CudaDevice::gather(Napi::Env, const IndexCall& call) {
  DeviceContext& device = *context_;
  device.after_launch(launch_gather(device.launch_context(), call.values.dtype, call.values.base(),
                                    static_cast<const std::int32_t*>(call.indices.base()), call.out.base(), call.outer,
                                    call.rows, call.inner, call.indices.count),
                      "gather " + describe(call.values) + " by " + std::to_string(call.indices.count) + " indices");
}

void CudaDevice::scatter_add(Napi::Env, const IndexCall& call) {
  DeviceContext& device = *context_;
  device.after_launch(launch_scatter_add(device.launch_context(), call.values.dtype, call.values.base(),
                                         static_cast<const std::int32_t*>(call.indices.base()), call.out.base(),
                                         call.outer, call.rows, call.inner, call.indices.count),
                      "scatterAdd " + describe(call.values) + " into " + describe(call.out));
}

void CudaDevice::cast(Napi::Env, const CastCall& call) {
  DeviceContext& device = *context_;
  device.after_launch(
      launch_cast(device.launch_context(), call.x.dtype, call.x.base(), call.out.dtype, call.out.base(), call.x.count),
      "cast " + describe(call.x) + " to " + kDTypeNames[call.out.dtype],
      elementwise_work(call.x.count, {call.x.dtype, call.out.dtype}));
}

void CudaDevice::fill(Napi::Env, const FillCall& call) {
  DeviceContext& device = *context_;
  device.after_launch(launch_fill(device.launch_context(), call.out.dtype, call.out.base(),
                                  fill_bits(call.out.dtype, call.value), call.out.count),
                      "fill " + describe(call.out), elementwise_work(call.out.count, {call.out.dtype}));
}

void CudaDevice::random(Napi::Env, const RandomCall& call) {
  DeviceContext& device = *context_;
  device.after_launch(launch_random(device.launch_context(), call.out.dtype, call.out.base(), call.kind, call.a, call.b,
                                    call.seed, call.offset, call.out.count),
                      std::string("random ") + (call.kind == kUniform ? "uniform " : "normal ") + describe(call.out));
}

}  // namespace kiln
