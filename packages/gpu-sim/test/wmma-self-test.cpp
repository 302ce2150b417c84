// Self-test of the warp matrix function emulation (gpu_sim/cuda/mma.hpp): products of __half and
// __nv_bfloat16 tiles in every layout against a scalar loop, elementwise work on fragment
// elements, and the misuse the device does not report (misaligned or per-lane pointers, a lane
// skipping the collective, a read of another lane's stored element without __syncwarp).
// Prints one "ok <name>" line per check, or "FAIL <name>: <why>" and exits 1.
#include <gpu_sim/cuda/mma.hpp>
#include <gpu_sim/cuda/runtime.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "launch_and_wait.hpp"
#include "self_test.hpp"

using self_test::check;
using self_test::contains;

using namespace nvcuda;

/** Without dynamic shared memory (launch_and_wait). */
template <typename... Parameters, typename... Arguments>
static cudaError_t launch(const char* name, void (*kernel)(Parameters...), dim3 grid, dim3 block,
                          Arguments... arguments) {
  return self_test::launch_and_wait(name, kernel, grid, block, 0, arguments...);
}

// out [32, 16] (col-major when store_col_major) = a [32, 48] · b [48, 16] + c [32, 16]; warp w computes rows 16w…16w+15.
// a is row-major (ldm 48) or col-major (ldm 32); b row-major (ldm 16) or col-major (ldm 48).
template <typename T, typename LayoutA, typename LayoutB>
__global__ void product_kernel(const T* a, const T* b, const float* c, float* out, bool store_col_major) {
  const int warp = static_cast<int>(threadIdx.x / 32);
  constexpr bool a_row = std::is_same_v<LayoutA, wmma::row_major>;
  constexpr bool b_row = std::is_same_v<LayoutB, wmma::row_major>;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, T, LayoutA> left;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, T, LayoutB> right;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> sum;
  wmma::load_matrix_sync(sum, c + warp * 16 * 16, 16, wmma::mem_row_major);
  for (int k0 = 0; k0 < 48; k0 += 16) {
    wmma::load_matrix_sync(left, a_row ? a + warp * 16 * 48 + k0 : a + k0 * 32 + warp * 16, a_row ? 48 : 32);
    wmma::load_matrix_sync(right, b_row ? b + k0 * 16 : b + k0, b_row ? 16 : 48);
    wmma::mma_sync(sum, left, right, sum);
  }
  for (int i = 0; i < sum.num_elements; i++) sum.x[i] *= 2.0f;
  if (store_col_major)
    wmma::store_matrix_sync(out + warp * 16, sum, 32, wmma::mem_col_major);
  else
    wmma::store_matrix_sync(out + warp * 16 * 16, sum, 16, wmma::mem_row_major);
}

__global__ void misaligned_kernel(const __half* a, float* out) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> left;
  wmma::load_matrix_sync(left, a + 1, 16);
  out[threadIdx.x] = __half2float(left.x[0]);
}

__global__ void per_lane_pointer_kernel(const __half* a, float* out) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> left;
  wmma::load_matrix_sync(left, a + (threadIdx.x == 7 ? 16 : 0), 16);
  out[threadIdx.x] = __half2float(left.x[0]);
}

__global__ void skipped_product_kernel(const __half* a, float* out) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> left;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> right;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> sum;
  wmma::fill_fragment(sum, 0.0f);
  wmma::load_matrix_sync(left, a, 16);
  wmma::load_matrix_sync(right, a, 16);
  if (threadIdx.x == 3) return;
  wmma::mma_sync(sum, left, right, sum);
  out[threadIdx.x] = sum.x[0];
}

// Stores a tile of 7s over −1s in shared memory, then every lane reads element 0 (stored by lane 0).
__global__ void store_then_read_kernel(float* out, bool synchronize) {
  __shared__ __align__(32) float tile[16 * 16];
  for (int i = static_cast<int>(threadIdx.x); i < 256; i += 32) tile[i] = -1.0f;
  __syncwarp();
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> sevens;
  wmma::fill_fragment(sevens, 7.0f);
  wmma::store_matrix_sync(tile, sevens, 16, wmma::mem_row_major);
  if (synchronize) __syncwarp();
  out[threadIdx.x] = tile[0];
}

/** A 256-byte aligned copy of `values` in simulated device memory (host memory here). */
template <typename T>
static T* device_copy(const std::vector<T>& values) {
  void* pointer = nullptr;
  cudaMalloc(&pointer, values.size() * sizeof(T));
  std::memcpy(pointer, values.data(), values.size() * sizeof(T));
  return static_cast<T*>(pointer);
}

template <typename T>
static T to_type(float value) {
  if constexpr (std::is_same_v<T, __half>)
    return __float2half_rn(value);
  else
    return __float2bfloat16_rn(value);
}

