// kernels/random.cuh — host entry point of `random` (kiln's Philox stream on the device).
#pragma once

#include <cstdint>

#include "common.cuh"

namespace kiln {

/** Distribution of `random`: uniform in [a, b) or normal(mean a, std b). */
enum RandomKind : int { kUniform = 0, kNormal = 1 };

/** out[i] = element offset + i of the Philox stream of `seed` (count elements of a float dtype). */
cudaError_t launch_random(const LaunchContext& context, int dtype, void* out, int kind, double a, double b,
                          std::uint64_t seed, std::uint64_t offset, Index count);

}  // namespace kiln
