// kernels/matmul_wgmma_bf16.cu — the bf16 instantiations of the sm_90a warp-specialised wgmma + TMA matmul (matmul_wgmma.cuh).
#include "matmul_wgmma.cuh"

namespace kiln {

cudaError_t launch_matmul_wgmma_bf16(const LaunchContext& context, const void* a, const void* b, void* out,
                                     const MatmulShape& shape, void* workspace, bool& maps_refused) {
#if defined(KILN_HAS_TENSOR_MAPS)
  static constexpr wgmma_matmul::KernelNames kNames = {
      {"matmul_wgmma_kernel<bf16, nn>", "matmul_wgmma_kernel<bf16, nt>", "matmul_wgmma_kernel<bf16, tn>",
       "matmul_wgmma_kernel<bf16, tt>"},
      {"matmul_wgmma_kernel<bf16, nn, 128x192>", "matmul_wgmma_kernel<bf16, nt, 128x192>",
       "matmul_wgmma_kernel<bf16, tn, 128x192>", "matmul_wgmma_kernel<bf16, tt, 128x192>"},
      {"matmul_wgmma_kernel<bf16, nn, 128x256>", "matmul_wgmma_kernel<bf16, nt, 128x256>",
       "matmul_wgmma_kernel<bf16, tn, 128x256>", "matmul_wgmma_kernel<bf16, tt, 128x256>"}};
  return wgmma_matmul::launch<__nv_bfloat16>(context, kNames, a, b, out, shape, workspace, maps_refused);
#else
  (void)context, (void)a, (void)b, (void)out, (void)shape, (void)workspace;
  maps_refused = true;
  return cudaSuccess;
#endif
}

}  // namespace kiln
