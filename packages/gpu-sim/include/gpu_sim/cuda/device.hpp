// gpu_sim/cuda/device.hpp — the CUDA device dialect on top of the engine: what a `.cu` kernel
// needs to compile as plain C++ and run in the simulator.
//
//  - qualifiers: __global__/__device__/__host__/__forceinline__/__launch_bounds__ vanish;
//    __shared__ becomes `static thread_local` (one copy per worker thread = per running block);
//    dynamic shared memory is GPU_SIM_EXTERN_SHARED(type, name) (a plain `extern __shared__`
//    array cannot be expressed as a macro); vendor headers wrap it.
//  - threadIdx/blockIdx/blockDim/gridDim/warpSize read the running fiber's coordinates.
//  - __syncthreads*, __syncwarp, shuffles, votes and __reduce_*_sync go through the engine, so
//    they really synchronise and report divergence with the kernel name and file:line.
//  - vector types (float4, uint4, int2, …) whose every load and store checks its alignment as
//    the GPU does and aborts the launch with the kernel and file:line (vector_access.hpp).
//  - atomics, bit intrinsics, the explicitly rounded arithmetic (__fmul_rn, __dadd_rn, …),
//    saturating conversions (__float2int_rz) and __half/__nv_bfloat16 with their conversions.
//
// Numerics: host float math follows IEEE round-to-nearest (build with -ffp-contract=off so no
// FMA is formed where nvcc would not form one either); __expf/__logf/rsqrtf are the accurate
// functions here, which is within the fast intrinsics' error bounds on the device.
#pragma once

#include <math.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <source_location>
#include <type_traits>

#include "../atomics.hpp"
#include "../collectives.hpp"
#include "../engine.hpp"
#include "../half.hpp"
#include "../vector_access.hpp"

/** Defined when CUDA sources are compiled for the simulator (never together with __CUDACC__). */
#define GPU_SIM_CUDA 1

// ---- vector types ----
struct uint3 {
  unsigned x, y, z;
};

struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned x_value = 1, unsigned y_value = 1, unsigned z_value = 1)
      : x(x_value), y(y_value), z(z_value) {}
  constexpr dim3(uint3 value) : x(value.x), y(value.y), z(value.z) {}
  constexpr operator uint3() const { return uint3{x, y, z}; }
};

// Vector types aligned to their size; every load (copy) and store (assignment) through one checks
// that alignment as the GPU does (gpu_sim/vector_access.hpp), so they are not trivially copyable:
// memcpy into them is fine here, hence -Wclass-memaccess is off for the translation unit.
#pragma GCC diagnostic ignored "-Wclass-memaccess"

