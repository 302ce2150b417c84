// Self-test of the named barriers (gpu_sim/cuda/named_barrier.hpp) and the checked setmaxnreg
// (gpu_sim/cuda/wgmma.hpp): two warpgroups taking turns through a pair of barriers (the
// ping-pong schedule), a producer/consumer hand-off reusing one barrier over several phases, the
// whole-block form, and every misuse reported with the kernel and file:line instead of a hang —
// odd counts, bad ids, counts larger than the block, mixed counts on one phase, a barrier that
// can never complete, a bar.arrive left unmatched at the end of the block, lanes of a warp at
// different instructions; setmaxnreg out of range, per-thread counts that differ, a .dec that
// raises, an .inc the register file cannot grant and a warp that skips it. Prints "ok <name>"
// per check, or "FAIL <name>: <why>"; exits 1 on failure.
#include <gpu_sim/cuda/named_barrier.hpp>
#include <gpu_sim/cuda/runtime.hpp>
#include <gpu_sim/cuda/wgmma.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "launch_and_wait.hpp"
#include "self_test.hpp"

using self_test::check;
using self_test::contains;

using gpu_sim::ptx::bar_arrive;
using gpu_sim::ptx::bar_sync;

/** One block of `block` threads (launch_and_wait). */
template <typename... Parameters, typename... Arguments>
static cudaError_t launch(const char* name, void (*kernel)(Parameters...), dim3 block, std::size_t shared,
                          Arguments... arguments) {
  return self_test::launch_and_wait(name, kernel, dim3(1), block, shared, arguments...);
}

template <typename Kernel>
static std::string fault_of(const char* name, Kernel kernel, unsigned threads, std::size_t shared = 64) {
  const cudaError_t error = launch(name, kernel, dim3(threads), shared);
  return error == cudaSuccess ? "launched without error" : gpu_sim_cuda_fault_detail();
}

static int* device_ints(std::size_t count) {
  void* pointer = nullptr;
  cudaMalloc(&pointer, count * sizeof(int));
  std::memset(pointer, 0, count * sizeof(int));
  return static_cast<int*>(pointer);
}

// Warpgroup 0 gives back registers and leaves (as a TMA producer would); warpgroups 1 and 2 take
// registers and take turns through barriers 1 and 2 (consumer 0 first), each writing its round
// into a shared log while it holds the turn.
__global__ void pingpong_kernel(int rounds, int* order) {
  GPU_SIM_EXTERN_SHARED(int, log);
  const int warpgroup = static_cast<int>(threadIdx.x / 128);
  if (warpgroup == 0) {
    gpu_sim::ptx::setmaxnreg_dec<40>();
    return;
  }
  gpu_sim::ptx::setmaxnreg_inc<232>();
  const int consumer = warpgroup - 1;
  if (threadIdx.x == 128) log[0] = 0;
  bar_sync(3, 256);
  if (consumer == 1) bar_arrive(1, 256);
  for (int round = 0; round < rounds; round++) {
    bar_sync(1 + consumer, 256);
    if (threadIdx.x % 128 == 0) log[1 + log[0]++] = consumer * 1000 + round;
    if (consumer == 0 || round + 1 < rounds) bar_arrive(2 - consumer, 256);
  }
  bar_sync(3, 256);
  if (threadIdx.x == 128) {
    for (int i = 0; i < 2 * rounds; i++) order[i] = log[1 + i];
  }
}

// The same turns in a 256-thread block, ending with a whole-block bar.sync (count omitted).
__global__ void turns_kernel(int rounds, int* order) {
  GPU_SIM_EXTERN_SHARED(int, log);
  const int consumer = static_cast<int>(threadIdx.x / 128);
  if (threadIdx.x == 0) log[0] = 0;
  if (consumer == 1) bar_arrive(1, 256);
  for (int round = 0; round < rounds; round++) {
    bar_sync(1 + consumer, 256);
    if (threadIdx.x % 128 == 0) log[1 + log[0]++] = consumer * 1000 + round;
    if (consumer == 0 || round + 1 < rounds) bar_arrive(2 - consumer, 256);
  }
  bar_sync(3);  // whole block, count omitted
  if (threadIdx.x == 0) {
    for (int i = 0; i < 2 * rounds; i++) order[i] = log[1 + i];
  }
}

