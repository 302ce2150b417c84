// kernels/ptx_wgmma.cuh — kiln's thin wrappers over the sm_90 / sm_90a PTX its Hopper kernels use:
// mbarrier (init, arrive, arrive.expect_tx, try_wait.parity loop), TMA bulk tensor copies
// (cp.async.bulk.tensor.3d/.4d global → shared, completing on an mbarrier; .3d shared → global in
// bulk groups, with commit_group and wait_group.read), wgmma m64nNk16 for
// N 64, 128 and (A from shared memory only) 192 and 256 (bf16/f16 → f32, B from a shared-memory matrix
// descriptor, A from one or from registers: wgmma_m64nk16 / wgmma_m64nk16_rs, typed over T and N), wgmma.fence /
// commit_group / wait_group, setmaxnreg and the proxy/barrier-init fences.
//
// On the device each wrapper is one `asm volatile`, compiled only for sm_90a (other targets trap:
// the host never launches a Hopper kernel on code without it, see matmul_wgmma.cu). In the
// simulator build they call gpu-sim's emulation (gpu_sim/cuda/mbarrier.hpp, tma.hpp, wgmma.hpp),
// which checks the warpgroup-collective rules, reports a barrier phase that can never complete
// and a wgmma that reads a stage before its copy arrived, with the kernel and file:line.
// Descriptor (64-bit): start address >> 4 in bits 0–13, leading-dimension byte offset >> 4 in
// 16–29, stride-dimension byte offset >> 4 in 32–45, swizzle in 62–63 (1 = 128B). Accumulator
// fragment of m64nNk16 (thread t of the warpgroup, w = t / 32, g = lane / 4, q = lane % 4):
// d[4j + 0..1] = D(16w + g, 8j + 2q .. +1), d[4j + 2..3] = D(16w + g + 8, 8j + 2q .. +1).
#pragma once

#include <cstdint>
#include <type_traits>

#include "common.cuh"

// Only with a vendor that has tensor maps (vendors/vendor.h); others build without the Hopper kernel.
#if defined(KILN_HAS_TENSOR_MAPS)

#if defined(KILN_CUDA_SIMULATOR)
#include <gpu_sim/cuda/mbarrier.hpp>
#include <gpu_sim/cuda/tma.hpp>
#include <gpu_sim/cuda/wgmma.hpp>
#endif

