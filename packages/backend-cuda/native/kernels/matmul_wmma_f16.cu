// kernels/matmul_wmma_f16.cu — the f16 instantiation of the tensor-core matmul (matmul_wmma.cuh).
#include "matmul_wmma.cuh"

namespace kiln {

cudaError_t launch_matmul_wmma_f16(const LaunchContext& context, const void* a, const void* b, void* out,
                                   const MatmulShape& shape) {
  return wmma_matmul::launch<__half>(context, "matmul_wmma_kernel<f16, 128×128>", "matmul_wmma_kernel<f16, 64×64>", a,
                                     b, out, shape);
}

}  // namespace kiln
