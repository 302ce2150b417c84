// kernels/matmul_pad.cu — the padding plan and copies of matmul_pad.cuh.
//
// Algorithm: one copy kernel moves a window of 16-bit words between two row-major layouts: each
// block takes 1024 columns of rows gridDim.y apart (4 per thread, consecutive threads on
// consecutive columns, so both sides are coalesced) and writes 0 where the destination reaches
// past the source's rows or columns. It pads an operand (destination larger) and crops the
// padded output (destination smaller).
// Numerics: bit-exact copies; the zeros are +0 in f16 and bf16 alike.
#include "matmul_pad.cuh"

#include <cstdint>

namespace kiln {
namespace {

constexpr int kThreads = 256;
constexpr int kColumnsPerThread = 4;
constexpr Index kColumnsPerBlock = kColumnsPerThread * kThreads;
/** A copied operand must meet at least this many columns (A: n) or rows (B: m) of the product. */
constexpr Index kMinReuse = 256;
/** Problems under this much work per multiprocessor keep the WMMA kernel (the copies' launches would cost more). */
constexpr double kMinFlopsPerMultiprocessor = 4.0 * 1024.0 * 1024.0;
/** Scratch regions start on this boundary. */
constexpr Index kScratchAlignment = 256;

/** dst [rows / dst_rows, dst_rows, dst_cols] (dense) from src (src_pitch per row, src_batch_stride per batch index), 0 past src_rows or src_cols. */
__global__ void __launch_bounds__(kThreads)
    copy_window_kernel(const std::uint16_t* src, Index src_rows, Index src_cols, Index src_pitch,
                       Index src_batch_stride, std::uint16_t* dst, Index dst_rows, Index dst_cols, Index rows) {
  const Index column0 = static_cast<Index>(blockIdx.x) * kColumnsPerBlock + threadIdx.x;
  for (Index row = blockIdx.y; row < rows; row += gridDim.y) {
    const Index batch_index = row / dst_rows;
    const Index r = row - batch_index * dst_rows;
    const bool row_inside = r < src_rows;
    const std::uint16_t* src_row = src + batch_index * src_batch_stride + r * src_pitch;
    std::uint16_t* dst_row = dst + row * dst_cols;
    for (int j = 0; j < kColumnsPerThread; j++) {
      const Index column = column0 + j * kThreads;
      if (column < dst_cols) dst_row[column] = row_inside && column < src_cols ? src_row[column] : std::uint16_t{0};
    }
  }
}

/** One copy: `batches` matrices of src_rows × src_cols (dense rows of src_pitch) into dense dst_rows × dst_cols. */
struct WindowCopy {
  const void* src;
  Index src_rows;
  Index src_cols;
  Index src_pitch;
  Index src_batch_stride;
  void* dst;
  Index dst_rows;
  Index dst_cols;
  Index batches;
};

cudaError_t launch_window_copy(const LaunchContext& context, const WindowCopy& copy) {
  const Index rows = copy.batches * copy.dst_rows;
  const dim3 blocks(static_cast<unsigned>((copy.dst_cols + kColumnsPerBlock - 1) / kColumnsPerBlock),
                    grid_y_for(rows, context));
  return vendor::launch("matmul_pad copy_window_kernel", copy_window_kernel, blocks, dim3(kThreads), 0, context.stream,
                        static_cast<const std::uint16_t*>(copy.src), copy.src_rows, copy.src_cols, copy.src_pitch,
                        copy.src_batch_stride, static_cast<std::uint16_t*>(copy.dst), copy.dst_rows, copy.dst_cols,
                        rows);
}

Index round_up(Index value, Index multiple) { return (value + multiple - 1) / multiple * multiple; }

/** An operand's stored rows and contiguous extent (A: [m,k] or [k,m]; B: [k,n] or [n,k]). */
struct StoredMatrix {
  Index rows;
  Index cols;
};

StoredMatrix stored_a(const MatmulShape& shape) {
  return shape.transpose_a ? StoredMatrix{shape.k, shape.m} : StoredMatrix{shape.m, shape.k};
}

StoredMatrix stored_b(const MatmulShape& shape) {
  return shape.transpose_b ? StoredMatrix{shape.n, shape.k} : StoredMatrix{shape.k, shape.n};
}

/** Matrices a padded operand holds: one when it is shared by every batch index (batch stride 0). */
Index padded_batches(Index padded_batch_stride, Index batch) { return padded_batch_stride == 0 ? 1 : batch; }

}  // namespace

MatmulPadPlan plan_matmul_padding(const LaunchContext& context, int dtype, const void* a, const void* b,
                                  const MatmulShape& shape) {
  MatmulPadPlan plan;
  if (dtype == kF32 || shape.batch <= 0 || shape.m <= 0 || shape.n <= 0 || shape.k <= 0) return plan;
  if (!device_runs_mma_kernels()) return plan;  // WMMA either way
  const StoredMatrix a_stored = stored_a(shape);
  const StoredMatrix b_stored = stored_b(shape);
  bool copy_a = !rows_in_whole_chunks(a, a_stored.cols, shape.batch_stride_a);
  bool copy_b = !rows_in_whole_chunks(b, b_stored.cols, shape.batch_stride_b);
  if (!copy_a && !copy_b) return plan;
  MatmulShape padded = shape;
  if (copy_a) (shape.transpose_a ? padded.m : padded.k) = round_up(a_stored.cols, 8);
  if (copy_b) (shape.transpose_b ? padded.k : padded.n) = round_up(b_stored.cols, 8);
  // A longer k needs zero rows in an operand stored with k as its rows.
  if (padded.k != shape.k) {
    copy_a = copy_a || shape.transpose_a;
    copy_b = copy_b || !shape.transpose_b;
  }
  if ((copy_a && shape.n < kMinReuse) || (copy_b && shape.m < kMinReuse)) return plan;
  const Index multiprocessors = context.multiprocessors();
  const double flops = 2.0 * static_cast<double>(shape.batch) * static_cast<double>(shape.m) *
                       static_cast<double>(shape.n) * static_cast<double>(shape.k);
  if (flops < kMinFlopsPerMultiprocessor * static_cast<double>(multiprocessors)) return plan;
  const StoredMatrix a_padded = stored_a(padded);
  const StoredMatrix b_padded = stored_b(padded);
  const bool shared_a = shape.batch > 1 && shape.batch_stride_a == 0;
  const bool shared_b = shape.batch > 1 && shape.batch_stride_b == 0;
  if (copy_a) padded.batch_stride_a = shared_a ? 0 : a_padded.rows * a_padded.cols;
  if (copy_b) padded.batch_stride_b = shared_b ? 0 : b_padded.rows * b_padded.cols;
  // Scratch is 256-byte aligned: the padded problem must then take wgmma or mma.sync.
  const void* aligned = MatmulPadPlan::scratch_placeholder();
  if (choose_half_matmul_kernel(context, copy_a ? aligned : a, copy_b ? aligned : b, padded) == HalfMatmulKernel::kWmma)
    return plan;
  plan.active = true;
  plan.padded = padded;
  plan.copy_a = copy_a;
  plan.copy_b = copy_b;
  plan.copy_out = padded.m != shape.m || padded.n != shape.n;
  if (copy_a)
    plan.bytes_a = round_up(padded_batches(padded.batch_stride_a, shape.batch) * a_padded.rows * a_padded.cols * 2,
                            kScratchAlignment);
  if (copy_b)
    plan.bytes_b = round_up(padded_batches(padded.batch_stride_b, shape.batch) * b_padded.rows * b_padded.cols * 2,
                            kScratchAlignment);
  if (plan.copy_out) plan.bytes_out = round_up(shape.batch * padded.m * padded.n * 2, kScratchAlignment);
  return plan;
}

cudaError_t launch_matmul_pad_operands(const LaunchContext& context, const MatmulPadPlan& plan,
                                       const MatmulShape& shape, const void* a, const void* b, void* scratch,
                                       const void*& padded_a, const void*& padded_b) {
  auto* bytes = static_cast<unsigned char*>(scratch);
  padded_a = plan.copy_a ? bytes : a;
  padded_b = plan.copy_b ? bytes + plan.bytes_a : b;
  if (plan.copy_a) {
    const StoredMatrix from = stored_a(shape);
    const StoredMatrix to = stored_a(plan.padded);
    const cudaError_t copied =
        launch_window_copy(context, WindowCopy{a, from.rows, from.cols, from.cols, shape.batch_stride_a, bytes, to.rows,
                                               to.cols, padded_batches(plan.padded.batch_stride_a, shape.batch)});
    if (copied != cudaSuccess) return copied;
  }
  if (plan.copy_b) {
    const StoredMatrix from = stored_b(shape);
    const StoredMatrix to = stored_b(plan.padded);
    return launch_window_copy(
        context, WindowCopy{b, from.rows, from.cols, from.cols, shape.batch_stride_b, bytes + plan.bytes_a, to.rows,
                            to.cols, padded_batches(plan.padded.batch_stride_b, shape.batch)});
  }
  return cudaSuccess;
}

cudaError_t launch_matmul_unpad_output(const LaunchContext& context, const MatmulPadPlan& plan,
                                       const MatmulShape& shape, const void* padded_out, void* out) {
  return launch_window_copy(context, WindowCopy{padded_out, plan.padded.m, plan.padded.n, plan.padded.n,
                                                plan.padded.m * plan.padded.n, out, shape.m, shape.n, shape.batch});
}

}  // namespace kiln
