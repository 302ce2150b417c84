// Self-test of the opt-in guard pages (gpu_sim/cuda/guard_pages.hpp), run with GPU_SIM_GUARD_PAGES
// set. `in-range`: kernels read and write every element of guarded allocations (several sizes,
// multiple-of-256 and not), the red zone still catches a write just past the end, cudaFree unmaps
// and a host fault outside a kernel is not the handler's; prints "ok <name>" per check, "all ok"
// last. `past-end` N: a kernel reads N floats past the end of a 1024-float allocation (beyond its
// red zone and rounding, within the 64 KiB guard); `before-start` N: N floats before its start
// (beyond its first page's slack, within the guard before it). Either must stop the process with
// the guard's message naming the kernel, block and thread (the test reads stderr).
#include <gpu_sim/cuda/runtime.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <string>

#include <sys/mman.h>
#include <unistd.h>

#include "launch_and_wait.hpp"
#include "self_test.hpp"

using self_test::check;
using self_test::contains;

// out[i] = in[i] + 1 for i < count (one thread per element).
__global__ void add_one_kernel(const float* in, float* out, unsigned count) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) out[i] = in[i] + 1.0f;
}

// Reads in[offset] into out[0]: with offset outside the allocation, a read a guard page stops.
__global__ void read_at_kernel(const float* in, float* out, long offset) {
  if (threadIdx.x == 3) out[0] = in[offset];
}

// Writes out[count] (one element past the end): the red zone catches it at cudaFree.
__global__ void write_past_end_kernel(float* out, unsigned count) {
  if (threadIdx.x == 0) out[count] = 1.0f;
}

static float* device_floats(unsigned count) {
  void* pointer = nullptr;
  return cudaMalloc(&pointer, count * sizeof(float)) == cudaSuccess ? static_cast<float*>(pointer) : nullptr;
}

static int in_range() {
  bool every_size_right = true;
  std::string detail;
  for (unsigned count : {1u, 7u, 64u, 1000u, 1024u, 4097u}) {
    float* in = device_floats(count);
    float* out = device_floats(count);
    if (in == nullptr || out == nullptr) {
      detail = "cudaMalloc failed for " + std::to_string(count) + " floats";
      every_size_right = false;
      break;
    }
    for (unsigned i = 0; i < count; i++) in[i] = static_cast<float>(i);
    const cudaError_t error = self_test::launch_and_wait("add_one_kernel", add_one_kernel, dim3((count + 127) / 128),
                                                         dim3(128), 0, static_cast<const float*>(in), out, count);
    for (unsigned i = 0; error == cudaSuccess && i < count; i++)
      if (out[i] != static_cast<float>(i) + 1.0f) error == cudaSuccess ? (void)(detail = "wrong value") : (void)0;
    if (error != cudaSuccess || !detail.empty()) {
      every_size_right = false;
      if (detail.empty()) detail = gpu_sim_cuda_fault_detail();
    }
    if (cudaFree(in) != cudaSuccess || cudaFree(out) != cudaSuccess) {
      every_size_right = false;
      detail = "cudaFree failed";
    }
  }
  check(every_size_right, "kernels read and write whole guarded allocations of 1 to 4097 floats", detail);

  float* last = device_floats(1024);
  const cudaError_t launched =
      self_test::launch_and_wait("write_past_end_kernel", write_past_end_kernel, dim3(1), dim3(32), 0, last, 1024u);
  const cudaError_t freed = cudaFree(last);
  check(launched == cudaErrorIllegalAddress && freed == cudaErrorIllegalAddress &&
            contains(gpu_sim_cuda_fault_detail(), "wrote 0 bytes past the end of a 4096-byte device allocation"),
        "a write just past the end still damages the red zone, found at the synchronisation and at cudaFree",
        gpu_sim_cuda_fault_detail());

  float* reused = device_floats(16);
  check(reused != nullptr && cudaFree(reused) == cudaSuccess, "a freed guarded allocation is unmapped and freed once");
  std::printf("all ok\n");
  return self_test::failures == 0 ? 0 : 1;
}

// Reads element `offset` of a 1024-float allocation, outside it: the process must stop before the message below.
// Before its start, the 64 KiB in front of its first page are first offered to a readable neighbour
// mapping (taken only where nothing is mapped), so that the read faults only by the allocation's own guard.
static int read_outside(long offset) {
  float* out = device_floats(1);  // first: mappings grow downwards, so `in` does not start right above out's guard
  float* in = device_floats(1024);
#ifdef MAP_FIXED_NOREPLACE  // Linux ≥ 4.17; elsewhere whatever precedes the allocation decides
  if (offset < 0) {
    const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    const std::uintptr_t first_page = reinterpret_cast<std::uintptr_t>(in) / page * page;
    void* neighbour = ::mmap(reinterpret_cast<void*>(first_page - (std::uintptr_t{64} << 10)), std::size_t{64} << 10,
                             PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    std::printf("neighbour %s\n", neighbour == MAP_FAILED ? "refused (the range is mapped)" : "mapped");
    std::fflush(stdout);
  }
#endif
  self_test::launch_and_wait("read_at_kernel", read_at_kernel, dim3(2), dim3(32), 0, static_cast<const float*>(in), out,
                             offset);
  std::printf("FAIL the read at element %ld did not stop the process\n", offset);
  return 1;
}

int main(int argc, char** argv) {
  if (argc > 2 && std::strcmp(argv[1], "past-end") == 0) return read_outside(1024 + std::strtol(argv[2], nullptr, 10));
  if (argc > 2 && std::strcmp(argv[1], "before-start") == 0) return read_outside(-std::strtol(argv[2], nullptr, 10));
  return in_range();
}
