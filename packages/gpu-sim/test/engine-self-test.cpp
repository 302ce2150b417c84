// Self-test of the gpu_sim engine through its CUDA dialect: barriers, shared memory per block,
// shuffles/votes/reductions, atomics across parallel workers, dynamic shared memory,
// determinism, divergence that must fail with the kernel name and file:line (never hang), and
// misaligned vector loads and stores, which must fail the same way.
// Prints one "ok <name>" line per check, or "FAIL <name>: <why>" and exits 1.
#include <gpu_sim/cuda/runtime.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "self_test.hpp"

using self_test::check;
using self_test::contains;

// ---- kernels ----

// Rotates values through shared memory: needs the barrier between the write and the read.
__global__ void rotate_kernel(const int* input, int* output, int rounds) {
  __shared__ int tile[256];
  const unsigned tid = threadIdx.x;
  int value = input[blockIdx.x * blockDim.x + tid];
  for (int round = 0; round < rounds; round++) {
    tile[tid] = value;
    __syncthreads();
    value = tile[(tid + 1) % blockDim.x];
    __syncthreads();
  }
  output[blockIdx.x * blockDim.x + tid] = value;
}

__global__ void shuffle_kernel(int* output) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const unsigned full = 0xffffffffu;
  int* row = output + threadIdx.x * 12;
  row[0] = __shfl_sync(full, lane * 10, 3);     // everyone reads lane 3
  row[1] = __shfl_up_sync(full, lane, 1);       // lane 0 keeps its own
  row[2] = __shfl_down_sync(full, lane, 2);     // lanes 30, 31 keep their own
  row[3] = __shfl_xor_sync(full, lane, 1);      // pairs swap
  row[4] = __shfl_xor_sync(full, lane, 4, 8);   // within segments of 8
  row[5] = __shfl_down_sync(full, lane, 4, 8);  // segment-relative edge
  row[6] = static_cast<int>(__ballot_sync(full, lane % 3 == 0));
  row[7] = __any_sync(full, lane == 17);
  row[8] = __all_sync(full, lane < 31);
  row[9] = static_cast<int>(__reduce_add_sync(full, static_cast<unsigned>(lane)));
  row[10] = __syncthreads_count(lane % 2 == 0);
  float sum = static_cast<float>(lane);
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(full, sum, offset);
  row[11] = static_cast<int>(sum);
}

// Block sum: warp shuffles, then shared memory across warps.
__global__ void block_sum_kernel(const float* input, float* output, int count) {
  __shared__ float partial[32];
  float value = 0.0f;
  for (int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); i < count;
       i += static_cast<int>(blockDim.x * gridDim.x))
    value += input[i];
  for (int offset = 16; offset > 0; offset /= 2) value += __shfl_down_sync(0xffffffffu, value, offset);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = value;
  __syncthreads();
  if (threadIdx.x < 32) {
    value = threadIdx.x < blockDim.x / 32 ? partial[threadIdx.x] : 0.0f;
    for (int offset = 16; offset > 0; offset /= 2) value += __shfl_down_sync(0xffffffffu, value, offset);
    if (threadIdx.x == 0) atomicAdd(output, value);
  }
}

__global__ void atomic_kernel(int* counter, float* total, __half* half_total) {
  atomicAdd(counter, 1);
  atomicAdd(total, 0.5f);
  atomicAdd(half_total, __float2half_rn(1.0f));
}

__global__ void dynamic_shared_kernel(float* output) {
  GPU_SIM_EXTERN_SHARED(float, scratch);
  scratch[threadIdx.x] = static_cast<float>(threadIdx.x) * 2.0f;
  __syncthreads();
  output[blockIdx.x * blockDim.x + threadIdx.x] =
      scratch[blockDim.x - 1 - threadIdx.x] + static_cast<float>(blockIdx.x);
}

static int exit_barrier_line = 0;
__global__ void early_exit_kernel(int* output) {
  if (threadIdx.x == 5) return;
  // clang-format off: the line recorded must be the barrier's own
  exit_barrier_line = __LINE__; __syncthreads();
  // clang-format on
  output[threadIdx.x] = 1;
}

static int first_barrier_line = 0;
static int second_barrier_line = 0;
__global__ void two_barriers_kernel(int* output) {
  if (threadIdx.x < 64) {
    // clang-format off
    first_barrier_line = __LINE__; __syncthreads();
    // clang-format on
  } else {
    // clang-format off
    second_barrier_line = __LINE__; __syncthreads();
    // clang-format on
  }
  output[threadIdx.x] = 1;
}

__global__ void exited_lane_shuffle_kernel(int* output) {
  if (threadIdx.x == 7) return;
  output[threadIdx.x] = __shfl_xor_sync(0xffffffffu, static_cast<int>(threadIdx.x), 1);
}

