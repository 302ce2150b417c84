// kiln_hip_unported.cpp — the host entry points whose @kiln/backend-cuda sources do not compile for
// HIP (inline PTX, nvcuda::wmma, the cuBLAS loader), so that a first HIP build of the portable
// sources links. Compile it in place of kernels/matmul_f32_{tf32,async}.cu, kernels/attention_{forward,backward}.cu,
// kernels/matmul_wmma_{f16,bf16}.cu, kernels/matmul_mma{,_f16,_bf16}.cu, kernels/matmul_wgmma_{f16,bf16}.cu,
// kernels/attention_{forward,backward}_wgmma.cu and runtime/cublas.cpp (see
// docs/rocm-walkthrough.md).
//
// None of these is reached by a correct TypeScript layer: its capabilities answer false for
// `attention`/`attentionBackward` and for f16/bf16 `matmul` (core then composes attention from
// primitives and runs f16/bf16 matmuls through the f32 SIMT kernel of kernels/matmul.cu, which
// ports), the f32 kernel never takes its TF32 path (device_runs_mma_kernels() answers false), and
// the BLAS lookup below always reports "not loaded". Replace them one at a time: rocBLAS for the
// GEMMs (runtime/rocblas.cpp implementing runtime/cublas.h), rocWMMA for tensor-core matmul and
// attention.
#include <stdexcept>
#include <string>

#include "kernels/attention_backward.cuh"
#include "kernels/attention_backward_wgmma.cuh"
#include "kernels/attention_forward.cuh"
#include "kernels/attention_forward_wgmma.cuh"
#include "kernels/matmul.cuh"
#include "kernels/matmul_split_k.cuh"
#include "runtime/cublas.h"
#include "runtime/cuda_error.h"

namespace kiln {

cudaError_t launch_attention_forward(const LaunchContext&, int, const AttentionProblem&,
                                     const AttentionForwardTensors&) {
  return hipErrorNotSupported;
}

bool attention_forward_wgmma_supports(int, const AttentionProblem&, const AttentionForwardTensors&) { return false; }

cudaError_t launch_attention_forward_wgmma(const LaunchContext&, int, const AttentionProblem&,
                                           const AttentionForwardTensors&, bool& maps_refused) {
  maps_refused = true;
  return hipErrorNotSupported;
}

unsigned long long wgmma_attention_forward_launches() { return 0; }

unsigned long long wgmma_attention_backward_launches() { return 0; }

cudaError_t launch_attention_backward(const LaunchContext&, int, const AttentionProblem&,
                                      const AttentionBackwardTensors&) {
  return hipErrorNotSupported;
}

cudaError_t launch_matmul_f32_tf32(const LaunchContext&, const MatmulShape&, const MatmulF32Launch&) {
  return hipErrorNotSupported;
}

cudaError_t launch_matmul_f32_async(const LaunchContext&, const MatmulShape&, const MatmulF32Launch&, int) {
  return hipErrorNotSupported;
}

SplitKPlan plan_mma_split_k(const LaunchContext&, const MatmulShape&) { return SplitKPlan{1, 0}; }

cudaError_t launch_matmul_wmma_f16(const LaunchContext&, const void*, const void*, void*, const MatmulShape&) {
  return hipErrorNotSupported;
}

cudaError_t launch_matmul_wmma_bf16(const LaunchContext&, const void*, const void*, void*, const MatmulShape&) {
  return hipErrorNotSupported;
}

cudaError_t launch_matmul_mma_f16(const LaunchContext&, const void*, const void*, void*, const MatmulShape&) {
  return hipErrorNotSupported;
}

cudaError_t launch_matmul_mma_bf16(const LaunchContext&, const void*, const void*, void*, const MatmulShape&) {
  return hipErrorNotSupported;
}

cudaError_t launch_matmul_wgmma_f16(const LaunchContext&, const void*, const void*, void*, const MatmulShape&,
                                    bool& maps_refused) {
  maps_refused = true;
  return hipErrorNotSupported;
}

cudaError_t launch_matmul_wgmma_bf16(const LaunchContext&, const void*, const void*, void*, const MatmulShape&,
                                     bool& maps_refused) {
  maps_refused = true;
  return hipErrorNotSupported;
}

bool device_runs_mma_kernels() { return false; }

bool device_runs_wgmma_kernels() { return false; }

HalfMatmulKernel choose_half_matmul_kernel(const LaunchContext&, const void*, const void*, const MatmulShape&) {
  return HalfMatmulKernel::kWmma;
}

const CublasLookup& find_cublas(const std::string&) {
  static const CublasLookup none{false, "", "this ROCm build has no BLAS loader yet (rocBLAS support is future work)",
                                 nullptr};
  return none;
}

CublasSession::CublasSession(const CublasLookup&, cudaStream_t, bool allow_tf32) : allow_tf32_(allow_tf32) {
  throw NativeError(ErrorKind::kDevice, "rocm backend: no BLAS library is loaded in this build");
}

CublasSession::~CublasSession() = default;

bool CublasSession::fits(const MatmulShape&) { return false; }

void CublasSession::gemm(int, const void*, const void*, void*, const MatmulShape&) {
  throw NativeError(ErrorKind::kDevice, "rocm backend: no BLAS library is loaded in this build");
}

std::string cublas_version_text(int version) { return std::to_string(version); }

}  // namespace kiln
