// gpu_sim/collectives.hpp — the warp-wide operations shared by every dialect: shuffles (index,
// up, down, xor, with a segment width), votes (ballot, any, all), integer reductions, typed
// reductions and prefix folds (float sums, maxima, … in ascending lane order) and a plain warp
// barrier. Each is a CollectiveOp the engine runs once all lanes of the mask arrived.
//
// Numerics: values travel as their raw bits (up to 8 bytes), so a shuffle of a float, a half
// or a 64-bit integer returns exactly what the source lane held. Semantics follow the CUDA
// programming guide: lanes read inside their own width-sized segment (up/down/xor return the
// caller's own value when the source falls outside); a source lane outside the mask is a fault.
#pragma once

#include <cstdint>
#include <cstring>
#include <source_location>
#include <type_traits>

#include "engine.hpp"
#include "vector_access.hpp"

namespace gpu_sim {
namespace collective_detail {

inline bool valid_width(int width) {
  return width >= 1 && width <= static_cast<int>(kWarpSize) && (width & (width - 1)) == 0;
}

/** Shared body of the shuffles: source lane of `lane` for each kind. */
template <int Kind>
const char* shuffle(const std::uint64_t* values, const std::int32_t* arguments, int width, std::uint32_t mask,
                    std::uint64_t* results, unsigned* offending) {
  if (!valid_width(width)) {
    *offending = 0;
    return "passes a width that is not a power of two between 1 and 32";
  }
  const unsigned segment_mask = static_cast<unsigned>(width) - 1u;
  for (unsigned lane = 0; lane < kWarpSize; lane++) {
    if ((mask & (1u << lane)) == 0) continue;
    const unsigned base = lane & ~segment_mask;
    const unsigned position = lane & segment_mask;
    const auto argument = static_cast<unsigned>(arguments[lane]);
    unsigned source = lane;
    if constexpr (Kind == 0) {  // index
      source = base + (argument & segment_mask);
    } else if constexpr (Kind == 1) {  // up
      source = position >= argument ? lane - argument : lane;
    } else if constexpr (Kind == 2) {  // down
      source = position + argument < static_cast<unsigned>(width) ? lane + argument : lane;
    } else {  // xor
      const unsigned target = (lane ^ argument) & (kWarpSize - 1u);
      source = (target & ~segment_mask) > base ? lane : target;
    }
    if ((mask & (1u << source)) == 0) {
      *offending = lane;
      return "reads from a lane that is not in the mask";
    }
    results[lane] = values[source];
  }
  return nullptr;
}

/** Votes: 0 ballot, 1 any, 2 all. */
template <int Kind>
const char* vote(const std::uint64_t* values, const std::int32_t*, int, std::uint32_t mask, std::uint64_t* results,
                 unsigned*) {
  std::uint32_t ballot = 0;
  for (unsigned lane = 0; lane < kWarpSize; lane++) {
    if ((mask & (1u << lane)) && values[lane] != 0) ballot |= 1u << lane;
  }
  const std::uint64_t result = Kind == 0 ? ballot : Kind == 1 ? (ballot != 0 ? 1 : 0) : (ballot == mask ? 1 : 0);
  for (unsigned lane = 0; lane < kWarpSize; lane++) {
    if (mask & (1u << lane)) results[lane] = result;
  }
  return nullptr;
}

/** Integer reductions over 32-bit values: 0 add (wraps), 1 min, 2 max, 3 and, 4 or, 5 xor; Signed picks min/max order. */
template <int Kind, bool Signed>
const char* reduce(const std::uint64_t* values, const std::int32_t*, int, std::uint32_t mask, std::uint64_t* results,
                   unsigned*) {
  bool first = true;
  std::uint32_t accumulator = 0;
  for (unsigned lane = 0; lane < kWarpSize; lane++) {
    if ((mask & (1u << lane)) == 0) continue;
    const auto value = static_cast<std::uint32_t>(values[lane]);
    if (first) {
      accumulator = value;
      first = false;
      continue;
    }
    if constexpr (Kind == 0)
      accumulator += value;
    else if constexpr (Kind == 3)
      accumulator &= value;
    else if constexpr (Kind == 4)
      accumulator |= value;
    else if constexpr (Kind == 5)
      accumulator ^= value;
    else if constexpr (Signed) {
      const auto left = static_cast<std::int32_t>(accumulator);
      const auto right = static_cast<std::int32_t>(value);
      accumulator =
          static_cast<std::uint32_t>(Kind == 1 ? (right < left ? right : left) : (right > left ? right : left));
    } else {
      accumulator =
          Kind == 1 ? (value < accumulator ? value : accumulator) : (value > accumulator ? value : accumulator);
    }
  }
  for (unsigned lane = 0; lane < kWarpSize; lane++) {
    if (mask & (1u << lane)) results[lane] = accumulator;
  }
  return nullptr;
}

inline const char* nothing(const std::uint64_t*, const std::int32_t*, int, std::uint32_t, std::uint64_t*, unsigned*) {
  return nullptr;
}

template <typename T>
T from_bits(std::uint64_t bits) {
  T value;
  std::memcpy(&value, &bits, sizeof(T));
  return value;
}

template <typename T>
std::uint64_t to_bits(T value) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  return bits;
}

/** Folds the lanes of `mask` in ascending lane order with Combine (a typed reduction: float sums, maxima, …). */
template <typename T, typename Combine>
const char* typed_reduce(const std::uint64_t* values, const std::int32_t*, int, std::uint32_t mask,
                         std::uint64_t* results, unsigned*) {
  bool first = true;
  T accumulator{};
  for (unsigned lane = 0; lane < kWarpSize; lane++) {
    if ((mask & (1u << lane)) == 0) continue;
    const T value = from_bits<T>(values[lane]);
    accumulator = first ? value : Combine{}(accumulator, value);
    first = false;
  }
  for (unsigned lane = 0; lane < kWarpSize; lane++) {
    if (mask & (1u << lane)) results[lane] = to_bits(accumulator);
  }
  return nullptr;
}

/** Prefix fold over the lanes of `mask` in ascending order: inclusive, or exclusive starting from T{} (the identity of a sum). */
template <typename T, typename Combine, bool Inclusive>
const char* typed_prefix(const std::uint64_t* values, const std::int32_t*, int, std::uint32_t mask,
                         std::uint64_t* results, unsigned*) {
  T running{};
  bool first = true;
  for (unsigned lane = 0; lane < kWarpSize; lane++) {
    if ((mask & (1u << lane)) == 0) continue;
    const T value = from_bits<T>(values[lane]);
    if (!Inclusive) results[lane] = to_bits(first ? T{} : running);
    running = first ? value : Combine{}(running, value);
    first = false;
    if (Inclusive) results[lane] = to_bits(running);
  }
  return nullptr;
}

}  // namespace collective_detail

