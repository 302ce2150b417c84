// gpu_sim/metal/simd.hpp — MSL's synchronisation and SIMD-group functions on the engine:
// threadgroup_barrier / simdgroup_barrier, simd_sum/product/max/min/and/or/xor, simd_prefix_*
// sums, simd_shuffle/_up/_down/_xor, simd_broadcast(_first), simd_ballot/all/any, simd_is_first,
// the 8×8 simdgroup matrices (simdgroup_float8x8, simdgroup_half8x8) with simdgroup_load/store,
// simdgroup_multiply(_accumulate) and make_filled_simdgroup_matrix, and builtin<T>() that the
// generated bindings use for [[thread_position_in_grid]] & co.
//
// Semantics: a simdgroup is 32 lanes (Apple GPUs; on AMD GPUs kiln's kernels read
// threads_per_simdgroup instead of assuming 32). simd_* functions act on the *active* lanes: the
// lanes that have not returned; those still running must all call the same function at the same
// source line (otherwise the launch fails naming both lines — divergence is an error, never a
// hang). A shuffle that reads a lane that returned is an error (undefined on the GPU).
// simd_sum/max/min fold in ascending lane order (the GPU's order is unspecified: float sums may
// differ in the last bits); simd_max/min on floats ignore NaN like fmax/fmin.
// Simdgroup matrices: every lane holds the whole 8×8 matrix; each simdgroup_* call is a
// simdgroup collective (so divergence is caught). A load or multiply is done once per simdgroup,
// by the collective, from the lowest lane's operands, after checking that every lane passed the
// same ones (a matrix is one value shared by the simdgroup: lanes with different copies mean a
// lane-dependent load, an error); the result is copied into every lane's matrix. Multiplies
// accumulate in f32 with fma in k order; stores write lane l's two elements (2l, 2l + 1 in
// row-major order), as the GPU distributes them.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <source_location>
#include <type_traits>

#include "../collectives.hpp"
#include "../engine.hpp"
#include "kernel_abi.hpp"
#include "types.hpp"

namespace gpu_sim::metal {

/** The value of builtin `kind` as the parameter's type (uint, ushort, uint2, uint3, …). */
template <typename T>
T builtin(Builtin kind) {
  const Dim3 value = builtin_value(kind);
  if constexpr (std::is_arithmetic_v<T>) {
    return static_cast<T>(value.x);
  } else if constexpr (T::kComponents == 2) {
    using C = typename T::value_type;
    return T(static_cast<C>(value.x), static_cast<C>(value.y));
  } else {
    using C = typename T::value_type;
    return T(static_cast<C>(value.x), static_cast<C>(value.y), static_cast<C>(value.z));
  }
}

namespace simd_detail {
struct Plus {
  static constexpr const char* kName = "simd_sum";
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
    } else {
      return static_cast<T>(a + b);
    }
  }
};
struct Times {
  static constexpr const char* kName = "simd_product";
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
    } else {
      return static_cast<T>(a * b);
    }
  }
};
struct Max {
  static constexpr const char* kName = "simd_max";
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>)
      return a < b ? b : a;
    else
      return static_cast<T>(std::fmax(static_cast<float>(a), static_cast<float>(b)));
  }
};
struct Min {
  static constexpr const char* kName = "simd_min";
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>)
      return b < a ? b : a;
    else
      return static_cast<T>(std::fmin(static_cast<float>(a), static_cast<float>(b)));
  }
};
struct And {
  static constexpr const char* kName = "simd_and";
  template <typename T>
  T operator()(T a, T b) const {
    return a & b;
  }
};
struct Or {
  static constexpr const char* kName = "simd_or";
  template <typename T>
  T operator()(T a, T b) const {
    return a | b;
  }
};
struct Xor {
  static constexpr const char* kName = "simd_xor";
  template <typename T>
  T operator()(T a, T b) const {
    return a ^ b;
  }
};

template <typename T, typename Combine>
inline constexpr CollectiveOp kReduce{Combine::kName, typed_reduce_combine<T, Combine>};
template <typename T, typename Combine, bool Inclusive>
inline constexpr CollectiveOp kPrefix{Inclusive ? "simd_prefix_inclusive_sum" : "simd_prefix_exclusive_sum",
                                      typed_prefix_combine<T, Combine, Inclusive>};