namespace kiln::ptx {

/** A wgmma shared-memory matrix descriptor with 128-byte swizzling (addresses and offsets in bytes). */
KILN_HOST_DEVICE inline std::uint64_t wgmma_descriptor_128b(std::uint32_t start, std::uint32_t leading_offset,
                                                            std::uint32_t stride_offset) {
  return static_cast<std::uint64_t>((start >> 4) & 0x3fffu) |
         (static_cast<std::uint64_t>((leading_offset >> 4) & 0x3fffu) << 16) |
         (static_cast<std::uint64_t>((stride_offset >> 4) & 0x3fffu) << 32) | (1ull << 62);
}

/**
 * The descriptor of a matrix `bytes` (a multiple of 16) past `descriptor`'s start: one 32-bit
 * add to the low word, as the start field (address >> 4, 14 bits) cannot carry below 256 KiB of
 * shared memory.
 */
KILN_HOST_DEVICE inline std::uint64_t wgmma_descriptor_advance(std::uint64_t descriptor, std::uint32_t bytes) {
  const std::uint32_t low = static_cast<std::uint32_t>(descriptor) + (bytes >> 4);
  return (descriptor & 0xffffffff00000000ull) | low;
}

#if defined(KILN_CUDA_SIMULATOR)

/** Shared-space address of a pointer into dynamic shared memory. */
inline std::uint32_t smem_address(const void* pointer, std::source_location site = std::source_location::current()) {
  return gpu_sim::ptx::shared_address(pointer, "a shared-space address", site);
}
/** mbarrier.init.shared.b64. */
inline void mbarrier_init(std::uint64_t* bar, unsigned count,
                          std::source_location site = std::source_location::current()) {
  gpu_sim::ptx::mbarrier_init(bar, count, site);
}
/** mbarrier.arrive.shared.b64 (one arrival). */
inline void mbarrier_arrive(std::uint64_t* bar, std::source_location site = std::source_location::current()) {
  gpu_sim::ptx::mbarrier_arrive(bar, site);
}
/** mbarrier.arrive.expect_tx.shared.b64: `bytes` of copies to come, then one arrival. */
inline void mbarrier_arrive_expect_tx(std::uint64_t* bar, unsigned bytes,
                                      std::source_location site = std::source_location::current()) {
  gpu_sim::ptx::mbarrier_arrive_expect_tx(bar, bytes, site);
}
/** Loops on mbarrier.try_wait.parity until the phase of `parity` has completed. */
inline void mbarrier_wait(std::uint64_t* bar, unsigned parity,
                          std::source_location site = std::source_location::current()) {
  gpu_sim::ptx::mbarrier_wait_parity(bar, parity, site);
}
/** fence.mbarrier_init.release.cluster (makes initialised barriers visible to the async proxy). */
inline void fence_barrier_init() {}
/** cp.async.bulk.tensor.3d global → shared: the box at (c0, c1, c2) of `map`, completing on `bar`. */
inline void tma_load_3d(void* shared, const vendor::TensorMap* map, int c0, int c1, int c2, std::uint64_t* bar,
                        std::source_location site = std::source_location::current()) {
  const std::int32_t coordinates[3] = {c0, c1, c2};
  gpu_sim::ptx::tma_load(shared, map, coordinates, bar, site);
}
/** cp.async.bulk.tensor.4d global → shared: the box at (c0, c1, c2, c3) of `map`, completing on `bar`. */
inline void tma_load_4d(void* shared, const vendor::TensorMap* map, int c0, int c1, int c2, int c3, std::uint64_t* bar,
                        std::source_location site = std::source_location::current()) {
  const std::int32_t coordinates[4] = {c0, c1, c2, c3};
  gpu_sim::ptx::tma_load(shared, map, coordinates, bar, site);
}
/** cp.async.bulk.tensor.3d.global.shared::cta.bulk_group: the shared box at `shared` to the box at (c0, c1, c2) of `map` (in-bounds elements). */
inline void tma_store_3d(const vendor::TensorMap* map, int c0, int c1, int c2, const void* shared,
                         std::source_location site = std::source_location::current()) {
  const std::int32_t coordinates[3] = {c0, c1, c2};
  gpu_sim::ptx::tma_store(map, coordinates, shared, site);
}
/** cp.async.bulk.commit_group: this thread's bulk stores so far become one group. */
inline void bulk_commit_group() { gpu_sim::ptx::bulk_commit_group(); }
/** cp.async.bulk.wait_group.read N: all but this thread's newest N groups of bulk stores have read their shared sources. */
template <int N>
inline void bulk_wait_group_read(std::source_location site = std::source_location::current()) {
  gpu_sim::ptx::bulk_wait_group_read(N, site);
}
/** fence.proxy.async.shared::cta: this thread's shared-memory stores become visible to later wgmma / TMA reads. */
inline void fence_proxy_async() { gpu_sim::ptx::fence_proxy_async(); }
/** wgmma.fence.sync.aligned. */
inline void wgmma_fence() { gpu_sim::ptx::wgmma_fence(); }
/** wgmma.commit_group.sync.aligned. */
inline void wgmma_commit(std::source_location site = std::source_location::current()) {
  gpu_sim::ptx::wgmma_commit_group(site);
}
/** wgmma.wait_group.sync.aligned N. */
template <int N>
inline void wgmma_wait(std::source_location site = std::source_location::current()) {
  gpu_sim::ptx::wgmma_wait_group(N, site);
}
/** The gpu-sim input type of a 16-bit storage type. */
template <typename T>
inline constexpr gpu_sim::ptx::MmaInput kMmaInput =
    std::is_same<T, __nv_bfloat16>::value ? gpu_sim::ptx::MmaInput::kBF16 : gpu_sim::ptx::MmaInput::kF16;
/** d (+)= A·B, m64nNk16, T inputs, A and B from shared-memory descriptors; TransA/TransB 1 = M-/N-major operand; scale_d 0 ignores d. */
template <typename T, int N, int TransA, int TransB>
inline void wgmma_m64nk16(float (&d)[N / 2], std::uint64_t desc_a, std::uint64_t desc_b, int scale_d,
                          std::source_location site = std::source_location::current()) {
  gpu_sim::ptx::wgmma_mma_async<N, kMmaInput<T>>(d, desc_a, desc_b, scale_d != 0, TransA != 0, TransB != 0, site);
}
/** d (+)= A·B, m64nNk16, A from registers (a: the fragment of gpu_sim/cuda/wgmma.hpp), B from shared memory. */
template <typename T, int N, int TransB>
inline void wgmma_m64nk16_rs(float (&d)[N / 2], const std::uint32_t (&a)[4], std::uint64_t desc_b, int scale_d,
                             std::source_location site = std::source_location::current()) {
  gpu_sim::ptx::wgmma_mma_async_rs<N, kMmaInput<T>>(d, a, desc_b, scale_d != 0, TransB != 0, site);
}
/** Compiler-only fence on a wgmma accumulator or register-A fragment (nothing to order in the simulator). */
template <typename Fragment>
inline void fence_operand(Fragment&) {}
/** A shared store whose only purpose is the device build's schedule (see the device version); stored here too. */
inline void store_before_wgmma_wait(float* slot, float value) { *slot = value; }
/** setmaxnreg.inc.sync.aligned.u32 (warpgroup-collective; checked in the simulator). */
template <int Registers>
inline void setmaxnreg_inc(std::source_location site = std::source_location::current()) {
  gpu_sim::ptx::setmaxnreg_inc<Registers>(site);
}
/** setmaxnreg.dec.sync.aligned.u32 (warpgroup-collective; checked in the simulator). */
template <int Registers>
inline void setmaxnreg_dec(std::source_location site = std::source_location::current()) {
  gpu_sim::ptx::setmaxnreg_dec<Registers>(site);
}

#else

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define KILN_PTX_SM90A(statement) __trap()
#else
#define KILN_PTX_SM90A(statement) statement
#endif

__device__ __forceinline__ std::uint32_t smem_address(const void* pointer) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(pointer));
}