/** Which shuffle: the source lane is the argument (index), lane − argument (up), lane + argument (down), lane ^ argument (xor). */
enum class ShuffleKind { kIndex = 0, kUp = 1, kDown = 2, kXor = 3 };

/** Shuffles `value` across the lanes of `mask`; `name` is the dialect's spelling for messages. */
template <typename T>
T warp_shuffle(const CollectiveOp& op, std::uint32_t mask, T value, int argument, int width,
               const std::source_location& site) {
  static_assert(BitMovable<T> && sizeof(T) <= 8, "warp shuffles move values of at most 8 bytes");
  std::uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  const std::uint64_t result = current_runner().collective(op, mask, bits, argument, width, site);
  T out;
  std::memcpy(&out, &result, sizeof(T));
  return out;
}

/** A collective of the calling thread's warp over `mask`, with raw 64-bit value/result; `elastic`: exiting lanes leave it. */
inline std::uint64_t warp_collective(const CollectiveOp& op, std::uint32_t mask, std::uint64_t value, int argument,
                                     int width, const std::source_location& site, bool elastic) {
  return current_runner().collective(op, mask, value, argument, width, site, elastic);
}

/** Runs a data-free or 32-bit collective and returns its 32-bit result. */
inline std::uint32_t warp_collective_u32(const CollectiveOp& op, std::uint32_t mask, std::uint32_t value,
                                         const std::source_location& site) {
  return static_cast<std::uint32_t>(current_runner().collective(op, mask, value, 0, static_cast<int>(kWarpSize), site));
}

/** The collective operations, one object per dialect spelling (the object's identity is what lanes must agree on). */
template <int Kind>
inline constexpr auto shuffle_combine = &collective_detail::shuffle<Kind>;
template <int Kind>
inline constexpr auto vote_combine = &collective_detail::vote<Kind>;
template <int Kind, bool Signed>
inline constexpr auto reduce_combine = &collective_detail::reduce<Kind, Signed>;
inline constexpr auto sync_combine = &collective_detail::nothing;
template <typename T, typename Combine>
inline constexpr auto typed_reduce_combine = &collective_detail::typed_reduce<T, Combine>;
template <typename T, typename Combine, bool Inclusive>
inline constexpr auto typed_prefix_combine = &collective_detail::typed_prefix<T, Combine, Inclusive>;

}  // namespace gpu_sim