#define GPU_SIM_CUDA_VECTOR2(name, scalar)                                                                          \
  struct alignas(2 * sizeof(scalar)) name {                                                                         \
    scalar x, y;                                                                                                    \
    GPU_SIM_CHECKED_VECTOR;                                                                                         \
    static const char* type_name() { return #name; }                                                                \
    name() = default;                                                                                               \
    constexpr name(scalar x_value, scalar y_value) : x(x_value), y(y_value) {}                                      \
    name(const name& other, std::source_location site = std::source_location::current()) : x(other.x), y(other.y) { \
      ::gpu_sim::check_vector_alignment(&other, sizeof(name), type_name, "load", site);                             \
    }                                                                                                               \
    name& operator=(const name&) && = delete;                                                                       \
    name& operator=(::gpu_sim::StoredValue<name> stored) & {                                                        \
      ::gpu_sim::check_vector_alignment(this, sizeof(name), type_name, "store", stored.site);                       \
      x = stored.value.x;                                                                                           \
      y = stored.value.y;                                                                                           \
      return *this;                                                                                                 \
    }                                                                                                               \
  }

#define GPU_SIM_CUDA_VECTOR4(name, scalar)                                                    \
  struct alignas(4 * sizeof(scalar)) name {                                                   \
    scalar x, y, z, w;                                                                        \
    GPU_SIM_CHECKED_VECTOR;                                                                   \
    static const char* type_name() { return #name; }                                          \
    name() = default;                                                                         \
    constexpr name(scalar x_value, scalar y_value, scalar z_value, scalar w_value)            \
        : x(x_value), y(y_value), z(z_value), w(w_value) {}                                   \
    name(const name& other, std::source_location site = std::source_location::current())      \
        : x(other.x), y(other.y), z(other.z), w(other.w) {                                    \
      ::gpu_sim::check_vector_alignment(&other, sizeof(name), type_name, "load", site);       \
    }                                                                                         \
    name& operator=(const name&) && = delete;                                                 \
    name& operator=(::gpu_sim::StoredValue<name> stored) & {                                  \
      ::gpu_sim::check_vector_alignment(this, sizeof(name), type_name, "store", stored.site); \
      x = stored.value.x;                                                                     \
      y = stored.value.y;                                                                     \
      z = stored.value.z;                                                                     \
      w = stored.value.w;                                                                     \
      return *this;                                                                           \
    }                                                                                         \
  }

GPU_SIM_CUDA_VECTOR2(float2, float);
GPU_SIM_CUDA_VECTOR4(float4, float);
GPU_SIM_CUDA_VECTOR2(int2, int);
GPU_SIM_CUDA_VECTOR4(int4, int);
GPU_SIM_CUDA_VECTOR2(uint2, unsigned);
GPU_SIM_CUDA_VECTOR4(uint4, unsigned);
GPU_SIM_CUDA_VECTOR2(double2, double);
#undef GPU_SIM_CUDA_VECTOR2
#undef GPU_SIM_CUDA_VECTOR4

inline float2 make_float2(float x, float y) { return float2{x, y}; }
inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
inline int2 make_int2(int x, int y) { return int2{x, y}; }
inline uint2 make_uint2(unsigned x, unsigned y) { return uint2{x, y}; }
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return uint4{x, y, z, w}; }

// ---- 16-bit float types (storage only; convert with the intrinsics below) ----
struct alignas(2) __half {
  unsigned short __x;
};
struct alignas(2) __nv_bfloat16 {
  unsigned short __x;
};
using half = __half;
using nv_bfloat16 = __nv_bfloat16;

inline float __half2float(__half value) { return gpu_sim::f16_bits_to_f32(value.__x); }
inline __half __float2half_rn(float value) { return __half{gpu_sim::f32_to_f16_bits(value)}; }
inline __half __float2half(float value) { return __float2half_rn(value); }
inline unsigned short __half_as_ushort(__half value) { return value.__x; }
inline __half __ushort_as_half(unsigned short bits) { return __half{bits}; }
inline float __bfloat162float(__nv_bfloat16 value) { return gpu_sim::bf16_bits_to_f32(value.__x); }
inline __nv_bfloat16 __float2bfloat16_rn(float value) { return __nv_bfloat16{gpu_sim::f32_to_bf16_bits(value)}; }
inline __nv_bfloat16 __float2bfloat16(float value) { return __float2bfloat16_rn(value); }
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 value) { return value.__x; }
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short bits) { return __nv_bfloat16{bits}; }

// ---- qualifiers ----
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __launch_bounds__(...)
#define __shared__ static thread_local
// A GNU attribute, not alignas: CUDA code writes `__shared__ __align__(16) float tile[…]`, where alignas may not stand.
#define __align__(bytes) __attribute__((aligned(bytes)))
#define GPU_SIM_EXTERN_SHARED(type, name) type* name = static_cast<type*>(::gpu_sim::current_runner().dynamic_shared())

