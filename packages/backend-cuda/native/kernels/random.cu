// kernels/random.cu — kiln's random stream (packages/core/src/random/philox.ts) on the device.
//
// Algorithm: Philox4x32-10. Element e = offset + i uses counter block c = e / 4 (words
// [c mod 2³², c / 2³², 0, 0], key [seed mod 2³², seed / 2³²]) and lane e % 4. Uniform: one
// thread per counter block fills up to four elements; normal: one thread per element (Box-Muller
// on lanes 0 and 1 of block e, as core defines it).
// Numerics, step for step as core's host generator so the bits agree: uniform
// unit = (word >> 8)·2⁻²⁴, value = f32(low + (high − low)·unit) in f64 with explicit roundings
// (no FMA contraction); normal z = √(−2 ln u1)·cos(2π u2) in f64, value = f32(mean + std·z).
// f16/bf16 round that f32 once more, as core does. The f64 log/cos are within 1 ulp on both
// sides (V8's fdlibm, CUDA's libdevice, glibc); a different last f64 bit changes the f32 only
// when it lands within 2⁻²⁹ of a rounding boundary.
#include <cstdint>

#include "numerics.cuh"
#include "random.cuh"

namespace kiln {
namespace {

constexpr int kThreads = 256;

struct Words {
  std::uint32_t w[4];
};

__device__ __forceinline__ Words philox(std::uint64_t block, std::uint32_t key0, std::uint32_t key1) {
  std::uint32_t c0 = static_cast<std::uint32_t>(block);
  std::uint32_t c1 = static_cast<std::uint32_t>(block >> 32);
  std::uint32_t c2 = 0;
  std::uint32_t c3 = 0;
  for (int round = 0; round < 10; round++) {
    const std::uint32_t high0 = __umulhi(0xd2511f53u, c0);
    const std::uint32_t low0 = 0xd2511f53u * c0;
    const std::uint32_t high1 = __umulhi(0xcd9e8d57u, c2);
    const std::uint32_t low1 = 0xcd9e8d57u * c2;
    c0 = high1 ^ c1 ^ key0;
    c1 = low1;
    c2 = high0 ^ c3 ^ key1;
    c3 = low0;
    key0 += 0x9e3779b9u;
    key1 += 0xbb67ae85u;
  }
  return Words{{c0, c1, c2, c3}};
}

__device__ __forceinline__ void store_random(void* out, int dtype, Index i, float value) {
  store_float(out, dtype, i, value);
}

__global__ void __launch_bounds__(kThreads)
    uniform_kernel(void* out, int dtype, double low, double high, std::uint32_t key0, std::uint32_t key1,
                   std::uint64_t offset, Index count) {
  const std::uint64_t first_block = offset / 4;
  const std::uint64_t last_block = (offset + static_cast<std::uint64_t>(count) - 1) / 4;
  const Index blocks = static_cast<Index>(last_block - first_block + 1);
  const double range = __dsub_rn(high, low);
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index t = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; t < blocks; t += stride) {
    const std::uint64_t block = first_block + static_cast<std::uint64_t>(t);
    const Words words = philox(block, key0, key1);
    for (int lane = 0; lane < 4; lane++) {
      const std::uint64_t element = block * 4 + static_cast<std::uint64_t>(lane);
      if (element < offset || element >= offset + static_cast<std::uint64_t>(count)) continue;
      const double unit = static_cast<double>(words.w[lane] >> 8) * 0x1p-24;
      store_random(out, dtype, static_cast<Index>(element - offset),
                   __double2float_rn(__dadd_rn(low, __dmul_rn(range, unit))));
    }
  }
}

__global__ void __launch_bounds__(kThreads)
    normal_kernel(void* out, int dtype, double mean, double deviation, std::uint32_t key0, std::uint32_t key1,
                  std::uint64_t offset, Index count) {
  const double two_pi = 2.0 * 3.141592653589793;
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    const Words words = philox(offset + static_cast<std::uint64_t>(i), key0, key1);
    const double u1 = static_cast<double>((words.w[0] >> 8) + 1u) * 0x1p-24;
    const double u2 = static_cast<double>(words.w[1] >> 8) * 0x1p-24;
    const double radius = sqrt(__dmul_rn(-2.0, log(u1)));
    const double z = __dmul_rn(radius, cos(__dmul_rn(two_pi, u2)));
    store_random(out, dtype, i, __double2float_rn(__dadd_rn(mean, __dmul_rn(deviation, z))));
  }
}

}  // namespace

cudaError_t launch_random(const LaunchContext& context, int dtype, void* out, int kind, double a, double b,
                          std::uint64_t seed, std::uint64_t offset, Index count) {
  if (count == 0) return cudaSuccess;
  const auto key0 = static_cast<std::uint32_t>(seed);
  const auto key1 = static_cast<std::uint32_t>(seed >> 32);
  if (kind == kUniform) {
    const Index blocks = static_cast<Index>((offset + static_cast<std::uint64_t>(count) - 1) / 4 - offset / 4 + 1);
    return vendor::launch("uniform_kernel", uniform_kernel, dim3(grid_for(blocks, kThreads, context.max_blocks)),
                          dim3(kThreads), 0, context.stream, out, dtype, a, b, key0, key1, offset, count);
  }
  return vendor::launch("normal_kernel", normal_kernel, dim3(grid_for(count, kThreads, context.max_blocks)),
                        dim3(kThreads), 0, context.stream, out, dtype, a, b, key0, key1, offset, count);
}

}  // namespace kiln