__device__ __forceinline__ void mbarrier_init(std::uint64_t* bar, unsigned count) {
  KILN_PTX_SM90A(
      asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_address(bar)), "r"(count) : "memory"));
}
__device__ __forceinline__ void mbarrier_arrive(std::uint64_t* bar) {
  KILN_PTX_SM90A(asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_address(bar)) : "memory"));
}
__device__ __forceinline__ void mbarrier_arrive_expect_tx(std::uint64_t* bar, unsigned bytes) {
  KILN_PTX_SM90A(asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_address(bar)),
                              "r"(bytes) : "memory"));
}
__device__ __forceinline__ void mbarrier_wait(std::uint64_t* bar, unsigned parity) {
  std::uint32_t done = 0;
  do {
    KILN_PTX_SM90A(asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n" : "=r"(
            done) : "r"(smem_address(bar)),
        "r"(parity) : "memory"));
  } while (done == 0);
}
__device__ __forceinline__ void fence_barrier_init() {
  KILN_PTX_SM90A(asm volatile("fence.mbarrier_init.release.cluster;\n" :: : "memory"));
}
__device__ __forceinline__ void tma_load_3d(void* shared, const vendor::TensorMap* map, int c0, int c1, int c2,
                                            std::uint64_t* bar) {
  KILN_PTX_SM90A(asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n" ::
          "r"(smem_address(shared)),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(smem_address(bar)) : "memory"));
}
__device__ __forceinline__ void tma_load_4d(void* shared, const vendor::TensorMap* map, int c0, int c1, int c2, int c3,
                                            std::uint64_t* bar) {
  KILN_PTX_SM90A(
      asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, "
                   "%4, %5}], [%6];\n" ::"r"(smem_address(shared)),
                   "l"(reinterpret_cast<std::uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3),
                   "r"(smem_address(bar)) : "memory"));
}
__device__ __forceinline__ void tma_store_3d(const vendor::TensorMap* map, int c0, int c1, int c2, const void* shared) {
  KILN_PTX_SM90A(asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%1, %2, %3}], [%4];\n" ::"l"(
                                  reinterpret_cast<std::uint64_t>(map)),
                              "r"(c0), "r"(c1), "r"(c2), "r"(smem_address(shared)) : "memory"));
}
__device__ __forceinline__ void bulk_commit_group() {
  KILN_PTX_SM90A(asm volatile("cp.async.bulk.commit_group;\n" :: : "memory"));
}
template <int N>
__device__ __forceinline__ void bulk_wait_group_read() {
  KILN_PTX_SM90A(asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory"));
}
__device__ __forceinline__ void fence_proxy_async() {
  KILN_PTX_SM90A(asm volatile("fence.proxy.async.shared::cta;\n" :: : "memory"));
}
__device__ __forceinline__ void wgmma_fence() {
  KILN_PTX_SM90A(asm volatile("wgmma.fence.sync.aligned;\n" :: : "memory"));
}
__device__ __forceinline__ void wgmma_commit() {
  KILN_PTX_SM90A(asm volatile("wgmma.commit_group.sync.aligned;\n" :: : "memory"));
}
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  KILN_PTX_SM90A(asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory"));
}
// One wgmma.mma_async statement per (N, input type, A source), spelled by the macros below:
// accumulator lists of 32 (N 64), 64 (N 128), 96 (N 192) or 128 (N 256) registers, then the operand numbers that follow them.
#define KILN_WGMMA_D8(o)                                                                                      \
  "+f"(d[o]), "+f"(d[o + 1]), "+f"(d[o + 2]), "+f"(d[o + 3]), "+f"(d[o + 4]), "+f"(d[o + 5]), "+f"(d[o + 6]), \
      "+f"(d[o + 7])
#define KILN_WGMMA_D32 KILN_WGMMA_D8(0), KILN_WGMMA_D8(8), KILN_WGMMA_D8(16), KILN_WGMMA_D8(24)
#define KILN_WGMMA_D64 KILN_WGMMA_D32, KILN_WGMMA_D8(32), KILN_WGMMA_D8(40), KILN_WGMMA_D8(48), KILN_WGMMA_D8(56)
#define KILN_WGMMA_R32                                                                                              \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, " \
  "%24, %25, %26, %27, %28, %29, %30, %31}"
#define KILN_WGMMA_R64                                                                                              \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, " \
  "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, "  \
  "%46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define KILN_WGMMA_D96 KILN_WGMMA_D64, KILN_WGMMA_D8(64), KILN_WGMMA_D8(72), KILN_WGMMA_D8(80), KILN_WGMMA_D8(88)
#define KILN_WGMMA_R96                                                                                              \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, " \
  "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, "  \
  "%46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "                      \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, "            \
  "%84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}"
