// gpu_sim/cuda/wgmma.hpp — sm_90a warpgroup matrix multiply-accumulate (`wgmma`) in the
// simulator, with operands read through shared-memory matrix descriptors exactly as the PTX ISA
// lays them out, and the asynchronous semantics the device does not check.
//
//  - wgmma_mma_async<N, Type>(d, desc_a, desc_b, scale_d, trans_a, trans_b):
//    wgmma.mma_async.sync.aligned.m64nNk16.f32.{bf16,f16}.{bf16,f16} with A and B in shared memory.
//    D (64×N, f32) = A (64×16) · B (16×N) + (scale_d ? D : 0). Thread t of the warpgroup (warp
//    w = t / 32, g = lane / 4, q = lane % 4) holds, for j = 0 … N/8 − 1:
//      d[4j + 0..1] = D(16w + g, 8j + 2q .. +1), d[4j + 2..3] = D(16w + g + 8, 8j + 2q .. +1).
//    Descriptors (64-bit): bits 0–13 start address >> 4, 16–29 leading-dimension byte offset
//    (LBO) >> 4, 32–45 stride-dimension byte offset (SBO) >> 4, 49–51 base offset (must be 0
//    here), 62–63 swizzle (0 none, 1 128B, 2 64B, 3 32B). trans 0 = K-major (A row-major m×k,
//    B "column-major" n×k), 1 = MN-major. Element (r, k) of an operand with r along M or N is at
//    (T = 8 16-bit elements per 16 bytes, S = swizzle span in bytes, E = S / 2):
//      K-major,  no swizzle: start + (r%8)·16 + (r/8)·SBO + (k%8)·2 + (k/8)·LBO
//      K-major,  swizzled:   start + (r%8)·S  + (r/8)·SBO + k·2
//      MN-major, no swizzle: start + (r%8)·2  + (r/8)·SBO + (k%8)·16 + (k/8)·LBO
//      MN-major, swizzled:   start + (r%E)·2  + (r/E)·LBO + (k%8)·S  + (k/8)·SBO
//    then the swizzle of tma.hpp on that absolute shared address (PTX's canonical layouts,
//    Swizzle<1|2|3,4,3>). Warpgroup-collective: all 128 threads of 4 consecutive warps starting
//    at a warp index divisible by 4 must arrive at the same site with the same descriptors and
//    flags; a thread that never arrives leaves the block unable to progress, reported with the
//    kernel and file:line. The operation is queued: the accumulators are NaN until the
//    wgmma.wait_group that covers it (reading them early shows), the shared operands are read
//    then (overwriting them before the wait shows), and an operand byte still awaited from a
//    cp.async.bulk.tensor (tma.hpp) aborts the launch naming both sites. Sums in f32, k ascending
//    from D (products of 16-bit inputs are exact).
//  - wgmma_mma_async_rs<N, Type>(d, a, desc_b, scale_d, trans_b): the same with A from registers:
//    thread t holds a[0..3] (.b32, two 16-bit elements each, the lower half first):
//      a[0] = A(16w + g, 2q .. +1),     a[1] = A(16w + g + 8, 2q .. +1),
//      a[2] = A(16w + g, 2q + 8 .. +9), a[3] = A(16w + g + 8, 2q + 8 .. +9)
//    (the m16n8k16 A fragment per warp, warp w owning rows 16w …; so an m64nNk16 accumulator's
//    columns 16s … 16s + 15, rounded pairwise, are the A of k16 step s). The registers are read
//    at issue, and must stay unchanged until the wait_group that covers the operation: a thread
//    that changes them earlier aborts the launch naming the site.
//  - wgmma_fence(): ordering with no effect in the simulator (the queue above already orders).
//    fence_proxy_async() (async_proxy.hpp): an operand byte that generic-proxy stores wrote with no
//    fence.proxy.async in the block since aborts the launch at issue, naming the byte.
//  - setmaxnreg_inc/dec<N>(): register reallocation, no effect on execution but checked: N in
//    24 … 256 in steps of 8, warpgroup-collective like wgmma (all 128 threads at the same site with
//    the same N), .inc never lowers and .dec never raises the warpgroup's last count, and an .inc
//    that the block's register file (65,536) cannot grant, counting every other warpgroup at its
//    last count (24 when not set yet), aborts — on the device it would wait forever.
//  - wgmma_commit_group(): the warpgroup's queued operations become one group.
//  - wgmma_wait_group(n): the oldest committed groups are performed until at most n remain.
#pragma once

