// kernels/common.cuh — what every kernel family shares: dtype codes, strided layouts (up to
// kMaxRank dims after host-side coalescing), the launch context, and the device error record
// used by index-checking kernels (docs/kernel-semantics.md, "Out-of-range indices").
//
// Layout: strides and offsets count elements (as in core's StridedView); linear indices are
// row-major over the (shared) shape, last dimension fastest. Index arithmetic is 64-bit.
#pragma once

#include <cstdint>
#include <cstring>

#include "../vendors/vendor.h"
#include "kiln/op_codes.h"

/**
 * Full unrolling of a loop with a compile-time trip count (register arrays stay in registers;
 * loads of the next iteration can be scheduled above this one's arithmetic). nvcc and clang
 * (hipcc) take `#pragma unroll`; GCC (the simulator, the ROCm shim's syntax check) unrolls up to
 * 16 iterations.
 */
#if defined(__CUDACC__) || defined(__clang__)
#define KILN_UNROLL _Pragma("unroll")
#else
#define KILN_UNROLL _Pragma("GCC unroll 16")
#endif

/** No unrolling: for an outer loop around a large body, so the compiler does not duplicate the body. */
#if defined(__CUDACC__) || defined(__clang__)
#define KILN_NO_UNROLL _Pragma("unroll 1")
#else
#define KILN_NO_UNROLL _Pragma("GCC unroll 1")
#endif

namespace kiln {

/** Element index / count type of every kernel. */
using Index = long long;

/** Storage dtypes (kiln/op_codes.h, the one list; core's codes.ts is generated from it). */
enum DTypeCode : int { kF32 = KILN_DTYPE_F32, kF16 = KILN_DTYPE_F16, kBF16 = KILN_DTYPE_BF16, kI32 = KILN_DTYPE_I32 };

/** Bytes per element of a dtype. */
KILN_HOST_DEVICE inline int dtype_bytes(int dtype) { return dtype == kF16 || dtype == kBF16 ? 2 : 4; }

/** Most dims a strided kernel takes in one launch (the host loops over any outer rest). */
inline constexpr int kMaxRank = 12;

/** Up to three operands sharing one shape, each with its own strides and offset (elements). */
template <int Operands>
struct StridedOperands {
  int rank;
  Index shape[kMaxRank];
  Index strides[Operands][kMaxRank];
  Index offsets[Operands];
};

/** Element offsets of every operand for the row-major linear index `linear`. */
template <int Operands>
KILN_HOST_DEVICE inline void strided_offsets(const StridedOperands<Operands>& layout, Index linear, Index* offsets) {
  for (int operand = 0; operand < Operands; operand++) offsets[operand] = layout.offsets[operand];
  for (int dim = layout.rank - 1; dim >= 0; dim--) {
    const Index size = layout.shape[dim];
    const Index coordinate = linear % size;
    linear /= size;
    for (int operand = 0; operand < Operands; operand++) offsets[operand] += coordinate * layout.strides[operand][dim];
  }
}

/**
 * First out-of-range index seen by any kernel since the host last read the record. `flag` is set
 * by compare-and-swap, so exactly one offender fills the other fields.
 */
struct DeviceErrorRecord {
  int flag;
  int kernel;  // KILN_INDEX_ERROR_* (kiln/op_codes.h)
  Index position;
  Index value;
  Index bound;
};

#if KILN_DEVICE_CODE
/** Records an out-of-range index (first one wins). */
__device__ __forceinline__ void report_index_error(DeviceErrorRecord* record, int kernel, Index position, Index value,
                                                   Index bound) {
  if (atomicCAS(&record->flag, 0, 1) == 0) {
    record->kernel = kernel;
    record->position = position;
    record->value = value;
    record->bound = bound;
    __threadfence();
  }
}
#endif

/** Blocks per multiprocessor in LaunchContext::max_blocks. */
inline constexpr int kGridStrideBlocksPerMultiprocessor = 16;

/** What every launcher needs from the backend instance. */
struct LaunchContext {
  /** The backend's stream. */
  cudaStream_t stream;
  /** Upper bound on blocks for grid-stride kernels (kGridStrideBlocksPerMultiprocessor per multiprocessor). */
  int max_blocks;
  /** The device error record. */
  DeviceErrorRecord* errors;
  /** kiln's own f32 matmul may use TF32 tensor cores (the backend's allowTf32 option; off unless asked for). */
  bool allow_tf32 = false;
  /** Largest grid y the device launches (maxGridSize[1], 65535): kernels with more row tiles stride over them. */
  Index max_grid_y = 65535;
  /** Shared memory per multiprocessor (sharedMemPerMultiprocessor; 0: unknown), which resident blocks divide. */
  Index shared_bytes_per_multiprocessor = 0;

  /** The device's multiprocessors (at least 1). */
  Index multiprocessors() const {
    const Index count = max_blocks / kGridStrideBlocksPerMultiprocessor;
    return count > 0 ? count : 1;
  }
};

/** Grid y for `tiles` row tiles (or rows) that a kernel strides over in steps of gridDim.y (at least 1). */
inline unsigned grid_y_for(Index tiles, const LaunchContext& context) {
  const Index limit = context.max_grid_y > 0 ? context.max_grid_y : 1;
  return static_cast<unsigned>(tiles < 1 ? 1 : tiles < limit ? tiles : limit);
}

/**
 * Calls launch(first, count) for consecutive chunks of `tiles` row tiles, each at most the
 * device's grid y — one call unless there are more. For kernels that take their first row tile as
 * a parameter instead of striding over gridDim.y (a loop would cost the matmuls registers).
 */
template <typename Launch>
cudaError_t launch_in_grid_y_chunks(Index tiles, const LaunchContext& context, Launch&& launch) {
  const Index limit = context.max_grid_y > 0 ? context.max_grid_y : 1;
  for (Index first = 0; first < tiles; first += limit) {
    const cudaError_t error = launch(first, static_cast<unsigned>(tiles - first < limit ? tiles - first : limit));
    if (error != cudaSuccess) return error;
  }
  return cudaSuccess;
}

/** Blocks for `work` items at `threads` per block, capped for grid-stride loops (at least 1). */
inline unsigned grid_for(Index work, int threads, int max_blocks) {
  Index blocks = (work + threads - 1) / threads;
  if (blocks > max_blocks) blocks = max_blocks;
  return blocks < 1 ? 1u : static_cast<unsigned>(blocks);
}

/** Bit-exact reinterpretation (memcpy works in host and device code). */
template <typename To, typename From>
KILN_HOST_DEVICE inline To bit_cast(const From& value) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast needs equal sizes");
  To result;
  memcpy(&result, &value, sizeof(To));
  return result;
}

}  // namespace kiln