// ---- coordinates ----
namespace gpu_sim::cuda {
inline uint3 thread_idx() {
  const Dim3& value = ::gpu_sim::thread_index();
  return uint3{value.x, value.y, value.z};
}
inline uint3 block_idx() {
  const Dim3& value = ::gpu_sim::block_index();
  return uint3{value.x, value.y, value.z};
}
inline dim3 block_dim() {
  const Dim3& value = ::gpu_sim::block_extent();
  return dim3(value.x, value.y, value.z);
}
inline dim3 grid_dim() {
  const Dim3& value = ::gpu_sim::grid_extent();
  return dim3(value.x, value.y, value.z);
}

inline constexpr CollectiveOp kShflSync{"__shfl_sync", shuffle_combine<0>};
inline constexpr CollectiveOp kShflUpSync{"__shfl_up_sync", shuffle_combine<1>};
inline constexpr CollectiveOp kShflDownSync{"__shfl_down_sync", shuffle_combine<2>};
inline constexpr CollectiveOp kShflXorSync{"__shfl_xor_sync", shuffle_combine<3>};
inline constexpr CollectiveOp kBallotSync{"__ballot_sync", vote_combine<0>};
inline constexpr CollectiveOp kAnySync{"__any_sync", vote_combine<1>};
inline constexpr CollectiveOp kAllSync{"__all_sync", vote_combine<2>};
inline constexpr CollectiveOp kSyncWarp{"__syncwarp", sync_combine};
inline constexpr CollectiveOp kReduceAddSync{"__reduce_add_sync", reduce_combine<0, false>};
inline constexpr CollectiveOp kReduceMinSync{"__reduce_min_sync", reduce_combine<1, false>};
inline constexpr CollectiveOp kReduceMaxSync{"__reduce_max_sync", reduce_combine<2, false>};
inline constexpr CollectiveOp kReduceMinSyncSigned{"__reduce_min_sync", reduce_combine<1, true>};
inline constexpr CollectiveOp kReduceMaxSyncSigned{"__reduce_max_sync", reduce_combine<2, true>};
inline constexpr CollectiveOp kReduceAndSync{"__reduce_and_sync", reduce_combine<3, false>};
inline constexpr CollectiveOp kReduceOrSync{"__reduce_or_sync", reduce_combine<4, false>};
inline constexpr CollectiveOp kReduceXorSync{"__reduce_xor_sync", reduce_combine<5, false>};
}  // namespace gpu_sim::cuda

#define threadIdx (::gpu_sim::cuda::thread_idx())
#define blockIdx (::gpu_sim::cuda::block_idx())
#define blockDim (::gpu_sim::cuda::block_dim())
#define gridDim (::gpu_sim::cuda::grid_dim())
inline constexpr int warpSize = 32;

// ---- barriers and fences ----
inline void __syncthreads(std::source_location site = std::source_location::current()) {
  gpu_sim::barrier("__syncthreads()", site);
}
inline int __syncthreads_count(int predicate, std::source_location site = std::source_location::current()) {
  return gpu_sim::current_runner().barrier_reduce("__syncthreads_count()", predicate, 0, site);
}
inline int __syncthreads_and(int predicate, std::source_location site = std::source_location::current()) {
  return gpu_sim::current_runner().barrier_reduce("__syncthreads_and()", predicate, 1, site);
}
inline int __syncthreads_or(int predicate, std::source_location site = std::source_location::current()) {
  return gpu_sim::current_runner().barrier_reduce("__syncthreads_or()", predicate, 2, site);
}
inline void __syncwarp(unsigned mask = 0xffffffffu, std::source_location site = std::source_location::current()) {
  gpu_sim::warp_collective_u32(gpu_sim::cuda::kSyncWarp, mask, 0, site);
}
inline void __threadfence() { gpu_sim::memory_fence(); }
inline void __threadfence_block() { gpu_sim::memory_fence(); }

