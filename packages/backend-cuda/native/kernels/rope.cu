// kernels/rope.cu — rotary position embedding (half-split), forward and inverse.
//
// Algorithm: compiled per dtype. A thread owns one position t, a group of Width consecutive
// frequencies i … i + Width − 1 (< D/2) and a chunk of up to kRowsPerThread rows (grid y). It
// computes the group's angles, then, kRowsInFlight rows at a time, reads the group's elements i…
// and i + D/2… of each row — 16-byte packs (Width 4 f32 or 8 f16/bf16) where D/2 is a multiple of
// the pack and both tensors are 16-byte aligned, else one element (Width 1) — all before rotating
// and writing them (all 8 rows' loads before the angles took 222 registers for bf16 on sm_90a; this
// order, 120). Consecutive threads take consecutive groups, so loads coalesce. The frequencies
// come from a table in shared memory that each block fills once (D/2 ≤ kTableEntries; longer
// heads compute them per thread). A row's offsets are computed once per thread, so the loop over
// positions divides nothing per row.
// Layout: x, out contiguous [rows, T, D] (rows = B·H, heads-major) or [B, T, H, D] (tokens-major:
// row b·H + h of position t starts at ((b·T + t)·H + h)·D); D even. x and out may be the same buffer
// (each element is read, then written, by one thread).
// Numerics: as docs/kernel-semantics.md defines the angle — f = theta^(−2i/D) and a = p·f in
// f64, cos and sin in f64 — then the rotation in f32, one rounding to the output dtype. (An f32
// angle would lose up to ½ ulp of p·f, 8·10⁻⁶ rad at p = 256 and more at long contexts.) The pack
// width changes how elements are read, not what is computed: both widths give the same bits.
#include "numerics.cuh"
#include "rope.cuh"
#include "vector.cuh"

namespace kiln {
namespace {

constexpr int kThreads = 256;
constexpr int kRowsPerThread = 8;
/** Rows whose elements a thread reads before rotating them (the loads in flight together). */
constexpr int kRowsInFlight = 4;
/** Frequencies a block keeps in shared memory (8 KiB): head dims up to 2048. */
constexpr int kTableEntries = 1024;

/** theta^(−2i/D), the frequency of pair i. */
__device__ __forceinline__ double rope_frequency(double theta, Index i, Index dim) {
  return pow(theta, static_cast<double>(-2 * i) / static_cast<double>(dim));
}

/** Width consecutive elements as stored: one 16-byte pack, or one element. */
template <typename T, int Width>
struct ElementGroup {
  static_assert(Width == 1 || Width == Pack<T>::kWidth, "rope: one element or one 16-byte pack");
  T values[Width];

