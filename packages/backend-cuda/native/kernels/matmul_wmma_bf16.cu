// kernels/matmul_wmma_bf16.cu — the bf16 instantiation of the tensor-core matmul (matmul_wmma.cuh).
#include "matmul_wmma.cuh"

namespace kiln {

cudaError_t launch_matmul_wmma_bf16(const LaunchContext& context, const void* a, const void* b, void* out,
                                    const MatmulShape& shape) {
  return wmma_matmul::launch<__nv_bfloat16>(context, "matmul_wmma_kernel<bf16, 128×128>",
                                            "matmul_wmma_kernel<bf16, 64×64>", a, b, out, shape);
}

}  // namespace kiln