// ---- warp shuffles, votes, reductions ----
template <typename T>
T __shfl_sync(unsigned mask, T value, int source_lane, int width = warpSize,
              std::source_location site = std::source_location::current()) {
  return gpu_sim::warp_shuffle(gpu_sim::cuda::kShflSync, mask, value, source_lane, width, site);
}
template <typename T>
T __shfl_up_sync(unsigned mask, T value, unsigned delta, int width = warpSize,
                 std::source_location site = std::source_location::current()) {
  return gpu_sim::warp_shuffle(gpu_sim::cuda::kShflUpSync, mask, value, static_cast<int>(delta), width, site);
}
template <typename T>
T __shfl_down_sync(unsigned mask, T value, unsigned delta, int width = warpSize,
                   std::source_location site = std::source_location::current()) {
  return gpu_sim::warp_shuffle(gpu_sim::cuda::kShflDownSync, mask, value, static_cast<int>(delta), width, site);
}
template <typename T>
T __shfl_xor_sync(unsigned mask, T value, int lane_mask, int width = warpSize,
                  std::source_location site = std::source_location::current()) {
  return gpu_sim::warp_shuffle(gpu_sim::cuda::kShflXorSync, mask, value, lane_mask, width, site);
}
inline unsigned __ballot_sync(unsigned mask, int predicate,
                              std::source_location site = std::source_location::current()) {
  return gpu_sim::warp_collective_u32(gpu_sim::cuda::kBallotSync, mask, predicate != 0 ? 1u : 0u, site);
}
inline int __any_sync(unsigned mask, int predicate, std::source_location site = std::source_location::current()) {
  return static_cast<int>(gpu_sim::warp_collective_u32(gpu_sim::cuda::kAnySync, mask, predicate != 0 ? 1u : 0u, site));
}
inline int __all_sync(unsigned mask, int predicate, std::source_location site = std::source_location::current()) {
  return static_cast<int>(gpu_sim::warp_collective_u32(gpu_sim::cuda::kAllSync, mask, predicate != 0 ? 1u : 0u, site));
}
inline unsigned __activemask() { return gpu_sim::current_runner().live_lanes(); }
inline unsigned __reduce_add_sync(unsigned mask, unsigned value,
                                  std::source_location site = std::source_location::current()) {
  return gpu_sim::warp_collective_u32(gpu_sim::cuda::kReduceAddSync, mask, value, site);
}
inline int __reduce_add_sync(unsigned mask, int value, std::source_location site = std::source_location::current()) {
  return static_cast<int>(
      gpu_sim::warp_collective_u32(gpu_sim::cuda::kReduceAddSync, mask, static_cast<unsigned>(value), site));
}
inline unsigned __reduce_min_sync(unsigned mask, unsigned value,
                                  std::source_location site = std::source_location::current()) {
  return gpu_sim::warp_collective_u32(gpu_sim::cuda::kReduceMinSync, mask, value, site);
}
inline int __reduce_min_sync(unsigned mask, int value, std::source_location site = std::source_location::current()) {
  return static_cast<int>(
      gpu_sim::warp_collective_u32(gpu_sim::cuda::kReduceMinSyncSigned, mask, static_cast<unsigned>(value), site));
}
inline unsigned __reduce_max_sync(unsigned mask, unsigned value,
                                  std::source_location site = std::source_location::current()) {
  return gpu_sim::warp_collective_u32(gpu_sim::cuda::kReduceMaxSync, mask, value, site);
}
inline int __reduce_max_sync(unsigned mask, int value, std::source_location site = std::source_location::current()) {
  return static_cast<int>(
      gpu_sim::warp_collective_u32(gpu_sim::cuda::kReduceMaxSyncSigned, mask, static_cast<unsigned>(value), site));
}
inline unsigned __reduce_and_sync(unsigned mask, unsigned value,
                                  std::source_location site = std::source_location::current()) {
  return gpu_sim::warp_collective_u32(gpu_sim::cuda::kReduceAndSync, mask, value, site);
}
inline unsigned __reduce_or_sync(unsigned mask, unsigned value,
                                 std::source_location site = std::source_location::current()) {
  return gpu_sim::warp_collective_u32(gpu_sim::cuda::kReduceOrSync, mask, value, site);
}
inline unsigned __reduce_xor_sync(unsigned mask, unsigned value,
                                  std::source_location site = std::source_location::current()) {
  return gpu_sim::warp_collective_u32(gpu_sim::cuda::kReduceXorSync, mask, value, site);
}

