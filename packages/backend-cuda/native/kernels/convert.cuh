// kernels/convert.cuh — host entry points of the data-movement family: strided copy, cast, fill.
#pragma once

#include <cstdint>

#include "common.cuh"

namespace kiln {

/** dst[view] = src[view] bit for bit; operand 0 = src, operand 1 = dst, both of `dtype`. */
cudaError_t launch_copy(const LaunchContext& context, int dtype, const void* src, void* dst,
                        const StridedOperands<2>& layout, Index count);

/** Copies that ran as a tiled transpose in this process so far (tests assert that it ran). */
unsigned long long transpose_copy_launches();

/** out = x converted from `from` to `to` (count contiguous elements each). */
cudaError_t launch_cast(const LaunchContext& context, int from, const void* x, int to, void* out, Index count);

/** Casts that ran 8 elements a thread in 16-byte packs (two float dtypes, aligned buffers) in this process so far (tests assert that it ran). */
unsigned long long cast_packed_launches();

/** Every element of out (count × dtype) = the element whose bits are `bits` (see fill_bits). */
cudaError_t launch_fill(const LaunchContext& context, int dtype, void* out, std::uint32_t bits, Index count);

/** The bits of `value` stored as `dtype`, rounded once (f16/bf16 directly from the double; i32 truncated and saturated). */
std::uint32_t fill_bits(int dtype, double value);

}  // namespace kiln
