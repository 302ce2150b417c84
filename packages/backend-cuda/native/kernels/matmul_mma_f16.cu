// kernels/matmul_mma_f16.cu — the f16 instantiation of the sm_80 pipelined tensor-core matmul (matmul_mma.cuh).
#include "matmul_mma.cuh"

namespace kiln {

cudaError_t launch_matmul_mma_f16(const LaunchContext& context, const void* a, const void* b, void* out,
                                  const MatmulShape& shape, void* workspace) {
  static constexpr mma_matmul::KernelNames kNames{"matmul_mma_kernel<f16, 128×128×32, 4 stages>",
                                                  "matmul_mma_kernel<f16, 64×64×32, 3 stages>",
                                                  "matmul_mma_kernel<f16, 64×64×32, 3 stages, split-K f32 partials>"};
  return mma_matmul::launch<__half>(context, kNames, a, b, out, shape, workspace);
}

}  // namespace kiln
