// gpu_sim/atomics.hpp — device atomics on host memory, safe when blocks run on several worker
// threads. 32/64-bit integers and floats use std::atomic_ref read-modify-writes; 16-bit float
// formats (f16, bf16) use a compare-and-swap loop on their 16-bit word, rounding the sum to
// nearest even like the hardware's atomicAdd for __half/__nv_bfloat16.
#pragma once

#include <atomic>
#include <cstdint>

#include "half.hpp"

namespace gpu_sim {

/** *address += value; returns the old value. */
template <typename T>
T atomic_add(T* address, T value) {
  return std::atomic_ref<T>(*address).fetch_add(value, std::memory_order_relaxed);
}

/** *address -= value; returns the old value. */
template <typename T>
T atomic_sub(T* address, T value) {
  return std::atomic_ref<T>(*address).fetch_sub(value, std::memory_order_relaxed);
}

/** *address = value; returns the old value. */
template <typename T>
T atomic_exchange(T* address, T value) {
  return std::atomic_ref<T>(*address).exchange(value, std::memory_order_relaxed);
}

/** if (*address == expected) *address = desired; returns the old value. */
template <typename T>
T atomic_compare_exchange(T* address, T expected, T desired) {
  std::atomic_ref<T>(*address).compare_exchange_strong(expected, desired, std::memory_order_relaxed);
  return expected;
}

/** *address = max(*address, value); returns the old value. */
template <typename T>
T atomic_max(T* address, T value) {
  std::atomic_ref<T> target(*address);
  T old = target.load(std::memory_order_relaxed);
  while (old < value && !target.compare_exchange_weak(old, value, std::memory_order_relaxed)) {
  }
  return old;
}

/** *address = min(*address, value); returns the old value. */
template <typename T>
T atomic_min(T* address, T value) {
  std::atomic_ref<T> target(*address);
  T old = target.load(std::memory_order_relaxed);
  while (value < old && !target.compare_exchange_weak(old, value, std::memory_order_relaxed)) {
  }
  return old;
}

/** *address |= value; returns the old value. */
template <typename T>
T atomic_or(T* address, T value) {
  return std::atomic_ref<T>(*address).fetch_or(value, std::memory_order_relaxed);
}

/** *address &= value; returns the old value. */
template <typename T>
T atomic_and(T* address, T value) {
  return std::atomic_ref<T>(*address).fetch_and(value, std::memory_order_relaxed);
}

/** Adds `value` to the f16 (Bf16 = false) or bf16 word at `address`, rounding once; returns the old bits. */
template <bool Bf16>
std::uint16_t atomic_add_half_bits(std::uint16_t* address, float value) {
  std::atomic_ref<std::uint16_t> target(*address);
  std::uint16_t old = target.load(std::memory_order_relaxed);
  for (;;) {
    const float sum = (Bf16 ? bf16_bits_to_f32(old) : f16_bits_to_f32(old)) + value;
    const std::uint16_t next = Bf16 ? f32_to_bf16_bits(sum) : f32_to_f16_bits(sum);
    if (target.compare_exchange_weak(old, next, std::memory_order_relaxed)) return old;
  }
}

/** Full memory fence (__threadfence, threadgroup/device memory fences). */
inline void memory_fence() { std::atomic_thread_fence(std::memory_order_seq_cst); }

}  // namespace gpu_sim
