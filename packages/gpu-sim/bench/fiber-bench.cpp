// Measures what a simulated GPU thread costs: starting it, and crossing a block barrier, with
// the engine's fibers (whichever switch this binary was compiled with: assembly by default,
// ucontext with -DGPU_SIM_FIBER_UCONTEXT) and, for comparison, with one OS thread per GPU
// thread meeting at a std::barrier. Also: launches with 1 vs 2 worker threads.
// Prints one table row per measurement: name, ns per unit, unit.
#include <gpu_sim/cuda/runtime.hpp>

#include <barrier>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

using Clock = std::chrono::steady_clock;

static double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

__global__ void barrier_kernel(int rounds, int* sink) {
  int value = static_cast<int>(threadIdx.x);
  for (int round = 0; round < rounds; round++) {
    value = value * 3 + 1;
    __syncthreads();
  }
  if (value == 42) sink[0] = value;
}

__global__ void empty_kernel(int* sink) {
  if (threadIdx.x == 100000) sink[0] = 1;
}

__global__ void shuffle_kernel(int rounds, int* sink) {
  int value = static_cast<int>(threadIdx.x);
  for (int round = 0; round < rounds; round++) value += __shfl_xor_sync(0xffffffffu, value, round & 31);
  if (value == 42) sink[0] = value;
}

__global__ void work_kernel(const float* input, float* output, int count) {
  __shared__ float tile[256];
  for (int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); i < count;
       i += static_cast<int>(gridDim.x * blockDim.x)) {
    float value = input[i];
    for (int k = 0; k < 64; k++) value = value * 0.999f + 0.001f;
    tile[threadIdx.x] = value;
    __syncthreads();
    output[i] = tile[(threadIdx.x + 1) % blockDim.x];
    __syncthreads();
  }
}

static void row(const char* name, double nanoseconds, const char* unit) {
  std::printf("%-44s %10.1f ns  per %s\n", name, nanoseconds, unit);
}

static void configure(unsigned workers) {
  gpu_sim::EngineSettings settings = gpu_sim::Engine::instance().settings();
  settings.workers = workers;
  settings.parallel_threshold_threads = 0;
  gpu_sim::Engine::instance().configure(settings);
}

int main() {
  std::printf("fiber implementation: %s\n", gpu_sim::kFiberImplementation);
  int sink = 0;
  configure(1);
  const int threads = 256;

  // Thread start: a block of 256 threads that do nothing, launched many times.
  {
    const int launches = 2000;
    gpu_sim::cuda::launch_kernel("empty_kernel", empty_kernel, dim3(1), dim3(threads), 0, nullptr, &sink);
    const auto start = Clock::now();
    for (int i = 0; i < launches; i++)
      gpu_sim::cuda::launch_kernel("empty_kernel", empty_kernel, dim3(1), dim3(threads), 0, nullptr, &sink);
    row("fiber: start + finish a GPU thread", seconds_since(start) * 1e9 / (launches * threads), "thread");
  }
  // Barrier crossing: 256 threads × rounds.
  {
    const int rounds = 2000;
    const auto start = Clock::now();
    gpu_sim::cuda::launch_kernel("barrier_kernel", barrier_kernel, dim3(1), dim3(threads), 0, nullptr, rounds, &sink);
    row("fiber: __syncthreads()", seconds_since(start) * 1e9 / (static_cast<double>(rounds) * threads),
        "thread per barrier");
  }
  {
    const int rounds = 2000;
    const auto start = Clock::now();
    gpu_sim::cuda::launch_kernel("shuffle_kernel", shuffle_kernel, dim3(1), dim3(threads), 0, nullptr, rounds, &sink);
    row("fiber: __shfl_xor_sync", seconds_since(start) * 1e9 / (static_cast<double>(rounds) * threads),
        "lane per shuffle");
  }
  // Parallel blocks: 1 worker vs 2.
  {
    const int count = 1 << 20;
    std::vector<float> input(count, 1.0f);
    std::vector<float> output(count);
    for (unsigned workers : {1u, 2u}) {
      configure(workers);
      gpu_sim::cuda::launch_kernel("work_kernel", work_kernel, dim3(256), dim3(256), 0, nullptr, input.data(),
                                   output.data(), count);
      const auto start = Clock::now();
      gpu_sim::cuda::launch_kernel("work_kernel", work_kernel, dim3(256), dim3(256), 0, nullptr, input.data(),
                                   output.data(), count);
      char name[64];
      std::snprintf(name, sizeof name, "grid of 256 blocks, %u worker%s", workers, workers == 1 ? "" : "s");
      row(name, seconds_since(start) * 1e9 / count, "element");
    }
    configure(1);
  }
  // OS threads: one per GPU thread, std::barrier.
  {
    const int rounds = 200;
    std::barrier meeting(threads);
    const auto start = Clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; t++) {
      pool.emplace_back([&] {
        for (int round = 0; round < rounds; round++) meeting.arrive_and_wait();
      });
    }
    for (std::thread& thread : pool) thread.join();
    row("OS threads: std::barrier (incl. creation)",
        seconds_since(start) * 1e9 / (static_cast<double>(rounds) * threads), "thread per barrier");
  }
  {
    const int blocks = 20;
    const auto start = Clock::now();
    for (int b = 0; b < blocks; b++) {
      std::vector<std::thread> pool;
      for (int t = 0; t < threads; t++) pool.emplace_back([&] { sink += 0; });
      for (std::thread& thread : pool) thread.join();
    }
    row("OS threads: create + join", seconds_since(start) * 1e9 / (blocks * threads), "thread");
  }
  return sink == 12345 ? 1 : 0;
}
