// kernels/ptx_mma.cuh — kiln's thin wrappers over the sm_80 PTX instructions its pipelined
// tensor-core kernels use: mma.sync m16n8k16 (f16/bf16 → f32), m16n8k8 (tf32 → f32) with
// cvt.rna.tf32.f32, ldmatrix (x1/x2/x4, .trans) and
// cp.async (16 bytes .cg, 4 bytes .ca; src-size zero fill) with commit_group / wait_group; mma_m16n8k16<T>
// picks the f16 or bf16 form by storage type. Also ex2.approx.ftz (exp2_ftz), the attention
// kernels' exponential.
//
// On the device each wrapper is one `asm volatile` (sm_80 and newer; older targets trap). In the
// simulator build they call gpu-sim's emulation (gpu_sim/cuda/mma_sync.hpp, async_copy.hpp),
// which has the PTX ISA's register fragment layouts, the warp-collective checks, and deferred
// cp.async delivery (a read before the matching wait is reported with the kernel and file:line).
// Fragment layouts (g = lane / 4, t = lane % 4; two 16-bit elements per register, low half first):
//   A 16×16: a[0] = A(g, 2t..2t+1), a[1] = A(g+8, 2t..), a[2] = A(g, 2t+8..), a[3] = A(g+8, 2t+8..)
//   B 16×8:  b[0] = B(2t..2t+1, g), b[1] = B(2t+8..2t+9, g)
//   C/D 16×8 f32: d[0..1] = D(g, 2t..2t+1), d[2..3] = D(g+8, 2t..2t+1)
//   tf32 m16n8k8 (one element per register): A 16×8: a[0] = A(g, t), a[1] = A(g+8, t),
//   a[2] = A(g, t+4), a[3] = A(g+8, t+4); B 8×8: b[0] = B(t, g), b[1] = B(t+4, g); C/D as above.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "common.cuh"

#if defined(KILN_CUDA_SIMULATOR)
#include <gpu_sim/cuda/async_copy.hpp>
#include <gpu_sim/cuda/mma_sync.hpp>
#endif