// Warpgroup 0 fills a shared slot and signals barrier 4; warpgroup 1 waits on it, reads, and
// hands the slot back through barrier 5 — three phases of each barrier.
__global__ void handoff_kernel(int* out) {
  GPU_SIM_EXTERN_SHARED(int, slot);
  const int t = static_cast<int>(threadIdx.x % 128);
  for (int round = 0; round < 3; round++) {
    if (threadIdx.x < 128) {
      if (round > 0) bar_sync(5, 256);
      slot[t] = round * 1000 + t;
      bar_arrive(4, 256);
    } else {
      bar_sync(4, 256);
      out[round * 128 + t] = slot[t];
      if (round < 2) bar_arrive(5, 256);
    }
  }
}

// Warp 1 hands a shared slot to warp 0 (bar.arrive completes barrier 6's phase) but keeps reading
// it after the hand-off — the bug class the release scheduling point exposes: warp 0, released,
// overwrites the slot before any lane of warp 1 reads it again.
__global__ void reads_after_release_kernel(int* out) {
  GPU_SIM_EXTERN_SHARED(int, slot);
  const int lane = static_cast<int>(threadIdx.x % 32);
  if (threadIdx.x < 32) {
    bar_sync(6, 64);
    slot[lane] = 2;
  } else {
    slot[lane] = 1;
    bar_arrive(6, 64);
    out[lane] = slot[lane];
  }
}

// Whole-block bar.sync (no count) orders shared writes before reads like __syncthreads.
__global__ void whole_block_kernel(int* out) {
  GPU_SIM_EXTERN_SHARED(int, values);
  const unsigned n = blockDim.x;
  values[threadIdx.x] = static_cast<int>(threadIdx.x) * 3;
  bar_sync(7);
  out[threadIdx.x] = values[(threadIdx.x + 1) % n];
}

__global__ void odd_count_kernel() { bar_sync(1, 48); }
__global__ void bad_id_kernel() { bar_sync(16, 64); }
__global__ void too_many_kernel() { bar_sync(1, 128); }
__global__ void arrive_without_count_kernel() { bar_arrive(1, 0); }

// Warps 0–1 expect 128 threads, warps 2–3 pass 64 on the same phase.
__global__ void mixed_counts_kernel() {
  if (threadIdx.x < 64)
    bar_sync(1, 128);
  else
    bar_sync(1, 64);
}

// Warpgroup 1 waits for 256 threads; warpgroup 0 never arrives.
__global__ void never_completes_kernel() {
  if (threadIdx.x >= 128) bar_sync(2, 256);
}

// Warpgroup 0 signals barrier 3; nobody ever syncs on it.
__global__ void dangling_arrive_kernel() {
  if (threadIdx.x < 128) bar_arrive(3, 256);
}

// Half of a warp syncs, the other half arrives.
__global__ void split_warp_kernel() {
  if (threadIdx.x < 16)
    bar_sync(1, 32);
  else
    bar_arrive(1, 32);
}

__global__ void setmaxnreg_range_kernel() {
  gpu_sim::ptx::wgmma_detail::setmaxnreg(true, 100, std::source_location::current());
}

__global__ void setmaxnreg_uneven_kernel() {
  gpu_sim::ptx::wgmma_detail::setmaxnreg(true, threadIdx.x >= 96 ? 200 : 232, std::source_location::current());
}

__global__ void setmaxnreg_raise_kernel() {
  gpu_sim::ptx::setmaxnreg_dec<40>();
  gpu_sim::ptx::setmaxnreg_dec<64>();
}

// Three warpgroups each ask for 240 registers: 3 × 240 × 128 > 65,536.
__global__ void setmaxnreg_greedy_kernel() { gpu_sim::ptx::setmaxnreg_inc<240>(); }

// Warp 3 skips the warpgroup-collective setmaxnreg.
__global__ void setmaxnreg_skip_kernel() {
  if (threadIdx.x < 96) gpu_sim::ptx::setmaxnreg_inc<232>();
}

