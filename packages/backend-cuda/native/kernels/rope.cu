// kernels/rope.cu — rotary position embedding (half-split), forward and inverse.
//
// Algorithm: a thread owns one (position t, frequency i < D/2) pair and a chunk of up to
// kRowsPerThread rows (grid y), computes the angle once and rotates element i with element
// i + D/2 of every row in its chunk. Consecutive threads take consecutive i, so loads coalesce.
// Layout: x, out contiguous [rows, T, D] (rows = B·H, heads-major) or [B, T, H, D] (tokens-major:
// row b·H + h of position t starts at ((b·T + t)·H + h)·D); D even.
// Numerics: as docs/kernel-semantics.md defines the angle — f = theta^(−2i/D) and a = p·f in
// f64, cos and sin in f64 — then the rotation in f32, one rounding to the output dtype. (An f32
// angle would lose up to ½ ulp of p·f, 8·10⁻⁶ rad at p = 256 and more at long contexts.)
#include "numerics.cuh"
#include "rope.cuh"

namespace kiln {
namespace {

constexpr int kThreads = 256;
constexpr Index kRowsPerThread = 8;

/** Element offset of position t of row `row` (b·H + h): heads-major when heads is 0, else tokens-major. */
__device__ __forceinline__ Index rope_row_start(Index row, Index t, Index positions, Index dim, Index heads) {
  if (heads == 0) return (row * positions + t) * dim;
  return ((row / heads * positions + t) * heads + row % heads) * dim;
}

__global__ void __launch_bounds__(kThreads)
    rope_kernel(int dtype, const void* x, void* out, Index first_row, Index rows, Index positions, Index dim,
                double offset, double theta, double sign, Index heads) {
  const Index half = dim / 2;
  const Index pairs = positions * half;
  const Index row_begin = first_row + static_cast<Index>(blockIdx.y) * kRowsPerThread;
  const Index row_end = row_begin + kRowsPerThread < rows ? row_begin + kRowsPerThread : rows;
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index pair = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; pair < pairs; pair += stride) {
    const Index t = pair / half;
    const Index i = pair % half;
    const double frequency = pow(theta, static_cast<double>(-2 * i) / static_cast<double>(dim));
    const double angle = sign * ((offset + static_cast<double>(t)) * frequency);
    const float c = static_cast<float>(cos(angle));
    const float s = static_cast<float>(sin(angle));
    for (Index row = row_begin; row < row_end; row++) {
      const Index first = rope_row_start(row, t, positions, dim, heads) + i;
      const float a = load_float(x, dtype, first);
      const float b = load_float(x, dtype, first + half);
      store_float(out, dtype, first, a * c - b * s);
      store_float(out, dtype, first + half, b * c + a * s);
    }
  }
}

}  // namespace

cudaError_t launch_rope(const LaunchContext& context, int dtype, const void* x, void* out, Index rows, Index positions,
                        Index dim, double offset, double theta, bool inverse, Index heads) {
  const Index pairs = positions * (dim / 2);
  if (rows == 0 || pairs == 0) return cudaSuccess;
  const Index chunks = (rows + kRowsPerThread - 1) / kRowsPerThread;
  // Grid y holds at most the device's limit (65535) of chunks: more rows take several launches.
  return launch_in_grid_y_chunks(chunks, context, [&](Index first_chunk, unsigned launch_chunks) {
    // Rows [first_chunk·kRowsPerThread, rows) of this launch are addressed from element 0 (tokens-major rows are not contiguous).
    const dim3 grid(grid_for(pairs, kThreads, context.max_blocks), launch_chunks);
    return vendor::launch("rope_kernel", rope_kernel, grid, dim3(kThreads), 0, context.stream, dtype, x, out,
                          first_chunk * kRowsPerThread, rows, positions, dim, offset, theta, inverse ? -1.0 : 1.0,
                          heads);
  });
}

}  // namespace kiln