namespace kiln::ptx {

#if defined(KILN_CUDA_SIMULATOR)

/** d += a·b, bf16 inputs, f32 accumulators (warp-collective). */
inline void mma_m16n8k16_bf16(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2],
                              std::source_location site = std::source_location::current()) {
  gpu_sim::ptx::mma_m16n8k16<gpu_sim::ptx::MmaInput::kBF16>(d, a, b, d, site);
}
/** d += a·b, f16 inputs, f32 accumulators (warp-collective). */
inline void mma_m16n8k16_f16(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2],
                             std::source_location site = std::source_location::current()) {
  gpu_sim::ptx::mma_m16n8k16<gpu_sim::ptx::MmaInput::kF16>(d, a, b, d, site);
}
/** d += a·b for one m16n8k8 tile of tf32 inputs (one element per register), f32 accumulators (warp-collective). */
inline void mma_m16n8k8_tf32(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2],
                             std::source_location site = std::source_location::current()) {
  gpu_sim::ptx::mma_m16n8k8_tf32(d, a, b, d, site);
}
/** cvt.rna.tf32.f32: x rounded to tf32 (to nearest, ties away from zero), as an f32 bit pattern. */
inline std::uint32_t cvt_rna_tf32(float x) { return gpu_sim::ptx::cvt_rna_tf32(x); }
/** d += a·b for storage type T (__half or __nv_bfloat16), f32 accumulators (warp-collective). */
template <typename T>
inline void mma_m16n8k16(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2],
                         std::source_location site = std::source_location::current()) {
  if constexpr (std::is_same_v<T, __half>) {
    mma_m16n8k16_f16(d, a, b, site);
  } else {
    static_assert(std::is_same_v<T, __nv_bfloat16>, "mma.sync m16n8k16 takes f16 or bf16 inputs");
    mma_m16n8k16_bf16(d, a, b, site);
  }
}
/** ldmatrix.x4: lanes 8m…8m+7 address the rows of matrix m; lane l gets (row l/4, columns 2(l%4)…+1) of each. */
inline void ldmatrix_x4(std::uint32_t (&d)[4], const void* row,
                        std::source_location site = std::source_location::current()) {
  gpu_sim::ptx::ldmatrix<4, false>(d, row, site);
}
/** ldmatrix.x4.trans: lane l gets (rows 2(l%4)…+1, column l/4) of each matrix. */
inline void ldmatrix_x4_trans(std::uint32_t (&d)[4], const void* row,
                              std::source_location site = std::source_location::current()) {
  gpu_sim::ptx::ldmatrix<4, true>(d, row, site);
}
/** ldmatrix.x2 (lanes 0–15 address rows). */
inline void ldmatrix_x2(std::uint32_t (&d)[2], const void* row,
                        std::source_location site = std::source_location::current()) {
  gpu_sim::ptx::ldmatrix<2, false>(d, row, site);
}
/** ldmatrix.x2.trans. */
inline void ldmatrix_x2_trans(std::uint32_t (&d)[2], const void* row,
                              std::source_location site = std::source_location::current()) {
  gpu_sim::ptx::ldmatrix<2, true>(d, row, site);
}
/** ldmatrix.x1 (lanes 0–7 address rows). */
inline void ldmatrix_x1(std::uint32_t (&d)[1], const void* row,
                        std::source_location site = std::source_location::current()) {
  gpu_sim::ptx::ldmatrix<1, false>(d, row, site);
}
/** ldmatrix.x1.trans. */
inline void ldmatrix_x1_trans(std::uint32_t (&d)[1], const void* row,
                              std::source_location site = std::source_location::current()) {
  gpu_sim::ptx::ldmatrix<1, true>(d, row, site);
}
/** cp.async.cg 16 bytes global → shared; `source_bytes` (0…16) are read, the rest zero-filled. */
inline void cp_async_16(void* shared, const void* global, unsigned source_bytes,
                        std::source_location site = std::source_location::current()) {
  gpu_sim::ptx::cp_async(shared, global, 16, source_bytes, true, site);
}
/** cp.async.ca 4 bytes global → shared; `source_bytes` (0 or 4) are read, the rest zero-filled. */
inline void cp_async_4(void* shared, const void* global, unsigned source_bytes,
                       std::source_location site = std::source_location::current()) {
  gpu_sim::ptx::cp_async(shared, global, 4, source_bytes, false, site);
}
/** cp.async.commit_group. */
inline void cp_async_commit() { gpu_sim::ptx::commit_group(); }
/** cp.async.wait_group N: at most N of this thread's committed groups still in flight. */
template <int N>
inline void cp_async_wait() {
  gpu_sim::ptx::wait_group(N);
}

#else

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#define KILN_PTX_SM80(statement) __trap()
#else
#define KILN_PTX_SM80(statement) statement
#endif

__device__ __forceinline__ unsigned shared_address(const void* pointer) {
  return static_cast<unsigned>(__cvta_generic_to_shared(pointer));
}