// ---- atomics ----
inline int atomicAdd(int* address, int value) {
  // Two's complement wrap-around, without signed-overflow undefined behaviour.
  return static_cast<int>(gpu_sim::atomic_add(reinterpret_cast<unsigned*>(address), static_cast<unsigned>(value)));
}
inline unsigned atomicAdd(unsigned* address, unsigned value) { return gpu_sim::atomic_add(address, value); }
inline unsigned long long atomicAdd(unsigned long long* address, unsigned long long value) {
  return gpu_sim::atomic_add(address, value);
}
inline float atomicAdd(float* address, float value) { return gpu_sim::atomic_add(address, value); }
inline double atomicAdd(double* address, double value) { return gpu_sim::atomic_add(address, value); }
inline __half atomicAdd(__half* address, __half value) {
  return __half{gpu_sim::atomic_add_half_bits<false>(reinterpret_cast<std::uint16_t*>(address), __half2float(value))};
}
inline __nv_bfloat16 atomicAdd(__nv_bfloat16* address, __nv_bfloat16 value) {
  return __nv_bfloat16{
      gpu_sim::atomic_add_half_bits<true>(reinterpret_cast<std::uint16_t*>(address), __bfloat162float(value))};
}
inline int atomicSub(int* address, int value) {
  return static_cast<int>(gpu_sim::atomic_sub(reinterpret_cast<unsigned*>(address), static_cast<unsigned>(value)));
}
inline unsigned atomicSub(unsigned* address, unsigned value) { return gpu_sim::atomic_sub(address, value); }
inline int atomicExch(int* address, int value) { return gpu_sim::atomic_exchange(address, value); }
inline unsigned atomicExch(unsigned* address, unsigned value) { return gpu_sim::atomic_exchange(address, value); }
inline unsigned long long atomicExch(unsigned long long* address, unsigned long long value) {
  return gpu_sim::atomic_exchange(address, value);
}
inline float atomicExch(float* address, float value) { return gpu_sim::atomic_exchange(address, value); }
inline int atomicCAS(int* address, int expected, int desired) {
  return gpu_sim::atomic_compare_exchange(address, expected, desired);
}
inline unsigned atomicCAS(unsigned* address, unsigned expected, unsigned desired) {
  return gpu_sim::atomic_compare_exchange(address, expected, desired);
}
inline unsigned long long atomicCAS(unsigned long long* address, unsigned long long expected,
                                    unsigned long long desired) {
  return gpu_sim::atomic_compare_exchange(address, expected, desired);
}
inline unsigned short atomicCAS(unsigned short* address, unsigned short expected, unsigned short desired) {
  return gpu_sim::atomic_compare_exchange(address, expected, desired);
}
inline int atomicMax(int* address, int value) { return gpu_sim::atomic_max(address, value); }
inline unsigned atomicMax(unsigned* address, unsigned value) { return gpu_sim::atomic_max(address, value); }
inline long long atomicMax(long long* address, long long value) { return gpu_sim::atomic_max(address, value); }
inline unsigned long long atomicMax(unsigned long long* address, unsigned long long value) {
  return gpu_sim::atomic_max(address, value);
}
inline int atomicMin(int* address, int value) { return gpu_sim::atomic_min(address, value); }
inline unsigned atomicMin(unsigned* address, unsigned value) { return gpu_sim::atomic_min(address, value); }
inline long long atomicMin(long long* address, long long value) { return gpu_sim::atomic_min(address, value); }
inline unsigned long long atomicMin(unsigned long long* address, unsigned long long value) {
  return gpu_sim::atomic_min(address, value);
}
inline int atomicOr(int* address, int value) { return gpu_sim::atomic_or(address, value); }
inline unsigned atomicOr(unsigned* address, unsigned value) { return gpu_sim::atomic_or(address, value); }
inline int atomicAnd(int* address, int value) { return gpu_sim::atomic_and(address, value); }
inline unsigned atomicAnd(unsigned* address, unsigned value) { return gpu_sim::atomic_and(address, value); }

// ---- bit reinterpretation and integer intrinsics ----
inline unsigned __float_as_uint(float value) { return gpu_sim::float_bits(value); }
inline float __uint_as_float(unsigned bits) { return gpu_sim::bits_float(bits); }
inline int __float_as_int(float value) { return static_cast<int>(gpu_sim::float_bits(value)); }
inline float __int_as_float(int bits) { return gpu_sim::bits_float(static_cast<unsigned>(bits)); }
inline long long __double_as_longlong(double value) {
  long long bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}
inline double __longlong_as_double(long long bits) {
  double value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}
inline unsigned __umulhi(unsigned left, unsigned right) {
  return static_cast<unsigned>((static_cast<unsigned long long>(left) * right) >> 32);
}
inline int __mulhi(int left, int right) { return static_cast<int>((static_cast<long long>(left) * right) >> 32); }
inline unsigned long long __umul64hi(unsigned long long left, unsigned long long right) {
  return static_cast<unsigned long long>((static_cast<unsigned __int128>(left) * right) >> 64);
}
inline int __popc(unsigned value) { return __builtin_popcount(value); }
inline int __popcll(unsigned long long value) { return __builtin_popcountll(value); }
inline int __clz(int value) { return value == 0 ? 32 : __builtin_clz(static_cast<unsigned>(value)); }
inline int __clzll(long long value) {
  return value == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(value));
}
inline int __ffs(int value) { return __builtin_ffs(value); }
inline int __ffsll(long long value) { return __builtin_ffsll(value); }
inline unsigned __brev(unsigned value) {
  unsigned result = 0;
  for (int bit = 0; bit < 32; bit++) result |= ((value >> bit) & 1u) << (31 - bit);
  return result;
}