inline constexpr CollectiveOp kShuffle{"simd_shuffle", shuffle_combine<0>};
inline constexpr CollectiveOp kShuffleUp{"simd_shuffle_up", shuffle_combine<1>};
inline constexpr CollectiveOp kShuffleDown{"simd_shuffle_down", shuffle_combine<2>};
inline constexpr CollectiveOp kShuffleXor{"simd_shuffle_xor", shuffle_combine<3>};
inline constexpr CollectiveOp kBallot{"simd_ballot", vote_combine<0>};
inline constexpr CollectiveOp kAny{"simd_any", vote_combine<1>};
inline constexpr CollectiveOp kAll{"simd_all", vote_combine<2>};
inline constexpr CollectiveOp kSimdgroupBarrier{"simdgroup_barrier", sync_combine};
inline constexpr CollectiveOp kSimdgroupMatrix{"simdgroup_store", sync_combine};

/** Lanes of the caller's simdgroup that are still running (Metal's active threads). */
inline std::uint32_t active_lanes() { return current_runner().live_lanes(); }

template <typename T, typename Combine>
T reduce(T value, const std::source_location& site) {
  static_assert(sizeof(T) <= 8 && BitMovable<T>);
  const std::uint64_t bits = warp_collective(kReduce<T, Combine>, active_lanes(), collective_detail::to_bits(value), 0,
                                             static_cast<int>(kWarpSize), site, true);
  return collective_detail::from_bits<T>(bits);
}

template <typename T, typename Combine, bool Inclusive>
T prefix(T value, const std::source_location& site) {
  const std::uint64_t bits =
      warp_collective(kPrefix<T, Combine, Inclusive>, active_lanes(), collective_detail::to_bits(value), 0,
                      static_cast<int>(kWarpSize), site, true);
  return collective_detail::from_bits<T>(bits);
}

template <typename T>
T shuffle(const CollectiveOp& op, T value, int argument, const std::source_location& site) {
  static_assert(sizeof(T) <= 8 && BitMovable<T>, "simd shuffles move values of at most 8 bytes");
  const std::uint64_t bits = warp_collective(op, active_lanes(), collective_detail::to_bits(value), argument,
                                             static_cast<int>(kWarpSize), site, true);
  return collective_detail::from_bits<T>(bits);
}

/** A simdgroup-wide step every lane of the simdgroup must take together (simdgroup matrices, simdgroup_barrier). */
inline void simdgroup_step(const CollectiveOp& op, const std::source_location& site) {
  warp_collective(op, active_lanes(), 0, 0, static_cast<int>(kWarpSize), site, false);
}
}  // namespace simd_detail

}  // namespace gpu_sim::metal

