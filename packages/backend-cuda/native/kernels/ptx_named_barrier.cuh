// kernels/ptx_named_barrier.cuh — kiln's wrappers over the CTA's named barriers: bar.sync and
// bar.arrive with a barrier id (1 … 15; 0 is __syncthreads') and a thread count (a multiple of
// 32). bar.sync counts the calling warp's arrival and waits until `threads` have arrived;
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

/** bar.sync id, threads: arrive on named barrier `id` and wait until `threads` threads have arrived. */
inline void named_barrier_sync(unsigned id, unsigned threads,
                               std::source_location site = std::source_location::current()) {
  gpu_sim::ptx::bar_sync(id, threads, site);
}
/** bar.arrive id, threads: arrive on named barrier `id` (which expects `threads`) without waiting. */
inline void named_barrier_arrive(unsigned id, unsigned threads,
                                 std::source_location site = std::source_location::current()) {
  gpu_sim::ptx::bar_arrive(id, threads, site);
}

#else

__device__ __forceinline__ void named_barrier_sync(unsigned id, unsigned threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_barrier_arrive(unsigned id, unsigned threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

#endif

}  // namespace kiln::ptx