#define KILN_WGMMA_D128                                                                                          \
  KILN_WGMMA_D64, KILN_WGMMA_D8(64), KILN_WGMMA_D8(72), KILN_WGMMA_D8(80), KILN_WGMMA_D8(88), KILN_WGMMA_D8(96), \
      KILN_WGMMA_D8(104), KILN_WGMMA_D8(112), KILN_WGMMA_D8(120)
#define KILN_WGMMA_R128                                                                                             \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, " \
  "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, "  \
  "%46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "                      \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, "            \
  "%84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, "              \
  "%103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, "          \
  "%120, %121, %122, %123, %124, %125, %126, %127}"
/** A and B from descriptors: operands DA, DB (descriptors), SC (scale_d), TA, TB (transposes) after the accumulators. */
#define KILN_WGMMA_SS(SHAPE, TYPE, REGS, OUTS, DA, DB, SC, TA, TB)                                               \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #SC ", 0;\nwgmma.mma_async.sync.aligned." SHAPE ".f32." TYPE \
               "." TYPE " " REGS ", %" #DA ", %" #DB ", p, 1, 1, %" #TA ", %" #TB ";\n}\n"                       \
               : OUTS                                                                                            \
               : "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(TransA), "n"(TransB))
/** A from registers: operands A0 … A0 + 3 (a[0..3]), DB, SC, TB after the accumulators. */
#define KILN_WGMMA_RS(SHAPE, TYPE, REGS, OUTS, A0, A1, A2, A3, DB, SC, TB)                                       \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #SC ", 0;\nwgmma.mma_async.sync.aligned." SHAPE ".f32." TYPE \
               "." TYPE " " REGS ", {%" #A0 ", %" #A1 ", %" #A2 ", %" #A3 "}, %" #DB ", p, 1, 1, %" #TB ";\n}\n" \
               : OUTS                                                                                            \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d), "n"(TransB))

