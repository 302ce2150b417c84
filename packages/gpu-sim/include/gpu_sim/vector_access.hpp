// gpu_sim/vector_access.hpp — alignment checks on every load and store of a vector type (CUDA's
// float4/int4/uint4/double2 and float2/int2/uint2, Metal's float4, half4, uint2, …), as a GPU
// enforces them: a 16-byte access through an address that is not a multiple of 16 (8 for 8-byte
// vectors) faults on the device ("misaligned address") whatever values the threads happened to
// write, so here it aborts the launch with the kernel, thread, file:line and address.
//
// How: the dialects' vector types check in their copy constructor (a load: the source's address)
// and in their assignment (a store: the destination's address). The assignment takes a
// StoredValue, whose converting constructor records the source location of the assignment
// expression; the plain copy assignment is declared only for rvalues (and deleted), so every
// store to an lvalue goes through the checked one. The types are therefore not trivially
// copyable; BitMovable admits them where the engine moves values as raw bits (shuffles).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <source_location>
#include <string>
#include <type_traits>

#include "engine.hpp"

namespace gpu_sim {

/** The right-hand side of a store into a vector, with the source line of the store. */
template <typename Vector>
struct StoredValue {
  /** The value stored. */
  const Vector& value;
  /** Where the store is written. */
  std::source_location site;
  // NOLINTNEXTLINE(google-explicit-constructor): implicit on purpose (every `*p = v` converts here)
  StoredValue(const Vector& stored, std::source_location where = std::source_location::current())
      : value(stored), site(where) {}
};

/** Aborts the running kernel: a vector access through a misaligned address (see check_vector_alignment). */
[[noreturn]] inline void misaligned_vector_access(const void* address, std::size_t alignment, const char* type,
                                                  const char* access, const std::source_location& site) {
  char where[32];
  std::snprintf(where, sizeof where, "%p", address);
  throw KernelFault(current_runner().running_thread_prefix() + (alignment == 8 ? "makes an " : "makes a ") +
                    std::to_string(alignment) + "-byte " + access + " of " + type + " at " + format_site(site) +
                    " through address " + where + ", which is not " + std::to_string(alignment) +
                    "-byte aligned: a GPU faults on this (misaligned address)");
}

/**
 * Faults the running kernel when `address` is not a multiple of `alignment` (the vector's size):
 * `access` is "load" or "store", `type()` the vector's name. Host code (outside a kernel) is not
 * checked: only device accesses fault.
 */
inline void check_vector_alignment(const void* address, std::size_t alignment, const char* (*type)(),
                                   const char* access, const std::source_location& site) {
  if (reinterpret_cast<std::uintptr_t>(address) % alignment == 0 || !in_kernel()) return;
  misaligned_vector_access(address, alignment, type(), access, site);
}

/** Marks a vector type whose copies are checked (see the file header). */
#define GPU_SIM_CHECKED_VECTOR using gpu_sim_checked_vector = void

/** Types the engine may move as raw bits: trivially copyable ones and the checked vectors. */
template <typename T>
concept BitMovable = std::is_trivially_copyable_v<T> || requires { typename T::gpu_sim_checked_vector; };

}  // namespace gpu_sim