int main() {
  {
    const int rounds = 5;
    int* order = device_ints(2 * rounds);
    const cudaError_t error = launch("turns_kernel", turns_kernel, dim3(256), 64, rounds, order);
    std::string detail = error == cudaSuccess ? "" : gpu_sim_cuda_fault_detail();
    for (int i = 0; i < 2 * rounds && detail.empty(); i++) {
      const int expected = (i % 2) * 1000 + i / 2;
      if (order[i] != expected)
        detail =
            "turn " + std::to_string(i) + " was " + std::to_string(order[i]) + ", expected " + std::to_string(expected);
    }
    check(detail.empty(), "two warpgroups alternate strictly through bar.sync / bar.arrive (ping-pong turns)", detail);
  }
  {
    const int rounds = 4;
    int* order = device_ints(2 * rounds);
    const cudaError_t error = launch("pingpong_kernel", pingpong_kernel, dim3(384), 64, rounds, order);
    std::string detail = error == cudaSuccess ? "" : gpu_sim_cuda_fault_detail();
    for (int i = 0; i < 2 * rounds && detail.empty(); i++) {
      if (order[i] != (i % 2) * 1000 + i / 2) detail = "turn " + std::to_string(i) + " was " + std::to_string(order[i]);
    }
    check(detail.empty(), "setmaxnreg dec 40 / inc 232 × 2 passes its checks beside the ping-pong turns", detail);
  }
  {
    int* out = device_ints(32);
    const cudaError_t error =
        launch("reads_after_release_kernel", reads_after_release_kernel, dim3(64), 32 * sizeof(int), out);
    std::string detail = error == cudaSuccess ? "" : gpu_sim_cuda_fault_detail();
    for (int lane = 0; lane < 32 && detail.empty(); lane++) {
      if (out[lane] != 2)
        detail = "lane " + std::to_string(lane) + " of the releasing warp read " + std::to_string(out[lane]) +
                 " (its own value) after the hand-off: the released warp did not run first";
    }
    check(detail.empty(),
          "a bar.arrive that releases a waiting warp is a scheduling point: the released warp runs before every lane "
          "of the releasing one",
          detail);
  }
  {
    int* out = device_ints(3 * 128);
    const cudaError_t error = launch("handoff_kernel", handoff_kernel, dim3(256), 128 * sizeof(int), out);
    std::string detail = error == cudaSuccess ? "" : gpu_sim_cuda_fault_detail();
    for (int i = 0; i < 3 * 128 && detail.empty(); i++) {
      const int expected = (i / 128) * 1000 + i % 128;
      if (out[i] != expected)
        detail =
            "out[" + std::to_string(i) + "] = " + std::to_string(out[i]) + ", expected " + std::to_string(expected);
    }
    check(detail.empty(), "a producer/consumer hand-off reuses barriers 4 and 5 over three phases", detail);
  }
  {
    int* out = device_ints(96);
    const cudaError_t error = launch("whole_block_kernel", whole_block_kernel, dim3(96), 96 * sizeof(int), out);
    std::string detail = error == cudaSuccess ? "" : gpu_sim_cuda_fault_detail();
    for (int i = 0; i < 96 && detail.empty(); i++) {
      if (out[i] != ((i + 1) % 96) * 3) detail = "out[" + std::to_string(i) + "] = " + std::to_string(out[i]);
    }
    check(detail.empty(), "bar.sync without a count waits for the whole block", detail);
  }
  {
    const std::string detail = fault_of("odd_count_kernel", odd_count_kernel, 64);
    check(contains(detail, "kernel 'odd_count_kernel'") && contains(detail, "bar.sync 1, 48 at sync-self-test.cpp:") &&
              contains(detail, "not a multiple of the warp size"),
          "a thread count that is not a multiple of 32 aborts naming the kernel and file:line", detail);
  }
  {
    const std::string detail = fault_of("bad_id_kernel", bad_id_kernel, 64);
    check(contains(detail, "bar.sync 16, 64 at sync-self-test.cpp:") && contains(detail, "barriers 0 … 15"),
          "a barrier id past 15 aborts", detail);
  }
  {
    const std::string detail = fault_of("too_many_kernel", too_many_kernel, 64);
    check(contains(detail, "expects more threads than the block has (64") && contains(detail, "never complete"),
          "a count larger than the block aborts: the barrier could never complete", detail);
  }
  {
    const std::string detail = fault_of("arrive_without_count_kernel", arrive_without_count_kernel, 32);
    check(contains(detail, "bar.arrive 1, 0 at sync-self-test.cpp:") && contains(detail, "non-zero thread count"),
          "bar.arrive without a thread count aborts", detail);
  }
  {
    const std::string detail = fault_of("mixed_counts_kernel", mixed_counts_kernel, 128);
    check(contains(detail, "kernel 'mixed_counts_kernel'") &&
              contains(detail, "bar.sync 1, 64 at sync-self-test.cpp:") && contains(detail, "mixes thread counts") &&
              contains(detail, "64 in bar.sync at sync-self-test.cpp:"),
          "arrivals with different counts on one phase abort naming both sites", detail);
  }
  {
    const std::string detail = fault_of("never_completes_kernel", never_completes_kernel, 256);
    check(contains(detail, "kernel 'never_completes_kernel'") &&
              contains(detail, "128 threads wait in bar.sync 2, 256 at sync-self-test.cpp:") &&
              contains(detail,
                       "named barrier 2: 128 of its 256 threads arrived (128 in bar.sync at sync-self-test.cpp:") &&
              contains(detail, "no other thread can arrive"),
          "a bar.sync that can never complete aborts naming the kernel, the wait and the arrivals", detail);
  }
  {
    const std::string detail = fault_of("dangling_arrive_kernel", dangling_arrive_kernel, 256);
    check(contains(detail, "kernel 'dangling_arrive_kernel'") &&
              contains(detail,
                       "ends with named barrier 3: 128 of its 256 threads arrived (128 in bar.arrive at "
                       "sync-self-test.cpp:") &&
              contains(detail, "never completed"),
          "a block ending with an unmatched bar.arrive aborts naming the arrive", detail);
  }
  {
    const std::string detail = fault_of("split_warp_kernel", split_warp_kernel, 32);
    check(contains(detail, "kernel 'split_warp_kernel'") &&
              contains(detail, "bar.arrive 1, 32 at sync-self-test.cpp:") &&
              contains(detail, "wait in bar.sync 1, 32 at sync-self-test.cpp:") && contains(detail, ".aligned"),
          "lanes of one warp at different barrier instructions abort naming both", detail);
  }
  {
    const std::string detail = fault_of("setmaxnreg_range_kernel", setmaxnreg_range_kernel, 128);
    check(contains(detail, "setmaxnreg.inc at sync-self-test.cpp:") && contains(detail, "requests 100 registers") &&
              contains(detail, "24 … 256 in steps of 8"),
          "setmaxnreg outside 24 … 256 or not a multiple of 8 aborts", detail);
  }
  {
    const std::string detail = fault_of("setmaxnreg_uneven_kernel", setmaxnreg_uneven_kernel, 128);
    check(contains(detail, "kernel 'setmaxnreg_uneven_kernel'") && contains(detail, "requests") &&
              contains(detail, "every thread of the warpgroup passes the same count"),
          "threads of a warpgroup passing different setmaxnreg counts abort", detail);
  }
  {
    const std::string detail = fault_of("setmaxnreg_raise_kernel", setmaxnreg_raise_kernel, 128);
    check(contains(detail, "setmaxnreg.dec at sync-self-test.cpp:") &&
              contains(detail, "raises its warpgroup's registers from 40 to 64"),
          "a setmaxnreg.dec that raises the count aborts", detail);
  }
  {
    const std::string detail = fault_of("setmaxnreg_greedy_kernel", setmaxnreg_greedy_kernel, 384);
    check(contains(detail, "kernel 'setmaxnreg_greedy_kernel'") &&
              contains(detail, "92160 of the multiprocessor's 65536") && contains(detail, "wait forever"),
          "a setmaxnreg.inc the register file cannot grant aborts", detail);
  }
  {
    const std::string detail = fault_of("setmaxnreg_skip_kernel", setmaxnreg_skip_kernel, 128);
    check(contains(detail, "kernel 'setmaxnreg_skip_kernel'") &&
              contains(detail, "96 threads wait in setmaxnreg.inc at sync-self-test.cpp:"),
          "a warp that skips the warpgroup-collective setmaxnreg aborts naming the kernel and file:line", detail);
  }
  std::printf("%d failures\n", self_test::failures);
  return self_test::failures == 0 ? 0 : 1;
}