/** d (+)= A·B, m64nNk16 (N 64, 128, 192 or 256), T inputs, A and B from shared-memory descriptors (PTX transpose bits TransA/TransB). */
template <typename T, int N, int TransA, int TransB>
__device__ __forceinline__ void wgmma_m64nk16(float (&d)[N / 2], std::uint64_t desc_a, std::uint64_t desc_b,
                                              int scale_d) {
  static_assert(N == 64 || N == 128 || N == 192 || N == 256,
                "kiln wraps wgmma m64n64k16, m64n128k16, m64n192k16 and m64n256k16");
  constexpr bool kBf16 = std::is_same<T, __nv_bfloat16>::value;
  if constexpr (N == 64 && kBf16)
    KILN_PTX_SM90A(KILN_WGMMA_SS("m64n64k16", "bf16", KILN_WGMMA_R32, KILN_WGMMA_D32, 32, 33, 34, 35, 36));
  if constexpr (N == 64 && !kBf16)
    KILN_PTX_SM90A(KILN_WGMMA_SS("m64n64k16", "f16", KILN_WGMMA_R32, KILN_WGMMA_D32, 32, 33, 34, 35, 36));
  if constexpr (N == 128 && kBf16)
    KILN_PTX_SM90A(KILN_WGMMA_SS("m64n128k16", "bf16", KILN_WGMMA_R64, KILN_WGMMA_D64, 64, 65, 66, 67, 68));
  if constexpr (N == 128 && !kBf16)
    KILN_PTX_SM90A(KILN_WGMMA_SS("m64n128k16", "f16", KILN_WGMMA_R64, KILN_WGMMA_D64, 64, 65, 66, 67, 68));
  if constexpr (N == 192 && kBf16)
    KILN_PTX_SM90A(KILN_WGMMA_SS("m64n192k16", "bf16", KILN_WGMMA_R96, KILN_WGMMA_D96, 96, 97, 98, 99, 100));
  if constexpr (N == 192 && !kBf16)
    KILN_PTX_SM90A(KILN_WGMMA_SS("m64n192k16", "f16", KILN_WGMMA_R96, KILN_WGMMA_D96, 96, 97, 98, 99, 100));
  if constexpr (N == 256 && kBf16)
    KILN_PTX_SM90A(KILN_WGMMA_SS("m64n256k16", "bf16", KILN_WGMMA_R128, KILN_WGMMA_D128, 128, 129, 130, 131, 132));
  if constexpr (N == 256 && !kBf16)
    KILN_PTX_SM90A(KILN_WGMMA_SS("m64n256k16", "f16", KILN_WGMMA_R128, KILN_WGMMA_D128, 128, 129, 130, 131, 132));
}
/** d (+)= A·B, m64nNk16, A from registers (the m16n8k16 A fragment per warp, see gpu_sim/cuda/wgmma.hpp), B from shared memory. */
template <typename T, int N, int TransB>
__device__ __forceinline__ void wgmma_m64nk16_rs(float (&d)[N / 2], const std::uint32_t (&a)[4], std::uint64_t desc_b,
                                                 int scale_d) {
  static_assert(N == 64 || N == 128, "kiln wraps wgmma m64n64k16 and m64n128k16");
  constexpr bool kBf16 = std::is_same<T, __nv_bfloat16>::value;
  if constexpr (N == 64 && kBf16)
    KILN_PTX_SM90A(KILN_WGMMA_RS("m64n64k16", "bf16", KILN_WGMMA_R32, KILN_WGMMA_D32, 32, 33, 34, 35, 36, 37, 38));
  if constexpr (N == 64 && !kBf16)
    KILN_PTX_SM90A(KILN_WGMMA_RS("m64n64k16", "f16", KILN_WGMMA_R32, KILN_WGMMA_D32, 32, 33, 34, 35, 36, 37, 38));
  if constexpr (N == 128 && kBf16)
    KILN_PTX_SM90A(KILN_WGMMA_RS("m64n128k16", "bf16", KILN_WGMMA_R64, KILN_WGMMA_D64, 64, 65, 66, 67, 68, 69, 70));
  if constexpr (N == 128 && !kBf16)
    KILN_PTX_SM90A(KILN_WGMMA_RS("m64n128k16", "f16", KILN_WGMMA_R64, KILN_WGMMA_D64, 64, 65, 66, 67, 68, 69, 70));
}

