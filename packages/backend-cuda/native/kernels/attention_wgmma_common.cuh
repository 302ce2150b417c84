// kernels/attention_wgmma_common.cuh — what kiln's sm_90a flash-attention kernels share
// (attention_forward_wgmma.cu, attention_backward_wgmma.cu): the 4D tensor maps their TMA loads
// read q, k, v, dO through, the register-fragment helpers that turn a wgmma accumulator into
// the A operand of the next wgmma, and the consumers' ping-pong (PingPong).
// Layout: a tensor map covers (D, T, H, B) with the layout's byte strides (attention_common.cuh),
// boxes of 64 head-dim columns × `box_rows` rows with 128-byte swizzling (one 128-byte row per
// box row); TMA zero-fills rows past T and columns past D.
// Numerics: pack_pair (numerics.cuh) rounds f32 to the storage type (round to nearest even) once.
#pragma once

#include <cstring>
#include <string>

#include "attention_common.cuh"
#include "ptx_named_barrier.cuh"
#include "ptx_wgmma.cuh"

#if defined(KILN_HAS_TENSOR_MAPS)

namespace kiln {
namespace attention_wgmma {

/** Bytes of one swizzled shared row: 64 16-bit elements. */
inline constexpr int kRowBytes = 128;

/** The 4D tensor map (D, T, H, B) of q, k, v or dO with boxes of 64 columns × box_rows rows; false when the driver refuses it. */
inline bool tensor_map(vendor::TensorMap* map, const void* base, int head_dim, int length, int heads, int batch,
                       Index row_stride, Index head_stride, Index batch_stride, int box_rows) {
  const std::uint64_t dims[4] = {static_cast<std::uint64_t>(head_dim), static_cast<std::uint64_t>(length),
                                 static_cast<std::uint64_t>(heads), static_cast<std::uint64_t>(batch)};
  const std::uint64_t strides[3] = {static_cast<std::uint64_t>(row_stride) * 2,
                                    static_cast<std::uint64_t>(head_stride) * 2,
                                    static_cast<std::uint64_t>(batch_stride) * 2};
  const std::uint32_t box[4] = {64, static_cast<std::uint32_t>(box_rows), 1, 1};
  std::string why;
  return vendor::encode_tensor_map_tiled(map, 4, base, dims, strides, box, true, why) == cudaSuccess;
}

#if KILN_DEVICE_CODE

/** A [n][4] fragment array as the flat register list wgmma takes. */
template <int kTiles>
__device__ __forceinline__ float (&flat(float (&fragment)[kTiles][4]))
    [kTiles * 4] { return *reinterpret_cast<float (*)[kTiles * 4]>(&fragment[0][0]); }

/**
 * An m64nNk16 accumulator fragment rounded to T as wgmma's register A operands: k16 step `step`
 * takes the accumulator's n-tiles 2·step and 2·step + 1, whose pairs (rows g and g + 8, columns
 * 2t and 2t + 1, then + 8) are exactly the A fragment, so no data moves between threads.
 */
template <typename T, int kTiles>
__device__ __forceinline__ void pack_a_operand(const float (&fragment)[kTiles][4], std::uint32_t (&a)[kTiles / 2][4]) {
  KILN_UNROLL
  for (int step = 0; step < kTiles / 2; step++) {
    a[step][0] = pack_pair<T>(fragment[2 * step][0], fragment[2 * step][1]);
    a[step][1] = pack_pair<T>(fragment[2 * step][2], fragment[2 * step][3]);
    a[step][2] = pack_pair<T>(fragment[2 * step + 1][0], fragment[2 * step + 1][1]);
    a[step][3] = pack_pair<T>(fragment[2 * step + 1][2], fragment[2 * step + 1][3]);
  }
}

/** The bits of every element XORed, as a float: a value that depends on each of them (for ptx::store_before_wgmma_wait). */
template <int kTiles>
__device__ __forceinline__ float fold_bits(const float (&fragment)[kTiles][4]) {
  std::uint32_t bits = 0;
  KILN_UNROLL
  for (int nt = 0; nt < kTiles; nt++) {
    for (int e = 0; e < 4; e++) bits ^= bit_cast<std::uint32_t>(fragment[nt][e]);
  }
  return bit_cast<float>(bits);
}

/**
 * Inter-warpgroup ping-pong of the two consumer warpgroups: they take turns issuing their wgmma,
 * so one consumer's softmax (or P and dS) runs while the other's products occupy the tensor
 * cores, instead of both computing, then both issuing, in lockstep. Consumer c takes its turn
 * with bar.sync on named barrier 1 + c and hands it over with bar.arrive on the other's once
 * issued; consumer 0 goes first (start(): consumer 1 arrives once up front). Both must take the
 * same number of turns and both call start() and finish() once (consumer 0's finish() takes the
 * turn consumer 1 handed over last), so every barrier phase completes — with no turns at all too.
 * Turns move only when each consumer issues, never what it computes.
 * (Barrier ids are immediates, one branch per consumer: ptxas then reserves only barriers 1, 2.)
 */
class PingPong {
 public:
  __device__ __forceinline__ explicit PingPong(int consumer) : consumer_(consumer) {}
  /** Lets consumer 0 take the first turn (call once, before the first take_turn). */
  __device__ __forceinline__ void start() const {
    if (consumer_ == 1) ptx::named_barrier_arrive<kTurn0, kTurnThreads>();
  }
  /** Waits until it is this consumer's turn to issue. */
  __device__ __forceinline__ void take_turn() const {
    if (consumer_ == 0)
      ptx::named_barrier_sync<kTurn0, kTurnThreads>();
    else
      ptx::named_barrier_sync<kTurn1, kTurnThreads>();
  }
  /** Gives the turn to the other consumer. */
  __device__ __forceinline__ void hand_over() const {
    if (consumer_ == 0)
      ptx::named_barrier_arrive<kTurn1, kTurnThreads>();
    else
      ptx::named_barrier_arrive<kTurn0, kTurnThreads>();
  }
  /** Ends the ping-pong (call once, after the last hand_over). */
  __device__ __forceinline__ void finish() const {
    if (consumer_ == 0) ptx::named_barrier_sync<kTurn0, kTurnThreads>();
  }

 private:
  /** Named barrier of consumer 0's turn, and of consumer 1's (0 is __syncthreads'). */
  static constexpr unsigned kTurn0 = 1;
  static constexpr unsigned kTurn1 = 2;
  /** Threads on a turn barrier: the waiting consumer's 128 and the 128 handing it the turn. */
  static constexpr unsigned kTurnThreads = 2 * 128;
  int consumer_;
};

#endif  // KILN_DEVICE_CODE

}  // namespace attention_wgmma
}  // namespace kiln

#endif  // KILN_HAS_TENSOR_MAPS