template <typename T, typename LayoutA, typename LayoutB>
static void check_product(const char* name, bool store_col_major) {
  constexpr bool a_row = std::is_same_v<LayoutA, wmma::row_major>;
  constexpr bool b_row = std::is_same_v<LayoutB, wmma::row_major>;
  // Small multiples of 1/4: every product and sum is exact in f32, so the check is exact.
  std::vector<float> a_values(32 * 48), b_values(48 * 16), c_values(32 * 16);
  for (int i = 0; i < 32 * 48; i++) a_values[i] = static_cast<float>(i % 7 - 3) / 4.0f;
  for (int i = 0; i < 48 * 16; i++) b_values[i] = static_cast<float>(i % 5 - 2) / 2.0f;
  for (int i = 0; i < 32 * 16; i++) c_values[i] = static_cast<float>(i % 3);
  std::vector<T> a(32 * 48), b(48 * 16);
  for (int row = 0; row < 32; row++) {
    for (int depth = 0; depth < 48; depth++)
      a[a_row ? row * 48 + depth : depth * 32 + row] = to_type<T>(a_values[row * 48 + depth]);
  }
  for (int depth = 0; depth < 48; depth++) {
    for (int column = 0; column < 16; column++)
      b[b_row ? depth * 16 + column : column * 48 + depth] = to_type<T>(b_values[depth * 16 + column]);
  }
  T* device_a = device_copy(a);
  T* device_b = device_copy(b);
  float* device_c = device_copy(c_values);
  float* out = device_copy(std::vector<float>(32 * 16, -99.0f));
  const cudaError_t error = launch(name, product_kernel<T, LayoutA, LayoutB>, dim3(1), dim3(64), device_a, device_b,
                                   device_c, out, store_col_major);
  std::string detail = error == cudaSuccess ? "" : gpu_sim_cuda_fault_detail();
  for (int row = 0; row < 32 && detail.empty(); row++) {
    for (int column = 0; column < 16; column++) {
      float expected = c_values[row * 16 + column];
      for (int depth = 0; depth < 48; depth++) expected += a_values[row * 48 + depth] * b_values[depth * 16 + column];
      expected *= 2.0f;
      const float got = store_col_major ? out[column * 32 + row] : out[row * 16 + column];
      if (got != expected) {
        detail = "out[" + std::to_string(row) + "][" + std::to_string(column) + "] = " + std::to_string(got) +
                 ", expected " + std::to_string(expected);
        break;
      }
    }
  }
  for (void* pointer : {static_cast<void*>(device_a), static_cast<void*>(device_b), static_cast<void*>(device_c),
                        static_cast<void*>(out)})
    cudaFree(pointer);
  check(detail.empty(), name, detail);
}

int main() {
  check_product<__half, wmma::row_major, wmma::row_major>("f16 product, a row-major, b row-major, stored row-major",
                                                          false);
  check_product<__half, wmma::col_major, wmma::col_major>("f16 product, a col-major, b col-major, stored col-major",
                                                          true);
  check_product<__nv_bfloat16, wmma::row_major, wmma::col_major>("bf16 product, a row-major, b col-major", false);
  check_product<__nv_bfloat16, wmma::col_major, wmma::row_major>("bf16 product, a col-major, b row-major", true);

  __half* tile = device_copy(std::vector<__half>(32 * 16, __float2half_rn(1.0f)));
  float* out = device_copy(std::vector<float>(32, 0.0f));
  cudaError_t error = launch("misaligned_kernel", misaligned_kernel, dim3(1), dim3(32), tile, out);
  std::string detail = gpu_sim_cuda_fault_detail();
  check(error == cudaErrorLaunchFailure && contains(detail, "misaligned_kernel") &&
            contains(detail, "wmma::load_matrix_sync") && contains(detail, "256-bit"),
        "a pointer that is not 256-bit aligned aborts the launch", detail);

  error = launch("per_lane_pointer_kernel", per_lane_pointer_kernel, dim3(1), dim3(32), tile, out);
  detail = gpu_sim_cuda_fault_detail();
  check(error == cudaErrorLaunchFailure && contains(detail, "different pointer"),
        "lanes passing different pointers abort the launch", detail);

  error = launch("skipped_product_kernel", skipped_product_kernel, dim3(1), dim3(32), tile, out);
  detail = gpu_sim_cuda_fault_detail();
  check(error == cudaErrorLaunchFailure && contains(detail, "skipped_product_kernel") &&
            contains(detail, "wmma::mma_sync") && contains(detail, "wmma-self-test.cpp:"),
        "a lane that skips mma_sync aborts naming the kernel and file:line", detail);

  error = launch("store_then_read_kernel", store_then_read_kernel, dim3(1), dim3(32), out, false);
  // The lane that arrives last at the store runs on first and reads before lane 0 has written its part.
  int stale_lanes = 0;
  for (int lane = 0; lane < 32; lane++) stale_lanes += out[lane] == -1.0f ? 1 : 0;
  const bool stale = error == cudaSuccess && stale_lanes > 0;
  error = launch("store_then_read_kernel", store_then_read_kernel, dim3(1), dim3(32), out, true);
  bool synchronized = error == cudaSuccess;
  for (int lane = 0; lane < 32; lane++) synchronized = synchronized && out[lane] == 7.0f;
  check(stale && synchronized,
        "reading another lane's stored element needs __syncwarp (without it the old value shows)",
        stale ? "" : "every lane read 7 without __syncwarp");

  std::printf("%d failures\n", self_test::failures);
  return self_test::failures == 0 ? 0 : 1;
}
