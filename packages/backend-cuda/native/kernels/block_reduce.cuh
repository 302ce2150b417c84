// kernels/block_reduce.cuh — warp and block reductions shared by the row-wise fused kernels
// (softmax family, norms, cross-entropy), and the running (max, sum of exponentials) state of an
// online softmax / log-sum-exp.
//
// Algorithm: warps combine with __shfl_xor_sync (every lane ends with the result); blocks then
// combine the warp results through a small shared array that the caller provides (one slot per
// warp, 32 at most), so that several reductions in one kernel do not share scratch by accident.
// Every thread of the block must call a block reduction (they contain __syncthreads).
// Layout: blockDim.x is a multiple of 32 and at most 1024.
// Numerics: f32; the combination order depends only on blockDim.x, so results are the same on
// every run. The softmax state rescales partial sums to the larger running max (expf of a
// non-positive number), so ±1000 logits neither overflow nor underflow.
#pragma once

#include <cmath>

#include "numerics.cuh"
#if KILN_DEVICE_CODE
#include "kiln/online_softmax.h"
#endif

namespace kiln {

#if KILN_DEVICE_CODE

/** Sum over the 32 lanes of a warp (every lane gets it). */
__device__ __forceinline__ float warp_sum(float value) {
  for (int offset = 16; offset > 0; offset /= 2) value += __shfl_xor_sync(0xffffffffu, value, offset);
  return value;
}

/** Sum over the block (every thread gets it); `scratch` holds one float per warp. */
__device__ __forceinline__ float block_sum(float value, float* scratch) {
  value = warp_sum(value);
  if (blockDim.x == 32) return value;
  const unsigned lane = threadIdx.x % 32;
  const unsigned warp = threadIdx.x / 32;
  const unsigned warps = blockDim.x / 32;
  __syncthreads();  // scratch may still be read by a previous reduction
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  value = lane < warps ? scratch[lane] : 0.0f;
  return warp_sum(value);
}

// SoftmaxState, softmax_identity, softmax_add, softmax_merge: kiln/online_softmax.h (shared with Metal).

/** Merges the states of a warp (every lane gets the result). */
__device__ __forceinline__ SoftmaxState warp_softmax(SoftmaxState state) {
  for (int offset = 16; offset > 0; offset /= 2) {
    const SoftmaxState other{__shfl_xor_sync(0xffffffffu, state.max, offset),
                             __shfl_xor_sync(0xffffffffu, state.sum, offset)};
    state = softmax_merge(state, other);
  }
  return state;
}

/** Merges the states of the block (every thread gets it); `scratch` holds one state per warp. */
__device__ __forceinline__ SoftmaxState block_softmax(SoftmaxState state, SoftmaxState* scratch) {
  state = warp_softmax(state);
  if (blockDim.x == 32) return state;
  const unsigned lane = threadIdx.x % 32;
  const unsigned warp = threadIdx.x / 32;
  const unsigned warps = blockDim.x / 32;
  __syncthreads();
  if (lane == 0) scratch[warp] = state;
  __syncthreads();
  state = lane < warps ? scratch[lane] : softmax_identity();
  return warp_softmax(state);
}

#endif  // KILN_DEVICE_CODE

/** Threads per block for a row of `cols` elements: about 4 or more elements per thread, 32 to 1024. */
inline int row_threads(Index cols) {
  int threads = 32;
  while (threads < 1024 && static_cast<Index>(threads) * 4 < cols) threads *= 2;
  return threads;
}

/** Threads of a row-wise block that gives each thread one element group of a row (more past 1024): whole warps, 32 … 1024. */
inline int group_threads(Index groups) {
  const Index threads = groups < 32 ? 32 : groups < 1024 ? groups : 1024;
  return static_cast<int>((threads + 31) / 32 * 32);
}

}  // namespace kiln