namespace metal {

/** Memory a barrier orders (the simulator orders everything: fibers share one address space). */
enum class mem_flags : unsigned {
  mem_none = 0,
  mem_device = 1,
  mem_threadgroup = 2,
  mem_texture = 4,
  mem_threadgroup_imageblock = 8,
  mem_object_data = 16
};
inline mem_flags operator|(mem_flags a, mem_flags b) {
  return static_cast<mem_flags>(static_cast<unsigned>(a) | static_cast<unsigned>(b));
}

/** Every thread of the threadgroup waits here (all must reach the same barrier). */
inline void threadgroup_barrier(mem_flags, std::source_location site = std::source_location::current()) {
  ::gpu_sim::barrier("threadgroup_barrier", site);
}
/** Every active lane of the simdgroup waits here. */
inline void simdgroup_barrier(mem_flags, std::source_location site = std::source_location::current()) {
  ::gpu_sim::metal::simd_detail::simdgroup_step(::gpu_sim::metal::simd_detail::kSimdgroupBarrier, site);
}

#define GPU_SIM_METAL_SIMD_REDUCTION(name, combine)                                                       \
  template <typename T>                                                                                   \
  T name(T value, std::source_location site = std::source_location::current()) {                          \
    return ::gpu_sim::metal::simd_detail::reduce<T, ::gpu_sim::metal::simd_detail::combine>(value, site); \
  }
GPU_SIM_METAL_SIMD_REDUCTION(simd_sum, Plus)
GPU_SIM_METAL_SIMD_REDUCTION(simd_product, Times)
GPU_SIM_METAL_SIMD_REDUCTION(simd_max, Max)
GPU_SIM_METAL_SIMD_REDUCTION(simd_min, Min)
GPU_SIM_METAL_SIMD_REDUCTION(simd_and, And)
GPU_SIM_METAL_SIMD_REDUCTION(simd_or, Or)
GPU_SIM_METAL_SIMD_REDUCTION(simd_xor, Xor)
#undef GPU_SIM_METAL_SIMD_REDUCTION

/** Sum of the values of the active lanes up to and including this one. */
template <typename T>
T simd_prefix_inclusive_sum(T value, std::source_location site = std::source_location::current()) {
  return ::gpu_sim::metal::simd_detail::prefix<T, ::gpu_sim::metal::simd_detail::Plus, true>(value, site);
}
/** Sum of the values of the active lanes below this one (0 for the first). */
template <typename T>
T simd_prefix_exclusive_sum(T value, std::source_location site = std::source_location::current()) {
  return ::gpu_sim::metal::simd_detail::prefix<T, ::gpu_sim::metal::simd_detail::Plus, false>(value, site);
}

/** The value of lane `lane`. */
template <typename T>
T simd_shuffle(T value, ushort lane, std::source_location site = std::source_location::current()) {
  return ::gpu_sim::metal::simd_detail::shuffle(::gpu_sim::metal::simd_detail::kShuffle, value, lane, site);
}
/** The value of lane − delta (the lowest delta lanes keep their own). */
template <typename T>
T simd_shuffle_up(T value, ushort delta, std::source_location site = std::source_location::current()) {
  return ::gpu_sim::metal::simd_detail::shuffle(::gpu_sim::metal::simd_detail::kShuffleUp, value, delta, site);
}
/** The value of lane + delta (the highest delta lanes keep their own). */
template <typename T>
T simd_shuffle_down(T value, ushort delta, std::source_location site = std::source_location::current()) {
  return ::gpu_sim::metal::simd_detail::shuffle(::gpu_sim::metal::simd_detail::kShuffleDown, value, delta, site);
}
/** The value of lane ^ mask. */
template <typename T>
T simd_shuffle_xor(T value, ushort mask, std::source_location site = std::source_location::current()) {
  return ::gpu_sim::metal::simd_detail::shuffle(::gpu_sim::metal::simd_detail::kShuffleXor, value, mask, site);
}
/** The value of lane `lane` (same as simd_shuffle with a uniform lane). */
template <typename T>
T simd_broadcast(T value, ushort lane, std::source_location site = std::source_location::current()) {
  return ::gpu_sim::metal::simd_detail::shuffle(::gpu_sim::metal::simd_detail::kShuffle, value, lane, site);
}
/** The value of the lowest active lane. */
template <typename T>
T simd_broadcast_first(T value, std::source_location site = std::source_location::current()) {
  const int first = __builtin_ctz(::gpu_sim::metal::simd_detail::active_lanes());
  return ::gpu_sim::metal::simd_detail::shuffle(::gpu_sim::metal::simd_detail::kShuffle, value, first, site);
}

/** A ballot: bit l set when active lane l passed true. */
struct simd_vote {
  typedef ulong vote_t;
  vote_t bits;
  explicit operator vote_t() const { return bits; }
  bool all() const { return bits == ::gpu_sim::metal::simd_detail::active_lanes(); }
  bool any() const { return bits != 0; }
};
inline simd_vote simd_ballot(bool predicate, std::source_location site = std::source_location::current()) {
  return simd_vote{::gpu_sim::warp_collective(::gpu_sim::metal::simd_detail::kBallot,
                                              ::gpu_sim::metal::simd_detail::active_lanes(), predicate ? 1 : 0, 0, 32,
                                              site, true)};
}
inline bool simd_any(bool predicate, std::source_location site = std::source_location::current()) {
  return ::gpu_sim::warp_collective(::gpu_sim::metal::simd_detail::kAny, ::gpu_sim::metal::simd_detail::active_lanes(),
                                    predicate ? 1 : 0, 0, 32, site, true) != 0;
}
inline bool simd_all(bool predicate, std::source_location site = std::source_location::current()) {
  return ::gpu_sim::warp_collective(::gpu_sim::metal::simd_detail::kAll, ::gpu_sim::metal::simd_detail::active_lanes(),
                                    predicate ? 1 : 0, 0, 32, site, true) != 0;
}
/** True in the lowest active lane. */
inline bool simd_is_first() {
  return ::gpu_sim::current_thread().lane ==
         static_cast<unsigned>(__builtin_ctz(::gpu_sim::metal::simd_detail::active_lanes()));
}
/** The active lanes. */
inline simd_vote simd_active_threads_mask() { return simd_vote{::gpu_sim::metal::simd_detail::active_lanes()}; }

/** An 8×8 matrix spread over a simdgroup (here: held whole by every lane). */
template <typename T, int Cols, int Rows>
struct simdgroup_matrix {
  static_assert(Cols == 8 && Rows == 8, "Metal's simdgroup matrices are 8×8");
  /** Row-major elements. */
  T elements[Rows * Cols];
};
typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;
typedef simdgroup_matrix<half, 8, 8> simdgroup_half8x8;

/** A matrix with every element = value. */
template <typename T, int Cols, int Rows>
simdgroup_matrix<T, Cols, Rows> make_filled_simdgroup_matrix(T value) {
  simdgroup_matrix<T, Cols, Rows> matrix;
  for (T& element : matrix.elements) element = value;
  return matrix;
}

namespace matrix_detail {
template <typename T, int Cols, int Rows>
struct LoadCall {
  simdgroup_matrix<T, Cols, Rows>* matrix;
  const T* source;
  ulong elements_per_row;
  ulong2 origin;
  bool transpose;
};

template <typename T, int Cols, int Rows>
struct MultiplyCall {
  simdgroup_matrix<T, Cols, Rows>* d;
  const simdgroup_matrix<T, Cols, Rows>* a;
  const simdgroup_matrix<T, Cols, Rows>* b;
  const simdgroup_matrix<T, Cols, Rows>* c;
};

template <typename Call>
Call* call_of(std::uint64_t value) {
  return reinterpret_cast<Call*>(static_cast<std::uintptr_t>(value));
}

/** Loads once, from the lowest lane's arguments (every lane must pass the same), into every lane's matrix. */
template <typename T, int Cols, int Rows>
const char* load_combine(const std::uint64_t* values, const std::int32_t*, int, std::uint32_t mask,
                         std::uint64_t* results, unsigned* offending) {
  const unsigned first = static_cast<unsigned>(__builtin_ctz(mask));
  const LoadCall<T, Cols, Rows>& lead = *call_of<LoadCall<T, Cols, Rows>>(values[first]);
  simdgroup_matrix<T, Cols, Rows> loaded;
  for (int r = 0; r < Rows; r++) {
    for (int c = 0; c < Cols; c++) {
      const ulong row = lead.origin.y + static_cast<ulong>(lead.transpose ? c : r);
      const ulong column = lead.origin.x + static_cast<ulong>(lead.transpose ? r : c);
      loaded.elements[r * Cols + c] = lead.source[row * lead.elements_per_row + column];
    }
  }
  for (unsigned lane = 0; lane < 32; lane++) {
    if ((mask & (1u << lane)) == 0) continue;
    const LoadCall<T, Cols, Rows>& call = *call_of<LoadCall<T, Cols, Rows>>(values[lane]);
    if (call.source != lead.source || call.elements_per_row != lead.elements_per_row ||
        call.origin.x != lead.origin.x || call.origin.y != lead.origin.y || call.transpose != lead.transpose) {
      *offending = lane;
      return "loads from another address, stride or origin than the lowest lane: simdgroup_load's arguments must be "
             "the same in every lane";
    }
    *call.matrix = loaded;
    results[lane] = 0;
  }
  return nullptr;
}

/** d = a·b + c once, from the lowest lane's operands (every lane must hold the same), into every lane's d. */
template <typename T, int Cols, int Rows>
const char* multiply_combine(const std::uint64_t* values, const std::int32_t*, int, std::uint32_t mask,
                             std::uint64_t* results, unsigned* offending) {
  const unsigned first = static_cast<unsigned>(__builtin_ctz(mask));
  const MultiplyCall<T, Cols, Rows>& lead = *call_of<MultiplyCall<T, Cols, Rows>>(values[first]);
  for (unsigned lane = 0; lane < 32; lane++) {
    if ((mask & (1u << lane)) == 0) continue;
    const MultiplyCall<T, Cols, Rows>& call = *call_of<MultiplyCall<T, Cols, Rows>>(values[lane]);
    if (std::memcmp(call.a, lead.a, sizeof *call.a) != 0 || std::memcmp(call.b, lead.b, sizeof *call.b) != 0 ||
        std::memcmp(call.c, lead.c, sizeof *call.c) != 0) {
      *offending = lane;
      return "holds other matrix values than the lowest lane: a simdgroup matrix is one value shared by the simdgroup "
             "(load it with simdgroup_load)";
    }
  }
  simdgroup_matrix<T, Cols, Rows> result;
  for (int r = 0; r < Rows; r++) {
    for (int col = 0; col < Cols; col++) {
      float sum = static_cast<float>(lead.c->elements[r * Cols + col]);
      for (int k = 0; k < Cols; k++) {
        sum = std::fma(static_cast<float>(lead.a->elements[r * Cols + k]),
                       static_cast<float>(lead.b->elements[k * Cols + col]), sum);
      }
      result.elements[r * Cols + col] = static_cast<T>(sum);
    }
  }
  for (unsigned lane = 0; lane < 32; lane++) {
    if ((mask & (1u << lane)) == 0) continue;
    *call_of<MultiplyCall<T, Cols, Rows>>(values[lane])->d = result;
    results[lane] = 0;
  }
  return nullptr;
}

template <typename T, int Cols, int Rows>
inline constexpr ::gpu_sim::CollectiveOp kLoad{"simdgroup_load", &load_combine<T, Cols, Rows>};
template <typename T, int Cols, int Rows>
inline constexpr ::gpu_sim::CollectiveOp kMultiply{"simdgroup_multiply_accumulate", &multiply_combine<T, Cols, Rows>};
}  // namespace matrix_detail

/** Loads an 8×8 tile whose element (r, c) is source[(origin.y + r)·elements_per_row + origin.x + c] (transposed: r and c swap). */
template <typename T, int Cols, int Rows>
void simdgroup_load(simdgroup_matrix<T, Cols, Rows>& matrix, const T* source, ulong elements_per_row = Cols,
                    ulong2 origin = ulong2(0ul), bool transpose = false,
                    std::source_location site = std::source_location::current()) {
  matrix_detail::LoadCall<T, Cols, Rows> call{&matrix, source, elements_per_row, origin, transpose};
  ::gpu_sim::warp_collective(matrix_detail::kLoad<T, Cols, Rows>, ::gpu_sim::metal::simd_detail::active_lanes(),
                             static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(&call)), 0, 32, site, false);
}

