// plan/dispatch_plan.h — decides, for each kernel call, which MSL kernels run with which
// function constants, grid and threadgroup sizes, buffer bindings and argument structs
// (native/kernels/kiln_metal_args.h). Pure functions of the arguments and two device facts: the
// Metal host and the simulator both execute exactly what they return, so the simulated
// conformance kit tests the real dispatch code. Limits it enforces: every element index of a
// tensor fits 32 bits (at most 2³² − 1 elements); views of more than KILN_MAX_RANK dims after
// merging contiguous ones become several dispatches; batches beyond 65 535 matrices too.
#pragma once

#include <cstdint>

#include "dispatch.h"
#include "kiln/matmul_shape.h"

namespace kiln::metal {

/** What the plan needs to know about the GPU. */
struct PlanDevice {
  /** simdgroup_matrix (8×8 simdgroup matrices: Apple7 = M1 and newer). */
  bool simdgroup_matrix = true;
};

Plan plan_unary(int op, const TensorView& x, const TensorView& out);
Plan plan_binary(int op, const TensorView& a, const TensorView& b, const TensorView& out);
Plan plan_where(const TensorView& condition, const TensorView& a, const TensorView& b, const TensorView& out);
/** 8-byte partial states the two-pass reduce of this shape needs in a scratch buffer (0: the shape runs in one pass). */
Index reduce_partial_states(Index outer, Index size, Index inner);
/** `scratch` (reduce_partial_states · 8 bytes, viewed as f32) is used only when the shape runs in two passes. */
Plan plan_reduce(int op, const TensorView& x, const TensorView& out, Index outer, Index size, Index inner,
                 const TensorView* scratch = nullptr);
Plan plan_matmul(const TensorView& a, const TensorView& b, const TensorView& out, const MatmulShape& shape,
                 const PlanDevice& device);
Plan plan_copy(const TensorView& src, const TensorView& dst);
Plan plan_gather(const TensorView& x, const TensorView& indices, const TensorView& out, Index outer, Index rows,
                 Index inner);
Plan plan_scatter_add(const TensorView& source, const TensorView& indices, const TensorView& out, Index outer,
                      Index rows, Index inner);
Plan plan_cast(const TensorView& x, const TensorView& out);
Plan plan_fill(const TensorView& out, double value);
/** kind 0: uniform(a = low, b = high); kind 1: normal(a = mean, b = std). */
Plan plan_random(const TensorView& out, int kind, double a, double b, std::uint64_t seed, std::uint64_t offset);
/** Copies `bytes` bytes from `staging` (offset 0) to `target` at `target_offset` in stream order (staged uploads). */
Plan plan_copy_bytes(BufferRecord* staging, BufferRecord* target, std::size_t target_offset, std::size_t bytes);

/** The dtype's bits of a float64 fill value, rounded once (float → i32 per the cast rule). */
std::uint32_t fill_bits(int dtype, double value);

}  // namespace kiln::metal
