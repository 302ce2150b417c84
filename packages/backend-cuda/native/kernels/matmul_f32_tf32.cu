// kernels/matmul_f32_tf32.cu — kiln's f32 matmul on TF32 tensor cores (opt-in: allowTf32 on a device
// that runs sm_80 code): the tiles and pipeline of matmul_f32.cuh with mma.sync inner products.
//
// Algorithm: each operand element is rounded with cvt.rna.tf32.f32 as it is stored to shared memory;
// the 8 warps each own 64×32 of the 128×128 tile as 4 × 4 mma.sync.m16n8k8.tf32 fragments whose
// registers are read straight from the k-major tiles.
// Layout: tiles rows padded to 136 floats, so a fragment read (k rows t and t + 4 × 8 consecutive m
// or n) hits 32 distinct banks; fragment (i, j) lives in accumulator row 2i + j/2, columns 4(j%2)….
// Numerics: inputs carry up to 2^-11 relative rounding error each (10 explicit mantissa bits),
// products are exact in f32, sums in f32 (tensor-core order).
// Not in a HIP build (inline PTX, ptx_mma.cuh): the ROCm shim's stand-in refuses it.
#include <cstdint>

#include "matmul_f32.cuh"
#include "numerics.cuh"
#include "ptx_mma.cuh"

namespace kiln {
namespace {

using f32_matmul::Accumulators;

/** The 4 registers of fragment (i, j) (i along m, j along n, each 0–3): row 2i + j/2, columns 4(j%2)…. */
__device__ __forceinline__ float (&fragment(Accumulators& accumulator, int i, int j))[4] {
  return *reinterpret_cast<float (*)[4]>(&accumulator[2 * i + j / 2][4 * (j % 2)]);
}

/** matmul_f32_kernel's policy for TF32 mma.sync m16n8k8 fragments. */
struct Tf32Math {
  /** 8 warps, each 64×32 of the tile. */
  static constexpr int kThreads = 256;
  /** Blocks per SM the register budget must allow (≤ 128 registers a thread): two blocks' loads hide each other's latency. */
  static constexpr int kMinBlocks = 2;
  /** The next slice loaded only while k has one, as before the 8×16 SIMT kernel: loading every step cost 18% at 4096³ on an H100 (87 → 72 TFLOP/s). */
  static constexpr bool kConditionalLoads = true;
  /** Blocks inside the operands of other problems load unchecked: no spills. */
  static constexpr bool kUncheckedInteriorBlocks = true;
  /** Interior kernels per layout (no branches around the stores to shared memory; 177 → 126–130 SASS instructions a k8 step on sm_90a), not timed against one kernel. */
  static constexpr bool kInteriorPerLayout = true;
  /** Each step multiplied whole before its barrier (the SIMT kernels' "overlap" variants do otherwise). */
  static constexpr bool kFragmentsAcrossBarrier = false;
  /** 64 floats a thread: 4 × 4 fragments (fragment()). */
  using Accumulators = f32_matmul::Accumulators;
  /** 136 floats: a fragment read hits 32 distinct banks. */
  static constexpr int kRow = f32_matmul::kTile + 8;

  /** x rounded to tf32 (cvt.rna.tf32.f32). */
  static __device__ __forceinline__ float4 operand(float4 x) {
    return make_float4(bit_cast<float>(ptx::cvt_rna_tf32(x.x)), bit_cast<float>(ptx::cvt_rna_tf32(x.y)),
                       bit_cast<float>(ptx::cvt_rna_tf32(x.z)), bit_cast<float>(ptx::cvt_rna_tf32(x.w)));
  }

  /**
   * One k8 step: warp w owns rows (w / 4)·64 … + 64 and columns (w % 4)·32 … + 32 as 4 × 4 fragments;
   * a[e] = A(g + 8(e&1), t + 4(e≥2)), b[e] = B(t + 4e, g).
   */
  static __device__ __forceinline__ void step(Accumulators& accumulator, const float (*tile_a)[kRow],
                                              const float (*tile_b)[kRow]) {
    const int warp = static_cast<int>(threadIdx.x / 32);
    const int lane = static_cast<int>(threadIdx.x % 32);
    const int g = lane / 4;
    const int t = lane % 4;
    const int warp_row = (warp / 4) * 64;
    const int warp_column = (warp % 4) * 32;
    std::uint32_t right[4][2];
    for (int j = 0; j < 4; j++) {
      right[j][0] = bit_cast<std::uint32_t>(tile_b[t][warp_column + j * 8 + g]);
      right[j][1] = bit_cast<std::uint32_t>(tile_b[t + 4][warp_column + j * 8 + g]);
    }
    for (int i = 0; i < 4; i++) {
      const int row = warp_row + i * 16 + g;
      const std::uint32_t left[4] = {
          bit_cast<std::uint32_t>(tile_a[t][row]), bit_cast<std::uint32_t>(tile_a[t][row + 8]),
          bit_cast<std::uint32_t>(tile_a[t + 4][row]), bit_cast<std::uint32_t>(tile_a[t + 4][row + 8])};
      for (int j = 0; j < 4; j++) ptx::mma_m16n8k8_tf32(fragment(accumulator, i, j), left, right[j]);
    }
  }

  /** Writes each fragment's rows g and g + 8, two consecutive columns per lane (`whole`: the tile lies inside out, no bounds checks). */
  static __device__ __forceinline__ void store(Accumulators& accumulator, float* out, Index row0, Index column0,
                                               Index m, Index n, bool vector, bool whole) {
    const int warp = static_cast<int>(threadIdx.x / 32);
    const int lane = static_cast<int>(threadIdx.x % 32);
    for (int i = 0; i < 4; i++) {
      const Index row = row0 + (warp / 4) * 64 + i * 16 + lane / 4;
      for (int j = 0; j < 4; j++) {
        const Index column = column0 + (warp % 4) * 32 + j * 8 + 2 * (lane % 4);
        const float (&values)[4] = fragment(accumulator, i, j);
        if (whole || row < m) store_pair(out + row * n, column, whole ? column + 2 : n, values[0], values[1], vector);
        if (whole || row + 8 < m)
          store_pair(out + (row + 8) * n, column, whole ? column + 2 : n, values[2], values[3], vector);
      }
    }
  }
};

}  // namespace

cudaError_t launch_matmul_f32_tf32(const LaunchContext& context, const MatmulShape& shape,
                                   const MatmulF32Launch& launch) {
  return f32_matmul::launch_tiles<Tf32Math, Tf32Math::kInteriorPerLayout>("matmul_f32_kernel<tf32 mma.sync>", context,
                                                                          shape, launch);
}

}  // namespace kiln