__global__ void foreign_mask_kernel(int* output) {
  output[threadIdx.x] = __shfl_sync(0x0000ffffu, static_cast<int>(threadIdx.x), 0);
}

__global__ void collective_versus_barrier_kernel(int* output) {
  // Lanes 0-30 wait in a full-mask shuffle for lane 31, which already waits at the barrier.
  if (threadIdx.x < 31) output[threadIdx.x] = __shfl_sync(0xffffffffu, 1, 0);
  __syncthreads();
}

// ---- checks ----

template <typename... Parameters, typename... Arguments>
static cudaError_t launch(const char* name, void (*kernel)(Parameters...), dim3 grid, dim3 block, std::size_t shared,
                          Arguments... arguments) {
  return gpu_sim::cuda::launch_kernel(name, kernel, grid, block, shared, nullptr, arguments...);
}

static void check_barriers_and_shared_memory(unsigned workers) {
  gpu_sim::EngineSettings settings = gpu_sim::Engine::instance().settings();
  settings.workers = workers;
  settings.parallel_threshold_threads = 0;
  gpu_sim::Engine::instance().configure(settings);
  const int blocks = 8;
  const int threads = 256;
  std::vector<int> input(blocks * threads);
  std::vector<int> output(blocks * threads, -1);
  for (int i = 0; i < blocks * threads; i++) input[i] = i * 7 + 3;
  const cudaError_t error =
      launch("rotate_kernel", rotate_kernel, dim3(blocks), dim3(threads), 0, input.data(), output.data(), 5);
  bool good = error == cudaSuccess;
  for (int block = 0; block < blocks && good; block++) {
    for (int tid = 0; tid < threads; tid++) {
      if (output[block * threads + tid] != input[block * threads + (tid + 5) % threads]) good = false;
    }
  }
  check(good,
        workers == 1 ? "barrier rotates shared memory (1 worker)"
                     : "barrier rotates shared memory per block (2 workers in parallel)",
        gpu_sim_cuda_fault_detail());
}

static void check_shuffles() {
  std::vector<int> output(64 * 12, -1);
  const cudaError_t error = launch("shuffle_kernel", shuffle_kernel, dim3(1), dim3(64), 0, output.data());
  bool good = error == cudaSuccess;
  std::string detail;
  for (int tid = 0; tid < 64 && good; tid++) {
    const int lane = tid % 32;
    const int* row = &output[tid * 12];
    const int expected[12] = {
        30,
        lane == 0 ? 0 : lane - 1,
        lane >= 30 ? lane : lane + 2,
        lane ^ 1,
        lane ^ 4,
        (lane % 8) + 4 < 8 ? lane + 4 : lane,
        static_cast<int>(0x49249249u),
        1,
        0,
        496,
        32,
        496,
    };
    for (int k = 0; k < 12; k++) {
      if (row[k] != expected[k]) {
        good = false;
        detail = "thread " + std::to_string(tid) + " item " + std::to_string(k) + ": got " + std::to_string(row[k]) +
                 ", expected " + std::to_string(expected[k]);
        break;
      }
    }
  }
  check(good, "shuffles, votes, reductions and __syncthreads_count",
        detail.empty() ? gpu_sim_cuda_fault_detail() : detail);
}

static void check_block_sum() {
  const int count = 10000;
  std::vector<float> input(count);
  double expected = 0;
  for (int i = 0; i < count; i++) {
    input[i] = static_cast<float>(i % 17);
    expected += input[i];
  }
  float total = 0.0f;
  const cudaError_t error =
      launch("block_sum_kernel", block_sum_kernel, dim3(4), dim3(256), 0, input.data(), &total, count);
  check(error == cudaSuccess && total == static_cast<float>(expected),
        "block reduction (shuffles + shared memory + atomicAdd)",
        "got " + std::to_string(total) + " expected " + std::to_string(expected) + " " + gpu_sim_cuda_fault_detail());
}

static void check_atomics() {
  gpu_sim::EngineSettings settings = gpu_sim::Engine::instance().settings();
  settings.workers = 2;
  settings.parallel_threshold_threads = 0;
  gpu_sim::Engine::instance().configure(settings);
  int counter = 0;
  float total = 0.0f;
  __half half_total = __float2half_rn(0.0f);
  const cudaError_t error =
      launch("atomic_kernel", atomic_kernel, dim3(16), dim3(128), 0, &counter, &total, &half_total);
  check(error == cudaSuccess && counter == 2048 && total == 1024.0f && __half2float(half_total) == 2048.0f,
        "atomicAdd (int, float, __half) from 2 workers",
        "counter " + std::to_string(counter) + " total " + std::to_string(total) + " half " +
            std::to_string(__half2float(half_total)));
}