__device__ __forceinline__ void mma_m16n8k16_bf16(float (&d)[4], const std::uint32_t (&a)[4],
                                                  const std::uint32_t (&b)[2]) {
  KILN_PTX_SM80(asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, "
      "%3};\n" : "+f"(d[0]),
      "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1])));
}
__device__ __forceinline__ void mma_m16n8k16_f16(float (&d)[4], const std::uint32_t (&a)[4],
                                                 const std::uint32_t (&b)[2]) {
  KILN_PTX_SM80(asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, "
      "%3};\n" : "+f"(d[0]),
      "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1])));
}
__device__ __forceinline__ void mma_m16n8k8_tf32(float (&d)[4], const std::uint32_t (&a)[4],
                                                 const std::uint32_t (&b)[2]) {
  KILN_PTX_SM80(asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, "
      "%3};\n" : "+f"(d[0]),
      "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1])));
}
__device__ __forceinline__ std::uint32_t cvt_rna_tf32(float x) {
  std::uint32_t bits = 0;
  KILN_PTX_SM80(asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(bits) : "f"(x)));
  return bits;
}
/** d += a·b for storage type T (__half or __nv_bfloat16), f32 accumulators (warp-collective). */
template <typename T>
__device__ __forceinline__ void mma_m16n8k16(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2]) {
  if constexpr (std::is_same_v<T, __half>) {
    mma_m16n8k16_f16(d, a, b);
  } else {
    static_assert(std::is_same_v<T, __nv_bfloat16>, "mma.sync m16n8k16 takes f16 or bf16 inputs");
    mma_m16n8k16_bf16(d, a, b);
  }
}
__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&d)[4], const void* row) {
  KILN_PTX_SM80(asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n" : "=r"(d[0]),
                             "=r"(d[1]), "=r"(d[2]), "=r"(d[3]) : "r"(shared_address(row))));
}
__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&d)[4], const void* row) {
  KILN_PTX_SM80(asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n" : "=r"(d[0]),
                             "=r"(d[1]), "=r"(d[2]), "=r"(d[3]) : "r"(shared_address(row))));
}
__device__ __forceinline__ void ldmatrix_x2(std::uint32_t (&d)[2], const void* row) {
  KILN_PTX_SM80(asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n" : "=r"(d[0]),
                             "=r"(d[1]) : "r"(shared_address(row))));
}
__device__ __forceinline__ void ldmatrix_x2_trans(std::uint32_t (&d)[2], const void* row) {
  KILN_PTX_SM80(asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n" : "=r"(d[0]),
                             "=r"(d[1]) : "r"(shared_address(row))));
}
__device__ __forceinline__ void ldmatrix_x1(std::uint32_t (&d)[1], const void* row) {
  KILN_PTX_SM80(
      asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n" : "=r"(d[0]) : "r"(shared_address(row))));
}
__device__ __forceinline__ void ldmatrix_x1_trans(std::uint32_t (&d)[1], const void* row) {
  KILN_PTX_SM80(asm volatile(
      "ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n" : "=r"(d[0]) : "r"(shared_address(row))));
}
__device__ __forceinline__ void cp_async_16(void* shared, const void* global, unsigned source_bytes) {
  KILN_PTX_SM80(asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address(shared)),
                             "l"(__cvta_generic_to_global(global)), "r"(source_bytes) : "memory"));
}
__device__ __forceinline__ void cp_async_4(void* shared, const void* global, unsigned source_bytes) {
  KILN_PTX_SM80(asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(shared_address(shared)),
                             "l"(__cvta_generic_to_global(global)), "r"(source_bytes) : "memory"));
}
__device__ __forceinline__ void cp_async_commit() {
  KILN_PTX_SM80(asm volatile("cp.async.commit_group;\n" :: : "memory"));
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  KILN_PTX_SM80(asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"));
}

#undef KILN_PTX_SM80

#endif

/**
 * 2^x as one MUFU.EX2 (ex2.approx.ftz, every architecture): results below 2^-126 become 0. Every
 * attention exponent is s₂ − max or s₂ − lse ≤ 0, so a flushed value sits beside a term ≥ 1 and
 * no sum sees it; plain exp2f spends three more instructions per element keeping such values
 * subnormal. The simulator computes exp2f and flushes alike.
 */
#if KILN_DEVICE_CODE
__device__ __forceinline__ float exp2_ftz(float x) {
#if defined(KILN_CUDA_SIMULATOR)
  const float y = exp2f(x);
  return y < 1.17549435e-38f ? 0.0f : y;
#else
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#endif
}
#endif

}  // namespace kiln::ptx
