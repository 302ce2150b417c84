// kernels/matmul_pad.cuh — f16/bf16 matmul operands copied into rows of whole 16-byte chunks, so a
// large problem whose rows are not keeps kiln's fast tensor-core kernels (matmul_pad.cu).
//
// Why: the wgmma (TMA) and mma.sync (cp.async) kernels read 16-byte chunks, so every operand row
// must start 16-byte aligned — contiguous extent, batch stride and base in whole 8-element
// chunks. A Hugging Face GPT-2's lm_head backward reads logit gradients [tokens, 50257]: rows of an
// odd length, which only the WMMA kernel (scalar loads) could read.
// Algorithm: the misaligned operand is copied into scratch with its contiguous extent rounded up
// to a multiple of 8 and the new columns zeroed. When that extent is k, the other operand gets k
// rounded up too (zero rows or columns), so the extra k adds only zero products; when it is m (A
// transposed) or n (B untransposed), the product is written to a scratch output of the rounded
// size and its m × n window copied out. Each output element is the same sum as before plus exact
// zeros. Taken (plan_matmul_padding) where tensor-core kernels run (compute capability ≥ 8.0
// with sm_80 code), the padded problem takes wgmma or mma.sync, each copied operand is reused at
// least kMinReuse times (the product's other dimension: copying costs about what multiplying it
// by that many columns does), and the problem has at least kMinFlopsPerMultiprocessor of work
// per SM; else the WMMA kernel runs as before.
// Layout: a padded operand is dense [batch or 1, rows, rounded extent] (batch stride 0 stays 0);
// scratch holds A, then B, then the output, each from a 256-byte boundary.
#pragma once

#include <cstdint>

#include "matmul.cuh"

namespace kiln {

/** How launch_matmul pads one f16/bf16 problem (active false: it does not). */
struct MatmulPadPlan {
  /** The problem is padded. */
  bool active = false;
  /** The problem the tensor-core kernel runs, on the padded operands and output. */
  MatmulShape padded;
  /** Which operands are copied, and whether the product goes through a scratch output. */
  bool copy_a = false;
  bool copy_b = false;
  bool copy_out = false;
  /** Scratch bytes of each copy (0 when not copied), each a multiple of 256. */
  Index bytes_a = 0;
  Index bytes_b = 0;
  Index bytes_out = 0;
  /** All scratch bytes the copies need. */
  Index bytes() const { return bytes_a + bytes_b + bytes_out; }
  /** An address aligned as scratch is, standing in for a copied operand when planning the padded problem. */
  static const void* scratch_placeholder() { return reinterpret_cast<const void*>(std::uintptr_t{256}); }
};

/** The padding plan for `shape` (see the file header); inactive for f32 and for problems the kernels take as they are. */
MatmulPadPlan plan_matmul_padding(const LaunchContext& context, int dtype, const void* a, const void* b,
                                  const MatmulShape& shape);

/** Copies a and b into `scratch` as `plan` says (the first plan.bytes_a + plan.bytes_b bytes); sets the operands the padded problem reads. */
cudaError_t launch_matmul_pad_operands(const LaunchContext& context, const MatmulPadPlan& plan,
                                       const MatmulShape& shape, const void* a, const void* b, void* scratch,
                                       const void*& padded_a, const void*& padded_b);

/** Copies the m × n window of the padded output (after the operands in `scratch`) into out [batch, m, n]. */
cudaError_t launch_matmul_unpad_output(const LaunchContext& context, const MatmulPadPlan& plan,
                                       const MatmulShape& shape, const void* padded_out, void* out);

}  // namespace kiln