#undef KILN_WGMMA_RS
#undef KILN_WGMMA_SS
#undef KILN_WGMMA_R128
#undef KILN_WGMMA_R96
#undef KILN_WGMMA_R64
#undef KILN_WGMMA_R32
#undef KILN_WGMMA_D128
#undef KILN_WGMMA_D96
#undef KILN_WGMMA_D64
#undef KILN_WGMMA_D32
#undef KILN_WGMMA_D8

/**
 * Compiler-only fence on a wgmma accumulator (float) or register-A (uint32) fragment: an empty asm
 * that reads and rewrites every register, so the compiler moves no use or definition of them
 * across the wgmma issue / commit / wait statements around it (ptxas would otherwise serialise the
 * wgmma pipeline, C7514/C7515). Emits no instruction.
 */
template <int kRows, int kColumns>
__device__ __forceinline__ void fence_operand(float (&fragment)[kRows][kColumns]) {
#pragma unroll
  for (int row = 0; row < kRows; row++) {
#pragma unroll
    for (int column = 0; column < kColumns; column++) asm volatile("" : "+f"(fragment[row][column])::"memory");
  }
}
template <int kRows, int kColumns>
__device__ __forceinline__ void fence_operand(std::uint32_t (&fragment)[kRows][kColumns]) {
#pragma unroll
  for (int row = 0; row < kRows; row++) {
#pragma unroll
    for (int column = 0; column < kColumns; column++) asm volatile("" : "+r"(fragment[row][column])::"memory");
  }
}
/**
 * st.shared.f32 of `value` to `slot` (shared memory, this thread's own, never read). ptxas keeps
 * a wgmma.wait_group after shared stores (the wgmma may read shared memory), so everything
 * `value` depends on is scheduled before the wait; without it ptxas may hoist the wait above
 * independent arithmetic meant to overlap the tensor cores.
 */
__device__ __forceinline__ void store_before_wgmma_wait(float* slot, float value) {
  asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(smem_address(slot)), "f"(value) : "memory");
}
template <int Registers>
__device__ __forceinline__ void setmaxnreg_inc() {
  KILN_PTX_SM90A(asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Registers)));
}
template <int Registers>
__device__ __forceinline__ void setmaxnreg_dec() {
  KILN_PTX_SM90A(asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Registers)));
}

#undef KILN_PTX_SM90A

#endif

}  // namespace kiln::ptx

#endif