  /** Group `group` (in units of Width elements) of `base`. */
  __device__ __forceinline__ static ElementGroup load(const T* base, Index group) {
    ElementGroup result;
    if constexpr (Width == 1) {
      result.values[0] = base[group];
    } else {
      const Pack<T> pack = load_pack(base, group);
      KILN_UNROLL
      for (int j = 0; j < Width; j++) result.values[j] = pack.values[j];
    }
    return result;
  }
};

template <typename T, int Width>
__global__ void __launch_bounds__(kThreads, 2)
    rope_kernel(const T* x, T* out, Index first_row, Index rows, Index positions, Index dim, double offset,
                double theta, double sign, Index heads) {
  __shared__ double table[kTableEntries];
  const Index half = dim / 2;
  const bool tabled = half <= kTableEntries;
  if (tabled) {
    for (Index i = threadIdx.x; i < half; i += blockDim.x) table[i] = rope_frequency(theta, i, dim);
    __syncthreads();
  }
  const Index groups = half / Width;
  const Index units = positions * groups;
  const Index row_begin = first_row + static_cast<Index>(blockIdx.y) * kRowsPerThread;
  const int row_count = static_cast<int>(rows - row_begin < kRowsPerThread ? rows - row_begin : kRowsPerThread);
  // Element offset of position 0 of each row of the chunk, and the step from one position to the next.
  const Index position_step = heads == 0 ? dim : heads * dim;
  Index row_start[kRowsPerThread];
  KILN_UNROLL
  for (int r = 0; r < kRowsPerThread; r++) {
    const Index row = row_begin + r;
    row_start[r] = heads == 0 ? row * positions * dim : (row / heads * positions * heads + row % heads) * dim;
  }
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index unit = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; unit < units; unit += stride) {
    const Index t = unit / groups;
    const Index i = unit % groups * Width;
    float c[Width], s[Width];
    KILN_UNROLL
    for (int j = 0; j < Width; j++) {
      const double frequency = tabled ? table[i + j] : rope_frequency(theta, i + j, dim);
      const double angle = sign * ((offset + static_cast<double>(t)) * frequency);
      c[j] = static_cast<float>(cos(angle));
      s[j] = static_cast<float>(sin(angle));
    }
    KILN_UNROLL
    for (int batch = 0; batch < kRowsPerThread; batch += kRowsInFlight) {
      if (batch >= row_count) break;
      // Groups (in units of Width elements) of the first half at position t, and every row's elements.
      Index first_group[kRowsInFlight];
      ElementGroup<T, Width> first[kRowsInFlight] = {}, second[kRowsInFlight] = {};
      KILN_UNROLL
      for (int r = 0; r < kRowsInFlight; r++) {
        first_group[r] = (row_start[batch + r] + t * position_step + i) / Width;
        if (batch + r < row_count) {
          first[r] = ElementGroup<T, Width>::load(x, first_group[r]);
          second[r] = ElementGroup<T, Width>::load(x, first_group[r] + half / Width);
        }
      }
      KILN_UNROLL
      for (int r = 0; r < kRowsInFlight; r++) {
        if (batch + r >= row_count) break;
        float rotated_first[Width], rotated_second[Width];
        KILN_UNROLL
        for (int j = 0; j < Width; j++) {
          const float a = to_float(first[r].values[j]);
          const float b = to_float(second[r].values[j]);
          rotated_first[j] = a * c[j] - b * s[j];
          rotated_second[j] = b * c[j] + a * s[j];
        }
        store_floats<T, Width>(out, first_group[r], rotated_first);
        store_floats<T, Width>(out, first_group[r] + half / Width, rotated_second);
      }
    }
  }
}

/** Enqueues rope_kernel for x, out of T, in 16-byte packs where D/2 and both pointers allow. */
template <typename T>
cudaError_t launch_rope_of(const LaunchContext& context, const T* x, T* out, Index rows, Index positions, Index dim,
                           double offset, double theta, double sign, Index heads) {
  constexpr int kPack = Pack<T>::kWidth;
  const bool packed = (dim / 2) % kPack == 0 && aligned16(x) && aligned16(out);
  const auto kernel = packed ? rope_kernel<T, kPack> : rope_kernel<T, 1>;
  const Index units = positions * (dim / 2) / (packed ? kPack : 1);
  const Index chunks = (rows + kRowsPerThread - 1) / kRowsPerThread;
  // Grid y holds at most the device's limit (65535) of chunks: more rows take several launches.
  return launch_in_grid_y_chunks(chunks, context, [&](Index first_chunk, unsigned launch_chunks) {
    // Rows [first_chunk·kRowsPerThread, rows) of this launch are addressed from element 0 (tokens-major rows are not contiguous).
    const dim3 grid(grid_for(units, kThreads, context.max_blocks), launch_chunks);
    return vendor::launch("rope_kernel", kernel, grid, dim3(kThreads), 0, context.stream, x, out,
                          first_chunk * kRowsPerThread, rows, positions, dim, offset, theta, sign, heads);
  });
}

}  // namespace

cudaError_t launch_rope(const LaunchContext& context, int dtype, const void* x, void* out, Index rows, Index positions,
                        Index dim, double offset, double theta, bool inverse, Index heads) {
  if (rows == 0 || positions * (dim / 2) == 0) return cudaSuccess;
  return for_float_dtype(dtype, [&](auto element) {
    using T = decltype(element);
    return launch_rope_of(context, static_cast<const T*>(x), static_cast<T*>(out), rows, positions, dim, offset, theta,
                          inverse ? -1.0 : 1.0, heads);
  });
}

}  // namespace kiln