static void check_dynamic_shared() {
  std::vector<float> output(3 * 64, -1.0f);
  const cudaError_t error =
      launch("dynamic_shared_kernel", dynamic_shared_kernel, dim3(3), dim3(64), 64 * sizeof(float), output.data());
  bool good = error == cudaSuccess;
  for (int block = 0; block < 3 && good; block++) {
    for (int tid = 0; tid < 64; tid++) {
      if (output[block * 64 + tid] != static_cast<float>(63 - tid) * 2.0f + static_cast<float>(block)) good = false;
    }
  }
  check(good, "dynamic shared memory (extern __shared__)", gpu_sim_cuda_fault_detail());
}

static void check_determinism() {
  std::vector<float> input(50000);
  for (std::size_t i = 0; i < input.size(); i++) input[i] = static_cast<float>((i * 2654435761u) % 1000) / 7.0f;
  std::vector<int> rotated_a(8 * 256);
  std::vector<int> rotated_b(8 * 256);
  std::vector<int> source(8 * 256);
  for (int i = 0; i < 8 * 256; i++) source[i] = i * 31;
  launch("rotate_kernel", rotate_kernel, dim3(8), dim3(256), 0, source.data(), rotated_a.data(), 3);
  launch("rotate_kernel", rotate_kernel, dim3(8), dim3(256), 0, source.data(), rotated_b.data(), 3);
  check(rotated_a == rotated_b, "same results on every run with parallel workers (no atomics)");
}

static void check_divergence() {
  std::vector<int> output(256, 0);
  cudaError_t error = launch("early_exit_kernel", early_exit_kernel, dim3(1), dim3(128), 0, output.data());
  std::string detail = gpu_sim_cuda_fault_detail();
  check(
      error == cudaErrorLaunchFailure && contains(detail, "early_exit_kernel") && contains(detail, "__syncthreads()") &&
          contains(detail, "engine-self-test.cpp:" + std::to_string(exit_barrier_line)) && contains(detail, "(5,0,0)"),
      "thread exiting before a barrier aborts with kernel name and file:line", detail);

  error = launch("two_barriers_kernel", two_barriers_kernel, dim3(1), dim3(128), 0, output.data());
  detail = gpu_sim_cuda_fault_detail();
  check(error == cudaErrorLaunchFailure && contains(detail, "two_barriers_kernel") &&
            contains(detail, "engine-self-test.cpp:" + std::to_string(first_barrier_line)) &&
            contains(detail, "engine-self-test.cpp:" + std::to_string(second_barrier_line)),
        "threads at two different barriers abort naming both lines", detail);

  error = launch("exited_lane_shuffle_kernel", exited_lane_shuffle_kernel, dim3(1), dim3(32), 0, output.data());
  detail = gpu_sim_cuda_fault_detail();
  check(error == cudaErrorLaunchFailure && contains(detail, "exited_lane_shuffle_kernel") &&
            contains(detail, "__shfl_xor_sync"),
        "shuffle with an exited lane in the mask aborts", detail);

  error = launch("foreign_mask_kernel", foreign_mask_kernel, dim3(1), dim3(32), 0, output.data());
  detail = gpu_sim_cuda_fault_detail();
  check(error == cudaErrorLaunchFailure && contains(detail, "does not include its own lane"),
        "shuffle mask without the caller's lane aborts", detail);

  error =
      launch("collective_versus_barrier_kernel", collective_versus_barrier_kernel, dim3(1), dim3(64), 0, output.data());
  detail = gpu_sim_cuda_fault_detail();
  check(error == cudaErrorLaunchFailure && contains(detail, "collective_versus_barrier_kernel") &&
            contains(detail, "no progress") && contains(detail, "__shfl_sync") && contains(detail, "__syncthreads()"),
        "shuffle waiting for a lane parked at a barrier is reported as a deadlock", detail);

  // The engine stays usable after a fault.
  check_block_sum();
}

static int misaligned_store_line = 0;
static int misaligned_load_line = 0;
// A 16-byte store at base + offset floats: every thread writes the same values, so the result
// would look right; a GPU faults unless the address is 16-byte aligned.
__global__ void vector_store_kernel(float* base, int offset) {
  // clang-format off
  misaligned_store_line = __LINE__; *reinterpret_cast<float4*>(base + offset) = make_float4(1.0f, 2.0f, 3.0f, 4.0f);
  // clang-format on
}
__global__ void vector_load_kernel(const unsigned* base, int offset, unsigned* out) {
  // clang-format off
  misaligned_load_line = __LINE__; const uint2 value = *reinterpret_cast<const uint2*>(base + offset);
  // clang-format on
  out[threadIdx.x] = value.x + value.y;
}