/** Stores the tile: lane l writes elements 2l and 2l + 1 (row-major), so the whole simdgroup writes it. */
template <typename T, int Cols, int Rows>
void simdgroup_store(const simdgroup_matrix<T, Cols, Rows>& matrix, T* target, ulong elements_per_row = Cols,
                     ulong2 origin = ulong2(0ul), bool transpose = false,
                     std::source_location site = std::source_location::current()) {
  ::gpu_sim::metal::simd_detail::simdgroup_step(::gpu_sim::metal::simd_detail::kSimdgroupMatrix, site);
  const unsigned lane = ::gpu_sim::current_thread().lane;
  for (unsigned element = 2 * lane; element < 2 * lane + 2; element++) {
    const int r = static_cast<int>(element) / Cols;
    const int c = static_cast<int>(element) % Cols;
    const ulong row = origin.y + static_cast<ulong>(transpose ? c : r);
    const ulong column = origin.x + static_cast<ulong>(transpose ? r : c);
    target[row * elements_per_row + column] = matrix.elements[r * Cols + c];
  }
}

/** d = a·b + c. */
template <typename T, int Cols, int Rows>
void simdgroup_multiply_accumulate(simdgroup_matrix<T, Cols, Rows>& d, const simdgroup_matrix<T, Cols, Rows>& a,
                                   const simdgroup_matrix<T, Cols, Rows>& b, const simdgroup_matrix<T, Cols, Rows>& c,
                                   std::source_location site = std::source_location::current()) {
  matrix_detail::MultiplyCall<T, Cols, Rows> call{&d, &a, &b, &c};
  ::gpu_sim::warp_collective(matrix_detail::kMultiply<T, Cols, Rows>, ::gpu_sim::metal::simd_detail::active_lanes(),
                             static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(&call)), 0, 32, site, false);
}

/** d = a·b. */
template <typename T, int Cols, int Rows>
void simdgroup_multiply(simdgroup_matrix<T, Cols, Rows>& d, const simdgroup_matrix<T, Cols, Rows>& a,
                        const simdgroup_matrix<T, Cols, Rows>& b,
                        std::source_location site = std::source_location::current()) {
  simdgroup_multiply_accumulate(d, a, b, make_filled_simdgroup_matrix<T, Cols, Rows>(static_cast<T>(0)), site);
}

}  // namespace metal
