// kernels/ptx_named_barrier.cuh — kiln's wrappers over the CTA's named barriers: bar.sync and
// bar.arrive with a compile-time barrier id (1 … 15; 0 is __syncthreads') and thread count (a
// multiple of 32). bar.sync counts the calling warp's arrival and waits until `threads` have arrived;
// bar.arrive counts it without waiting (the signalling side of a hand-off). Both are .aligned:
// every lane of a warp executes the same one.
//
// On the device each wrapper is one `asm volatile` (every architecture kiln builds for). In the
// simulator build they call gpu-sim's emulation (gpu_sim/cuda/named_barrier.hpp), which checks
// ids, counts and warp convergence, and reports a barrier that can never complete, or arrivals
// left on a phase no bar.sync completed, with the kernel and file:line instead of hanging.
#pragma once

#include "common.cuh"

#if defined(KILN_CUDA_SIMULATOR)
#include <gpu_sim/cuda/named_barrier.hpp>
#endif

namespace kiln::ptx {

#if defined(KILN_CUDA_SIMULATOR)

/** bar.sync kId, kThreads: arrive on named barrier kId and wait until kThreads threads have arrived. */
template <unsigned kId, unsigned kThreads>
inline void named_barrier_sync(std::source_location site = std::source_location::current()) {
  gpu_sim::ptx::bar_sync(kId, kThreads, site);
}
/** bar.arrive kId, kThreads: arrive on named barrier kId (which expects kThreads) without waiting. */
template <unsigned kId, unsigned kThreads>
inline void named_barrier_arrive(std::source_location site = std::source_location::current()) {
  gpu_sim::ptx::bar_arrive(kId, kThreads, site);
}

#else

// Immediate operands: ptxas then knows which barriers a kernel uses (a register id reserves all 16).
template <unsigned kId, unsigned kThreads>
__device__ __forceinline__ void named_barrier_sync() {
  asm volatile("bar.sync %0, %1;\n" ::"n"(kId), "n"(kThreads) : "memory");
}
template <unsigned kId, unsigned kThreads>
__device__ __forceinline__ void named_barrier_arrive() {
  asm volatile("bar.arrive %0, %1;\n" ::"n"(kId), "n"(kThreads) : "memory");
}

#endif

}  // namespace kiln::ptx