static void check_vector_alignment() {
  alignas(16) float buffer[16] = {};
  cudaError_t error = launch("vector_store_kernel", vector_store_kernel, dim3(1), dim3(32), 0, buffer, 4);
  check(error == cudaSuccess && buffer[4] == 1.0f && buffer[7] == 4.0f, "an aligned float4 store runs",
        gpu_sim_cuda_fault_detail());
  error = launch("vector_store_kernel", vector_store_kernel, dim3(1), dim3(32), 0, buffer, 2);
  std::string detail = gpu_sim_cuda_fault_detail();
  check(error == cudaErrorLaunchFailure && contains(detail, "vector_store_kernel") &&
            contains(detail, "16-byte store of float4") &&
            contains(detail, "engine-self-test.cpp:" + std::to_string(misaligned_store_line)) &&
            contains(detail, "misaligned address"),
        "a float4 store through an address that is 8 but not 16-byte aligned aborts with the kernel and file:line",
        detail);
  alignas(16) unsigned words[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  unsigned sums[32] = {};
  error = launch("vector_load_kernel", vector_load_kernel, dim3(1), dim3(32), 0, words, 2, sums);
  check(error == cudaSuccess && sums[31] == 7u, "an aligned uint2 load runs", gpu_sim_cuda_fault_detail());
  error = launch("vector_load_kernel", vector_load_kernel, dim3(1), dim3(32), 0, words, 1, sums);
  detail = gpu_sim_cuda_fault_detail();
  check(error == cudaErrorLaunchFailure && contains(detail, "8-byte load of uint2") &&
            contains(detail, "engine-self-test.cpp:" + std::to_string(misaligned_load_line)),
        "a uint2 load through a 4-byte aligned address aborts with the kernel and file:line", detail);
}

static void check_launch_configuration() {
  int value = 0;
  const cudaError_t error = launch("atomic_kernel", atomic_kernel, dim3(1), dim3(2048), 0, &value,
                                   static_cast<float*>(nullptr), static_cast<__half*>(nullptr));
  check(error == cudaErrorInvalidConfiguration && contains(gpu_sim_cuda_fault_detail(), "invalid launch configuration"),
        "more than 1024 threads per block is cudaErrorInvalidConfiguration");
}

static void check_compute_capability() {
  cudaDeviceProp properties;
  cudaError_t error = cudaGetDeviceProperties(&properties, 0);
  check(error == cudaSuccess && properties.major == 9 && properties.minor == 0,
        "the simulated device reports compute capability 9.0 by default");
  const gpu_sim::cuda::SimulatedDeviceConfig original = gpu_sim::cuda::device_config();
  gpu_sim::cuda::SimulatedDeviceConfig ampere = original;
  ampere.compute_capability_major = 8;
  ampere.compute_capability_minor = 6;
  gpu_sim::cuda::configure_device(ampere);
  error = cudaGetDeviceProperties(&properties, 0);
  check(error == cudaSuccess && properties.major == 8 && properties.minor == 6,
        "cudaGetDeviceProperties reports the configured compute capability (8.6)");
  check(properties.sharedMemPerMultiprocessor == 100 * 1024 && properties.sharedMemPerBlockOptin == 99 * 1024,
        "an 8.6 device has 100 KiB of shared memory per multiprocessor, 99 KiB per block",
        std::to_string(properties.sharedMemPerMultiprocessor) + " / " +
            std::to_string(properties.sharedMemPerBlockOptin));
  std::vector<float> output(64, -1.0f);
  error = launch("dynamic_shared_kernel", dynamic_shared_kernel, dim3(1), dim3(64), 100 * 1024, output.data());
  check(error == cudaErrorInvalidConfiguration && contains(gpu_sim_cuda_fault_detail(), "shared 102400"),
        "a block asking an 8.6 device for 100 KiB of shared memory is cudaErrorInvalidConfiguration");
  gpu_sim::cuda::configure_device(original);
  error = cudaGetDeviceProperties(&properties, 0);
  check(error == cudaSuccess && properties.sharedMemPerMultiprocessor == 228 * 1024 &&
            properties.sharedMemPerBlockOptin == 227 * 1024,
        "a 9.0 device has 228 KiB of shared memory per multiprocessor, 227 KiB per block");
}

int main() {
  std::printf("fiber implementation: %s\n", gpu_sim::kFiberImplementation);
  check_barriers_and_shared_memory(1);
  check_barriers_and_shared_memory(2);
  check_shuffles();
  check_block_sum();
  check_atomics();
  check_dynamic_shared();
  check_determinism();
  check_divergence();
  check_launch_configuration();
  check_vector_alignment();
  check_compute_capability();
  std::printf("%d failures\n", self_test::failures);
  return self_test::failures == 0 ? 0 : 1;
}