#include <cmath>
#include <cstdint>
#include <deque>
#include <limits>
#include <memory>
#include <source_location>
#include <string>
#include <vector>

#include "mma_sync.hpp"
#include "tma.hpp"

namespace gpu_sim::ptx {

inline constexpr unsigned kWarpgroupSize = 128;

namespace wgmma_detail {

/** One queued wgmma.mma_async. */
struct Operation {
  std::uint64_t desc_a = 0;
  std::uint64_t desc_b = 0;
  bool trans_a = false;
  bool trans_b = false;
  bool scale_d = false;
  int n = 0;
  MmaInput type = MmaInput::kBF16;
  std::source_location site;
  /** The block's asynchronous copies issued before this operation (mbarrier.hpp copies_issued). */
  std::uint64_t copies_before = 0;
  /** A from registers (wgmma_mma_async_rs): its 64 × 16 values as read at issue, and each thread's registers with their values then. */
  bool a_in_registers = false;
  std::vector<float> a_values;
  const std::uint32_t* a_registers[kWarpgroupSize] = {};
  std::vector<std::uint32_t> a_issued;
  /** Each thread's accumulator registers (n / 2 floats). */
  float* d[kWarpgroupSize] = {};
  /** The input D: captured at issue, or the output of the earlier queued operation on the same registers. */
  std::shared_ptr<std::vector<float>> input;
  /** What this operation writes (later queued operations on the same registers read it: the registers hold NaN meanwhile). */
  std::shared_ptr<std::vector<float>> output;
};

/** What one thread brings to a warpgroup meeting. */
struct Arrival {
  const void* argument = nullptr;
};

/** One warpgroup's meeting point and queued operations. */
struct Warpgroup {
  const char* name = nullptr;
  std::source_location site;
  unsigned arrived = 0;
  std::uint64_t generation = 0;
  const void* arguments[kWarpgroupSize] = {};
  std::vector<unsigned> parked;
  std::vector<Operation> open;
  std::deque<std::vector<Operation>> committed;
  /** Registers per thread from the warpgroup's last setmaxnreg (0: the launch's allocation, not known). */
  unsigned registers = 0;
};

struct BlockWarpgroups {
  BlockCursor cursor;
  std::vector<Warpgroup> groups;
};

inline thread_local BlockWarpgroups tls_block_warpgroups;

inline Warpgroup& warpgroup(const char* name, const std::source_location& site) {
  BlockRunner& runner = current_runner();
  BlockWarpgroups& state = tls_block_warpgroups;
  const Dim3& block = runner.shape().block;
  const unsigned threads = block.x * block.y * block.z;
  if (state.cursor.moved()) {
    state.groups.assign((threads + kWarpgroupSize - 1) / kWarpgroupSize, Warpgroup{});
  }
  const unsigned index = current_thread().linear / kWarpgroupSize;
  if ((index + 1) * kWarpgroupSize > threads) {
    mbarrier_detail::fail(name, site,
                          "runs in a partial warpgroup: the block has " + std::to_string(threads) +
                              " threads, and a warpgroup is 4 whole warps (128 threads)");
  }
  return state.groups[index];
}

/** Every thread of the warpgroup arrives with `argument`; the last one runs `last(arguments)`, then all continue. */
template <typename Last>
void meet(const char* name, const std::source_location& site, const void* argument, Last last) {
  Warpgroup& group = warpgroup(name, site);
  if (group.arrived > 0 && (group.name != name || group.site.line() != site.line() ||
                            std::strcmp(group.site.file_name(), site.file_name()) != 0)) {
    mbarrier_detail::fail(name, site,
                          "while " + std::to_string(group.arrived) + " threads of its warpgroup wait in " + group.name +
                              " at " + format_site(group.site) +
                              ": the 128 threads of a warpgroup must execute the same warpgroup instruction");
  }
  group.name = name;
  group.site = site;
  group.arguments[current_thread().linear % kWarpgroupSize] = argument;
  if (++group.arrived < kWarpgroupSize) {
    const std::uint64_t generation = group.generation;
    group.parked.push_back(current_thread().linear);
    while (group.generation == generation) current_runner().park(name, site);
    return;
  }
  group.arrived = 0;
  last(group.arguments);
  group.generation++;
  for (unsigned waiter : group.parked) current_runner().wake(waiter);
  group.parked.clear();
}

/** Shared-space byte address of element (r, k) of an operand (see the file header). */
inline std::uint64_t element_address(std::uint64_t descriptor, bool mn_major, int r, int k,
                                     const std::source_location& site) {
  const std::uint64_t start = (descriptor & 0x3fffu) << 4;
  const std::uint64_t lbo = ((descriptor >> 16) & 0x3fffu) << 4;
  const std::uint64_t sbo = ((descriptor >> 32) & 0x3fffu) << 4;
  const unsigned base_offset = static_cast<unsigned>((descriptor >> 49) & 7u);
  const unsigned mode = static_cast<unsigned>(descriptor >> 62);
  if (base_offset != 0)
    mbarrier_detail::fail("wgmma.mma_async", site,
                          "uses a matrix descriptor with a non-zero base offset, which is not simulated");
  const cuda::TensorMapSwizzle swizzle = mode == 1   ? cuda::TensorMapSwizzle::k128B
                                         : mode == 2 ? cuda::TensorMapSwizzle::k64B
                                         : mode == 3 ? cuda::TensorMapSwizzle::k32B
                                                     : cuda::TensorMapSwizzle::kNone;
  const std::uint64_t span = cuda::swizzle_span(swizzle);
  const auto ur = static_cast<std::uint64_t>(r);
  const auto uk = static_cast<std::uint64_t>(k);
  std::uint64_t address;
  if (!mn_major) {
    address = swizzle == cuda::TensorMapSwizzle::kNone
                  ? start + (ur % 8) * 16 + (ur / 8) * sbo + (uk % 8) * 2 + (uk / 8) * lbo
                  : start + (ur % 8) * span + (ur / 8) * sbo + uk * 2;
  } else {
    const std::uint64_t per_row = span / 2;
    address = swizzle == cuda::TensorMapSwizzle::kNone
                  ? start + (ur % 8) * 2 + (ur / 8) * sbo + (uk % 8) * 16 + (uk / 8) * lbo
                  : start + (ur % per_row) * 2 + (ur / per_row) * lbo + (uk % 8) * span + (uk / 8) * sbo;
  }
  return cuda::swizzle_address(address, swizzle);
}

/**
 * Reads an operand (rows × 16) into values[r][k]; faults on bytes a bulk tensor copy has not
 * delivered and, at issue, on bytes generic stores wrote with no fence.proxy.async (async_proxy.hpp).
 */
inline void read_operand(const Operation& op, bool is_a, int rows, std::vector<float>& values, bool at_issue) {
  values.assign(static_cast<std::size_t>(rows) * 16, 0.0f);
  const std::uint64_t descriptor = is_a ? op.desc_a : op.desc_b;
  const bool mn_major = is_a ? op.trans_a : op.trans_b;
  for (int r = 0; r < rows; r++) {
    for (int k = 0; k < 16; k++) {
      const std::uint64_t address = element_address(descriptor, mn_major, r, k, op.site);
      const unsigned char* pointer = shared_pointer(address, 2, "wgmma.mma_async", op.site);
      if (const mbarrier_detail::InFlightCopy* copy = in_flight_copy(pointer, 2)) {
        const std::string what = std::string("reads ") + (is_a ? "A" : "B") + " element (" + std::to_string(r) + ", " +
                                 std::to_string(k) + ") at shared address " + std::to_string(address) +
                                 " that the cp.async.bulk.tensor issued at " + format_site(copy->site);
        // A copy issued after this wgmma overwrites what it still reads: its buffer was released too early.
        mbarrier_detail::fail(
            "wgmma.mma_async", op.site,
            copy->order >= op.copies_before
                ? what +
                      " after this wgmma overwrites before the wgmma.wait_group that completes it "
                      "(the buffer was released to the copy before the wgmma reading it completed)"
                : what + " has not delivered yet (wait on its mbarrier phase before issuing the wgmma)");
      }
      if (at_issue) async_proxy_reads(pointer, 2, "wgmma.mma_async", op.site);
      std::uint16_t bits;
      std::memcpy(&bits, pointer, 2);
      values[static_cast<std::size_t>(r) * 16 + k] =
          op.type == MmaInput::kF16 ? f16_bits_to_f32(bits) : bf16_bits_to_f32(bits);
    }
  }
}

/** Performs one queued operation: D = A·B (+ D) into every thread's registers. */
inline void perform(Operation& op) {
  std::vector<float> a;
  std::vector<float> b;
  if (op.a_in_registers) {
    for (unsigned t = 0; t < kWarpgroupSize; t++) {
      for (int i = 0; i < 4; i++) {
        if (op.a_registers[t][i] != op.a_issued[t * 4 + i]) {
          mbarrier_detail::fail("wgmma.mma_async", op.site,
                                "has its A registers changed by thread " + std::to_string(t) +
                                    " before the wgmma.wait_group that completes it (they are read asynchronously)");
        }
      }
    }
    a = op.a_values;
  } else {
    read_operand(op, true, 64, a, false);
  }
  read_operand(op, false, op.n, b, false);
  const int per_thread = op.n / 2;
  for (unsigned t = 0; t < kWarpgroupSize; t++) {
    const int warp = static_cast<int>(t / 32);
    const int g = static_cast<int>(t % 32) / 4;
    const int q = static_cast<int>(t % 4);
    for (int i = 0; i < per_thread; i++) {
      const int j = i / 4;
      const int row = 16 * warp + g + ((i & 2) ? 8 : 0);
      const int column = 8 * j + 2 * q + (i & 1);
      const std::size_t slot = static_cast<std::size_t>(t) * per_thread + i;
      float total = op.scale_d ? (*op.input)[slot] : 0.0f;
      for (int k = 0; k < 16; k++)
        total += a[static_cast<std::size_t>(row) * 16 + k] * b[static_cast<std::size_t>(column) * 16 + k];
      (*op.output)[slot] = total;
      op.d[t][i] = total;
    }
  }
}

/** The arguments one thread gives wgmma.mma_async. */
struct MmaArguments {
  float* d;
  /** A's registers (wgmma_mma_async_rs), or nullptr for A from shared memory. */
  const std::uint32_t* a;
  std::uint64_t desc_a;
  std::uint64_t desc_b;
  bool scale_d;
  bool trans_a;
  bool trans_b;
};

}  // namespace wgmma_detail

namespace wgmma_detail {

/** The 64 × 16 A of an operation from each thread's registers (see the file header). */
inline std::vector<float> gather_register_a(const void* const* all, MmaInput type) {
  std::vector<float> values(64 * 16, 0.0f);
  for (unsigned t = 0; t < kWarpgroupSize; t++) {
    const std::uint32_t* a = static_cast<const MmaArguments*>(all[t])->a;
    const int warp = static_cast<int>(t / 32);
    const int g = static_cast<int>(t % 32) / 4;
    const int q = static_cast<int>(t % 4);
    for (int i = 0; i < 4; i++) {
      const int row = 16 * warp + g + ((i & 1) ? 8 : 0);
      const int column = 2 * q + ((i & 2) ? 8 : 0);
      for (int half = 0; half < 2; half++) {
        const auto bits = static_cast<std::uint16_t>(a[i] >> (16 * half));
        values[static_cast<std::size_t>(row) * 16 + column + half] =
            type == MmaInput::kF16 ? f16_bits_to_f32(bits) : bf16_bits_to_f32(bits);
      }
    }
  }
  return values;
}

/** Queues one wgmma.mma_async of the warpgroup (A from shared memory, or from registers when `a` is given). */
template <int N, MmaInput Type>
void issue(float (&d)[N / 2], const std::uint32_t* a, std::uint64_t desc_a, std::uint64_t desc_b, bool scale_d,
           bool trans_a, bool trans_b, const std::source_location& site) {
  static_assert(N >= 8 && N <= 256 && N % 8 == 0, "wgmma m64nNk16 takes N = 8, 16, …, 256");
  const MmaArguments arguments{d, a, desc_a, desc_b, scale_d, trans_a, trans_b};
  meet("wgmma.mma_async", site, &arguments, [&](const void* const* all) {
    Warpgroup& group = warpgroup("wgmma.mma_async", site);
    Operation op;
    op.desc_a = desc_a;
    op.desc_b = desc_b;
    op.trans_a = trans_a;
    op.trans_b = trans_b;
    op.scale_d = scale_d;
    op.n = N;
    op.type = Type;
    op.site = site;
    op.copies_before = copies_issued();
    for (unsigned t = 0; t < kWarpgroupSize; t++) {
      const auto* mine = static_cast<const MmaArguments*>(all[t]);
      if (mine->desc_a != desc_a || mine->desc_b != desc_b || mine->scale_d != scale_d || mine->trans_a != trans_a ||
          mine->trans_b != trans_b || (mine->a == nullptr) != (a == nullptr)) {
        mbarrier_detail::fail("wgmma.mma_async", site,
                              "gets different descriptors or flags from thread " + std::to_string(t) +
                                  " of the warpgroup: they must be warpgroup-uniform");
      }
      op.d[t] = mine->d;
    }
    // Operands must be resident when the instruction issues.
    std::vector<float> scratch;
    if (a != nullptr) {
      op.a_in_registers = true;
      op.a_values = gather_register_a(all, Type);
      op.a_issued.resize(kWarpgroupSize * 4);
      for (unsigned t = 0; t < kWarpgroupSize; t++) {
        op.a_registers[t] = static_cast<const MmaArguments*>(all[t])->a;
        for (int i = 0; i < 4; i++) op.a_issued[t * 4 + i] = op.a_registers[t][i];
      }
    } else {
      read_operand(op, true, 64, scratch, true);
    }
    read_operand(op, false, N, scratch, true);
    // The input is the latest queued operation's output on the same registers, else the registers now.
    const std::size_t slots = static_cast<std::size_t>(kWarpgroupSize) * (N / 2);
    for (const auto& committed : group.committed) {
      for (const auto& queued : committed) {
        if (queued.d[0] == op.d[0]) op.input = queued.output;
      }
    }
    for (const auto& queued : group.open) {
      if (queued.d[0] == op.d[0]) op.input = queued.output;
    }
    if (!op.input) {
      op.input = std::make_shared<std::vector<float>>(slots);
      for (unsigned t = 0; t < kWarpgroupSize; t++) {
        for (int i = 0; i < N / 2; i++) (*op.input)[static_cast<std::size_t>(t) * (N / 2) + i] = op.d[t][i];
      }
    }
    op.output = std::make_shared<std::vector<float>>(slots);
    for (unsigned t = 0; t < kWarpgroupSize; t++) {
      for (int i = 0; i < N / 2; i++) op.d[t][i] = std::numeric_limits<float>::quiet_NaN();
    }
    group.open.push_back(std::move(op));
  });
}

}  // namespace wgmma_detail

/** wgmma.mma_async m64nNk16 with f32 accumulators, A and B from shared memory (see the file header). */
template <int N, MmaInput Type>
void wgmma_mma_async(float (&d)[N / 2], std::uint64_t desc_a, std::uint64_t desc_b, bool scale_d, bool trans_a,
                     bool trans_b, std::source_location site = std::source_location::current()) {
  wgmma_detail::issue<N, Type>(d, nullptr, desc_a, desc_b, scale_d, trans_a, trans_b, site);
}

/** wgmma.mma_async m64nNk16 with f32 accumulators, A from registers (the fragment of the file header), B from shared memory. */
template <int N, MmaInput Type>
void wgmma_mma_async_rs(float (&d)[N / 2], const std::uint32_t (&a)[4], std::uint64_t desc_b, bool scale_d,
                        bool trans_b, std::source_location site = std::source_location::current()) {
  wgmma_detail::issue<N, Type>(d, a, 0, desc_b, scale_d, false, trans_b, site);
}

/** wgmma.commit_group.sync.aligned: the warpgroup's queued operations become one group. */
inline void wgmma_commit_group(std::source_location site = std::source_location::current()) {
  wgmma_detail::meet("wgmma.commit_group", site, nullptr, [&](const void* const*) {
    wgmma_detail::Warpgroup& group = wgmma_detail::warpgroup("wgmma.commit_group", site);
    group.committed.push_back(std::move(group.open));
    group.open.clear();
  });
}

/** wgmma.wait_group.sync.aligned n: performs the oldest committed groups until at most `n` remain. */
inline void wgmma_wait_group(unsigned n, std::source_location site = std::source_location::current()) {
  wgmma_detail::meet("wgmma.wait_group", site, nullptr, [&](const void* const*) {
    wgmma_detail::Warpgroup& group = wgmma_detail::warpgroup("wgmma.wait_group", site);
    while (group.committed.size() > n) {
      for (wgmma_detail::Operation& op : group.committed.front()) wgmma_detail::perform(op);
      group.committed.pop_front();
    }
  });
}

/** wgmma.fence.sync.aligned: orders register and shared accesses before later wgmma (no effect here). */
inline void wgmma_fence() {}
namespace wgmma_detail {

/** 32-bit registers of a Hopper multiprocessor, shared by the warpgroups of a block that uses setmaxnreg. */
inline constexpr unsigned kRegisterFile = 65536;
/** The fewest registers setmaxnreg leaves a thread: the floor for a warpgroup whose count is not known yet. */
inline constexpr unsigned kFewestRegisters = 24;

/** setmaxnreg.{inc,dec}.sync.aligned.u32 (see the file header): checked, no effect on execution. */
inline void setmaxnreg(bool increase, unsigned registers, const std::source_location& site) {
  const char* name = increase ? "setmaxnreg.inc" : "setmaxnreg.dec";
  if (registers < kFewestRegisters || registers > 256 || registers % 8 != 0) {
    mbarrier_detail::fail(
        name, site,
        "requests " + std::to_string(registers) + " registers per thread: setmaxnreg takes 24 … 256 in steps of 8");
  }
  meet(name, site, &registers, [&](const void* const* arguments) {
    for (unsigned t = 0; t < kWarpgroupSize; t++) {
      const unsigned other = *static_cast<const unsigned*>(arguments[t]);
      if (other != registers) {
        mbarrier_detail::fail(name, site,
                              "requests " + std::to_string(registers) + " registers while thread " + std::to_string(t) +
                                  " of its warpgroup requests " + std::to_string(other) +
                                  ": setmaxnreg is .aligned, every thread of the warpgroup passes the same count");
      }
    }
    Warpgroup& group = warpgroup(name, site);
    if (group.registers != 0 && (increase ? registers < group.registers : registers > group.registers)) {
      mbarrier_detail::fail(name, site,
                            std::string(increase ? "lowers" : "raises") + " its warpgroup's registers from " +
                                std::to_string(group.registers) + " to " + std::to_string(registers) + ": use " +
                                (increase ? "setmaxnreg.dec" : "setmaxnreg.inc") + " for that");
    }
    group.registers = registers;
    if (!increase) return;
    unsigned total = 0;
    for (const Warpgroup& each : tls_block_warpgroups.groups)
      total += (each.registers != 0 ? each.registers : kFewestRegisters) * kWarpgroupSize;
    if (total > kRegisterFile) {
      mbarrier_detail::fail(name, site,
                            "raises its warpgroup to " + std::to_string(registers) +
                                " registers per thread, so the block's warpgroups need at least " +
                                std::to_string(total) + " of the multiprocessor's " + std::to_string(kRegisterFile) +
                                " registers (other warpgroups counted at their last setmaxnreg, or 24): the increase "
                                "can never be granted and the device would wait forever");
    }
  });
}

}  // namespace wgmma_detail

/** setmaxnreg.inc.sync.aligned.u32 N: checked (see the file header), no effect on execution. */
template <int Registers>
inline void setmaxnreg_inc(std::source_location site = std::source_location::current()) {
  static_assert(Registers >= 24 && Registers <= 256 && Registers % 8 == 0, "setmaxnreg takes 24 … 256 in steps of 8");
  wgmma_detail::setmaxnreg(true, Registers, site);
}
/** setmaxnreg.dec.sync.aligned.u32 N: checked (see the file header), no effect on execution. */
template <int Registers>
inline void setmaxnreg_dec(std::source_location site = std::source_location::current()) {
  static_assert(Registers >= 24 && Registers <= 256 && Registers % 8 == 0, "setmaxnreg takes 24 … 256 in steps of 8");
  wgmma_detail::setmaxnreg(false, Registers, site);
}

}  // namespace gpu_sim::ptx