// ---- float intrinsics (explicit rounding; no contraction into FMA) ----
inline float rsqrtf(float value) { return 1.0f / sqrtf(value); }
inline double rsqrt(double value) { return 1.0 / std::sqrt(value); }
inline float __frsqrt_rn(float value) { return 1.0f / sqrtf(value); }
inline float __fdividef(float left, float right) { return left / right; }
inline float __expf(float value) { return expf(value); }
inline float __logf(float value) { return logf(value); }
inline float __sinf(float value) { return sinf(value); }
inline float __cosf(float value) { return cosf(value); }
inline float __tanf(float value) { return tanf(value); }
inline float __powf(float base, float exponent) { return powf(base, exponent); }
inline float __saturatef(float value) {
  return value != value ? 0.0f : value < 0.0f ? 0.0f : value > 1.0f ? 1.0f : value;
}
inline float __frcp_rn(float value) { return 1.0f / value; }
inline float __fadd_rn(float left, float right) { return left + right; }
inline float __fsub_rn(float left, float right) { return left - right; }
inline float __fmul_rn(float left, float right) { return left * right; }
inline float __fdiv_rn(float left, float right) { return left / right; }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline double __dadd_rn(double left, double right) { return left + right; }
inline double __dsub_rn(double left, double right) { return left - right; }
inline double __dmul_rn(double left, double right) { return left * right; }
inline double __ddiv_rn(double left, double right) { return left / right; }
inline double __fma_rn(double a, double b, double c) { return std::fma(a, b, c); }
inline double __dsqrt_rn(double value) { return std::sqrt(value); }
inline float __double2float_rn(double value) { return static_cast<float>(value); }
inline float __int2float_rn(int value) { return static_cast<float>(value); }
inline float __uint2float_rn(unsigned value) { return static_cast<float>(value); }
inline double __int2double_rn(int value) { return static_cast<double>(value); }
inline double __ll2double_rn(long long value) { return static_cast<double>(value); }
inline double __ull2double_rn(unsigned long long value) { return static_cast<double>(value); }

namespace gpu_sim::cuda {
/** cvt.rzi: toward zero, NaN → 0, saturating at the integer type's limits (C++ casts are undefined there). */
template <typename Integer, typename Float>
Integer truncate_saturating(Float value) {
  if (value != value) return 0;
  if (value <= static_cast<Float>(std::numeric_limits<Integer>::min())) return std::numeric_limits<Integer>::min();
  if (value >= static_cast<Float>(std::numeric_limits<Integer>::max())) return std::numeric_limits<Integer>::max();
  return static_cast<Integer>(value);
}
}  // namespace gpu_sim::cuda

inline int __float2int_rz(float value) { return gpu_sim::cuda::truncate_saturating<int>(value); }
inline unsigned __float2uint_rz(float value) { return gpu_sim::cuda::truncate_saturating<unsigned>(value); }
inline long long __float2ll_rz(float value) { return gpu_sim::cuda::truncate_saturating<long long>(value); }
inline int __double2int_rz(double value) { return gpu_sim::cuda::truncate_saturating<int>(value); }
inline long long __double2ll_rz(double value) { return gpu_sim::cuda::truncate_saturating<long long>(value); }

template <typename T>
inline T __ldg(const T* address) {
  return *address;
}

// CUDA's global min/max overloads for device code.
inline int min(int left, int right) { return left < right ? left : right; }
inline int max(int left, int right) { return left > right ? left : right; }
inline unsigned min(unsigned left, unsigned right) { return left < right ? left : right; }
inline unsigned max(unsigned left, unsigned right) { return left > right ? left : right; }
inline long long min(long long left, long long right) { return left < right ? left : right; }
inline long long max(long long left, long long right) { return left > right ? left : right; }
inline unsigned long long min(unsigned long long left, unsigned long long right) { return left < right ? left : right; }
inline unsigned long long max(unsigned long long left, unsigned long long right) { return left > right ? left : right; }
inline float min(float left, float right) { return fminf(left, right); }
inline float max(float left, float right) { return fmaxf(left, right); }
inline double min(double left, double right) { return fmin(left, right); }
inline double max(double left, double right) { return fmax(left, right); }
