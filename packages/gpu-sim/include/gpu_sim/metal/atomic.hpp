// gpu_sim/metal/atomic.hpp — MSL's atomic types and *_explicit functions on device or threadgroup
// memory: atomic_int, atomic_uint, atomic_bool, atomic_float (fetch_add, MSL 3.0) and atomic<T>.
// memory_order_relaxed is MSL's only order for these; every operation is a std::atomic_ref
// read-modify-write, so they stay correct when the engine runs threadgroups on several workers.
#pragma once

#include <atomic>
#include <cstdint>

#include "types.hpp"

namespace metal {

/** MSL's memory orders for atomics (relaxed is the one MSL guarantees everywhere). */
enum memory_order { memory_order_relaxed = 0 };

/** An atomic object of T in device or threadgroup memory (same size and alignment as T). */
template <typename T>
struct atomic {
  T value;
};
typedef atomic<int> atomic_int;
typedef atomic<uint> atomic_uint;
typedef atomic<bool> atomic_bool;
typedef atomic<float> atomic_float;
typedef atomic<ulong> atomic_ulong;

namespace detail {
template <typename T>
std::atomic_ref<T> ref(const volatile atomic<T>* object) {
  return std::atomic_ref<T>(const_cast<atomic<T>*>(object)->value);
}
}  // namespace detail

template <typename T>
void atomic_store_explicit(volatile atomic<T>* object, T desired, memory_order) {
  detail::ref(object).store(desired, std::memory_order_relaxed);
}
template <typename T>
T atomic_load_explicit(const volatile atomic<T>* object, memory_order) {
  return detail::ref(object).load(std::memory_order_relaxed);
}
template <typename T>
T atomic_exchange_explicit(volatile atomic<T>* object, T desired, memory_order) {
  return detail::ref(object).exchange(desired, std::memory_order_relaxed);
}
/** If *object == *expected, stores desired and returns true; else copies *object into *expected and returns false. */
template <typename T>
bool atomic_compare_exchange_weak_explicit(volatile atomic<T>* object, T* expected, T desired, memory_order,
                                           memory_order) {
  return detail::ref(object).compare_exchange_strong(*expected, desired, std::memory_order_relaxed);
}
template <typename T>
T atomic_fetch_add_explicit(volatile atomic<T>* object, T operand, memory_order) {
  if constexpr (std::is_same_v<T, int>) {
    // Two's complement wrap-around, without signed-overflow undefined behaviour.
    std::atomic_ref<uint> word(reinterpret_cast<uint&>(const_cast<atomic<T>*>(object)->value));
    return static_cast<int>(word.fetch_add(static_cast<uint>(operand), std::memory_order_relaxed));
  } else {
    return detail::ref(object).fetch_add(operand, std::memory_order_relaxed);
  }
}
template <typename T>
T atomic_fetch_sub_explicit(volatile atomic<T>* object, T operand, memory_order) {
  if constexpr (std::is_same_v<T, int>) {
    std::atomic_ref<uint> word(reinterpret_cast<uint&>(const_cast<atomic<T>*>(object)->value));
    return static_cast<int>(word.fetch_sub(static_cast<uint>(operand), std::memory_order_relaxed));
  } else {
    return detail::ref(object).fetch_sub(operand, std::memory_order_relaxed);
  }
}
template <typename T>
T atomic_fetch_and_explicit(volatile atomic<T>* object, T operand, memory_order) {
  return detail::ref(object).fetch_and(operand, std::memory_order_relaxed);
}
template <typename T>
T atomic_fetch_or_explicit(volatile atomic<T>* object, T operand, memory_order) {
  return detail::ref(object).fetch_or(operand, std::memory_order_relaxed);
}
template <typename T>
T atomic_fetch_xor_explicit(volatile atomic<T>* object, T operand, memory_order) {
  return detail::ref(object).fetch_xor(operand, std::memory_order_relaxed);
}
template <typename T>
T atomic_fetch_max_explicit(volatile atomic<T>* object, T operand, memory_order) {
  std::atomic_ref<T> target = detail::ref(object);
  T old = target.load(std::memory_order_relaxed);
  while (old < operand && !target.compare_exchange_weak(old, operand, std::memory_order_relaxed)) {
  }
  return old;
}
template <typename T>
T atomic_fetch_min_explicit(volatile atomic<T>* object, T operand, memory_order) {
  std::atomic_ref<T> target = detail::ref(object);
  T old = target.load(std::memory_order_relaxed);
  while (operand < old && !target.compare_exchange_weak(old, operand, std::memory_order_relaxed)) {
  }
  return old;
}

}  // namespace metal
