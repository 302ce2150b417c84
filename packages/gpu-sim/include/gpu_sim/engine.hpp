// gpu_sim/engine.hpp — runs GPU kernels on the CPU, one fiber per GPU thread.
//
// Algorithm: a launch runs its blocks one at a time on each worker (the calling thread, plus
// optional pool threads that take blocks from a shared counter). Inside a block every GPU
// thread is a fiber with its own stack; a cooperative round-robin scheduler resumes fibers from
// a ready queue. A thread runs until it finishes or waits: at a block barrier (it resumes when
// every thread of the block has arrived at the same barrier) or in a warp collective (it resumes
// when every lane named in the mask has arrived at the same collective; the last lane to arrive
// computes everybody's result), or at a scheduling point a dialect asks for (reschedule: after a
// release that woke waiters). Nothing is preemptive, so a block is deterministic.
//
// Divergence is an error, never a hang: a thread that exits while others wait at a barrier,
// a thread that reaches a barrier after another exited, threads waiting at two different
// barriers, collectives with different masks/operations/sites, a mask naming an exited lane,
// or a ready queue that empties while threads still wait all abort the launch with a message
// naming the kernel, the block, the thread and the file:line of each barrier involved.
//
// Elastic collectives (Metal's simd_* functions act on the simdgroup's *active* threads): a lane
// that exits while others wait in an elastic collective leaves its group instead of faulting, so
// `if (gid >= count) return;` before a simd_sum is fine, as on the GPU; lanes that are still
// running must reach the same collective.
//
// Layout: threads are numbered x fastest (linear = x + y·X + z·X·Y), warps are 32 consecutive
// linear ids, lane = linear % 32 — as on NVIDIA hardware and Apple simdgroups.
//
// Naming is neutral (block, warp, barrier, collective) so that the CUDA dialect
// (gpu_sim/cuda/device.hpp) and a Metal dialect (threadgroup, simdgroup) both sit on it.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <source_location>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "fiber.hpp"

namespace gpu_sim {

/** Lanes per warp (NVIDIA warp, Apple simdgroup). */
inline constexpr unsigned kWarpSize = 32;

/** Three extents or coordinates, x fastest. */
struct Dim3 {
  unsigned x = 1;
  unsigned y = 1;
  unsigned z = 1;
};

/** A fault detected while running a kernel (divergence, bad collective); aborts the launch. */
class KernelFault : public std::exception {
 public:
  explicit KernelFault(std::string message) : message_(std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};

/** What to run: grid and block extents, dynamic shared memory and the kernel's name (for messages). */
struct LaunchShape {
  /** Blocks in the grid. */
  Dim3 grid;
  /** Threads per block. */
  Dim3 block;
  /** Bytes of dynamic shared (threadgroup) memory per block. */
  std::size_t dynamic_shared_bytes = 0;
  /** Kernel name used in every fault message. */
  const char* kernel_name = "kernel";
};

/** Outcome of a launch: ok, or the first fault's message. */
struct LaunchResult {
  /** True when every block ran to completion without a fault. */
  bool ok = true;
  /** The fault, when not ok. */
  std::string message;
};

/** A warp-wide operation: every lane of `mask` contributes (value, argument); `combine` computes each lane's result. */
struct CollectiveOp {
  /** Name shown in messages (e.g. "__shfl_xor_sync", "simd_shuffle_xor"). */
  const char* name;
  /**
   * Computes results[lane] for every lane of `mask` from values[]/arguments[] (indexed by lane).
   * Returns nullptr on success or a static description of a misuse (e.g. reading a lane outside the mask).
   */
  const char* (*combine)(const std::uint64_t* values, const std::int32_t* arguments, int width, std::uint32_t mask,
                         std::uint64_t* results, unsigned* offending_lane);
};

/** Short file name for messages (the last path component). */
inline const char* short_file_name(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

/** "file:line" of a source location. */
inline std::string format_site(const std::source_location& site) {
  return std::string(short_file_name(site.file_name())) + ":" + std::to_string(site.line());
}

/** "(x,y,z)". */
inline std::string format_dim(const Dim3& value) {
  return "(" + std::to_string(value.x) + "," + std::to_string(value.y) + "," + std::to_string(value.z) + ")";
}

/** Scheduling state of one GPU thread. */
enum class ThreadState : std::uint8_t {
  kNotStarted,
  kRunnable,
  kWaitingBarrier,
  kWaitingWarp,
  kParked,
  kFinished,
  kFailed
};

class BlockRunner;

/** One simulated GPU thread: coordinates, fiber and wait state. */
struct SimThread {
  /** threadIdx / thread_position_in_threadgroup. */
  Dim3 index;
  /** Linear id within the block. */
  unsigned linear = 0;
  /** Lane within the warp. */
  unsigned lane = 0;
  /** Warp within the block. */
  unsigned warp = 0;
  /** Scheduling state. */
  ThreadState state = ThreadState::kNotStarted;
  /** Saved context while suspended. */
  FiberContext context;
  /** Stack while started and not finished. */
  FiberStack* stack = nullptr;
  /** Where it waits (barrier or collective), for messages. */
  std::source_location wait_site;
  /** Name of what it waits in, for messages. */
  const char* wait_name = "";
  /** The block it belongs to. */
  BlockRunner* runner = nullptr;
};

/** A pending collective of some lanes of one warp (lanes of concurrent groups are disjoint). */
struct WarpGroup {
  std::uint32_t mask = 0;
  std::uint32_t arrived = 0;
  const CollectiveOp* op = nullptr;
  std::source_location site;
  int width = 0;
  /** Lanes that exit leave the group (Metal's active-thread semantics) instead of faulting. */
  bool elastic = false;
};

/** Exchange slots of one warp. */
struct WarpState {
  std::uint64_t values[kWarpSize];
  std::int32_t arguments[kWarpSize];
  std::uint64_t results[kWarpSize];
  /** Lanes that exist in the block (the last warp may be partial). */
  std::uint32_t existing = 0;
  /** Lanes that have finished. */
  std::uint32_t exited = 0;
  /** Pending groups; at most one per lane. */
  std::vector<WarpGroup> groups;
};

/** Settings of the engine (read once from the environment, changeable by tests). */
struct EngineSettings {
  /** Worker threads that run blocks, the caller included (GPU_SIM_WORKERS, default 1). */
  unsigned workers = 1;
  /** Usable bytes of each fiber stack (GPU_SIM_STACK_BYTES, default 256 KiB). */
  std::size_t stack_bytes = 256 * 1024;
  /** A launch runs in parallel only with at least this many threads in total. */
  std::size_t parallel_threshold_threads = 16384;
};

inline thread_local SimThread* tls_thread = nullptr;
inline thread_local BlockRunner* tls_runner = nullptr;

/**
 * Runs the blocks handed to one worker. Owns the worker's fibers' stacks, the per-block thread
 * table, the warp exchange slots and the dynamic shared memory.
 */
class BlockRunner {
 public:
  BlockRunner() = default;
  BlockRunner(const BlockRunner&) = delete;
  BlockRunner& operator=(const BlockRunner&) = delete;

  /** "kernel '…': thread (x,y,z) of block (x,y,z) " for the running thread: the start of a fault message. */
  std::string running_thread_prefix() const { return prefix(*tls_thread); }

  /** Prepares the thread table for a launch of `shape` running `body(context)` in every thread. */
  void begin_launch(const LaunchShape& shape, void (*body)(void*), void* context, std::size_t stack_bytes) {
    shape_ = shape;
    body_ = body;
    body_context_ = context;
    if (stack_bytes != stack_bytes_) {
      free_stacks_.clear();
      stack_bytes_ = stack_bytes;
    }
    const unsigned count = shape.block.x * shape.block.y * shape.block.z;
    threads_.resize(count);
    for (unsigned linear = 0; linear < count; linear++) {
      SimThread& thread = threads_[linear];
      thread.index = Dim3{linear % shape.block.x, (linear / shape.block.x) % shape.block.y,
                          linear / (shape.block.x * shape.block.y)};
      thread.linear = linear;
      thread.lane = linear % kWarpSize;
      thread.warp = linear / kWarpSize;
      thread.runner = this;
    }
    warps_.resize((count + kWarpSize - 1) / kWarpSize);
    for (unsigned warp = 0; warp < warps_.size(); warp++) {
      const unsigned lanes = std::min(kWarpSize, count - warp * kWarpSize);
      warps_[warp].existing = lanes == kWarpSize ? 0xffffffffu : ((1u << lanes) - 1u);
    }
    ready_.resize(count);
    block_values_.resize(count);
    if (dynamic_shared_.size() < shape.dynamic_shared_bytes + 16)
      dynamic_shared_.resize(shape.dynamic_shared_bytes + 16);
  }

  /** Runs one block to completion. Returns false (and sets `fault`) on divergence or a kernel fault. */
  bool run_block(const Dim3& block_index, std::string& fault) {
    block_index_ = block_index;
    block_serial_++;
    const unsigned count = static_cast<unsigned>(threads_.size());
    for (SimThread& thread : threads_) thread.state = ThreadState::kNotStarted;
    for (WarpState& warp : warps_) {
      warp.exited = 0;
      warp.groups.clear();
    }
    // Fresh shared memory holds garbage on a GPU: NaN bytes make a read-before-write visible.
    if (shape_.dynamic_shared_bytes > 0) std::memset(dynamic_shared_.data(), 0xff, shape_.dynamic_shared_bytes);
    barrier_arrived_ = 0;
    finished_ = 0;
    first_exited_ = nullptr;
    fault_.clear();
    ready_head_ = 0;
    ready_count_ = 0;
    block_end_checks_.clear();
    for (unsigned linear = 0; linear < count; linear++) push_ready(threads_[linear]);

    BlockRunner* saved_runner = tls_runner;
    SimThread* saved_thread = tls_thread;
    tls_runner = this;
    while (ready_count_ > 0 && fault_.empty()) {
      SimThread& thread = pop_ready();
      if (thread.state == ThreadState::kNotStarted) {
        thread.stack = acquire_stack();
        thread.context.prepare(*thread.stack, &BlockRunner::thread_entry, &thread);
      }
      thread.state = ThreadState::kRunnable;
      tls_thread = &thread;
      scheduler_.switch_to(thread.context);
      if (thread.state == ThreadState::kFinished || thread.state == ThreadState::kFailed) release_stack(thread);
    }
    if (fault_.empty()) {
      const bool deadlocked = finished_ != count;
      if (deadlocked) fault_ = describe_deadlock();
      // Dialect state that must be settled when the block ends (e.g. named barriers with arrivals left).
      for (BlockEndCheck check : block_end_checks_) {
        const std::string problem = check(deadlocked);
        if (problem.empty()) continue;
        if (deadlocked) {
          fault_ += "; " + problem;
        } else {
          fault_ =
              std::string("kernel '") + shape_.kernel_name + "': block " + format_dim(block_index_) + " " + problem;
          break;
        }
      }
    }
    tls_runner = saved_runner;
    tls_thread = saved_thread;

    if (!fault_.empty()) {
      // Abandoned fibers keep their stacks; reclaim them all for the next block.
      for (SimThread& thread : threads_) release_stack(thread);
      fault = fault_;
      return false;
    }
    return true;
  }

  // ---- called from inside a running GPU thread ----

  /** Block-wide barrier; every thread of the block must reach the same one. */
  void barrier(const char* name, const std::source_location& site) {
    SimThread& thread = *tls_thread;
    if (first_exited_ != nullptr) {
      throw KernelFault(prefix(thread) + "reaches " + name + " at " + format_site(site) + " after thread " +
                        format_dim(first_exited_->index) +
                        " of the same block exited: every thread of a block must reach every barrier");
    }
    if (barrier_arrived_ == 0) {
      barrier_site_ = site;
      barrier_name_ = name;
    } else if (!same_site(barrier_site_, site)) {
      throw KernelFault(prefix(thread) + "waits at " + name + " at " + format_site(site) + " while " +
                        std::to_string(barrier_arrived_) + " threads of its block wait at " + barrier_name_ + " at " +
                        format_site(barrier_site_) + ": threads of a block must meet at the same barrier");
    }
    barrier_arrived_++;
    if (barrier_arrived_ == threads_.size()) {
      barrier_arrived_ = 0;
      for (SimThread& other : threads_) {
        if (&other != &thread) push_ready(other);
      }
      return;
    }
    thread.state = ThreadState::kWaitingBarrier;
    thread.wait_site = site;
    thread.wait_name = name;
    yield(thread);
  }

  /** Block-wide barrier that also combines one value per thread: kind 0 = count of non-zero, 1 = all non-zero, 2 = any non-zero. */
  int barrier_reduce(const char* name, int value, int kind, const std::source_location& site) {
    SimThread& thread = *tls_thread;
    block_values_[thread.linear] = value != 0 ? 1 : 0;
    const bool last = barrier_arrived_ + 1 == threads_.size();
    if (last) {
      int count = 0;
      for (int flag : block_values_) count += flag;
      barrier_result_ = kind == 0   ? count
                        : kind == 1 ? (count == static_cast<int>(threads_.size()) ? 1 : 0)
                                    : (count > 0 ? 1 : 0);
    }
    barrier(name, site);
    return barrier_result_;
  }

  /** A collective of the lanes in `mask` of the calling thread's warp; returns this lane's result. */
  std::uint64_t collective(const CollectiveOp& op, std::uint32_t mask, std::uint64_t value, std::int32_t argument,
                           int width, const std::source_location& site, bool elastic = false) {
    SimThread& thread = *tls_thread;
    WarpState& warp = warps_[thread.warp];
    const std::uint32_t bit = 1u << thread.lane;
    if ((mask & bit) == 0) {
      throw KernelFault(prefix(thread) + "calls " + op.name + " at " + format_site(site) + " with mask " + hex(mask) +
                        ", which does not include its own lane " + std::to_string(thread.lane));
    }
    const std::uint32_t unavailable = mask & ~(warp.existing & ~warp.exited);
    if (unavailable != 0) {
      throw KernelFault(prefix(thread) + "calls " + op.name + " at " + format_site(site) + " with mask " + hex(mask) +
                        " naming lanes " + hex(unavailable) + " that " +
                        ((unavailable & ~warp.existing) ? "do not exist in this block" : "have exited"));
    }
    WarpGroup* group = nullptr;
    for (WarpGroup& pending : warp.groups) {
      if (pending.mask & bit) group = &pending;
    }
    // An elastic group shrinks when lanes exit: a later arrival names fewer lanes, never others.
    if (group != nullptr && elastic && group->elastic && (mask & ~group->mask) == 0) mask = group->mask;
    if (group != nullptr) {
      if (group->mask != mask || group->op != &op || group->width != width || !same_site(group->site, site)) {
        throw KernelFault(prefix(thread) + "calls " + op.name + " (mask " + hex(mask) + ") at " + format_site(site) +
                          " while lanes " + hex(group->arrived) + " of its warp wait in " + group->op->name +
                          " (mask " + hex(group->mask) + ") at " + format_site(group->site) +
                          ": the lanes of a mask must call the same collective");
      }
    } else {
      for (const WarpGroup& pending : warp.groups) {
        if (pending.mask & mask) {
          throw KernelFault(prefix(thread) + "calls " + op.name + " (mask " + hex(mask) + ") at " + format_site(site) +
                            " overlapping lanes " + hex(pending.mask & mask) + " that wait in " + pending.op->name +
                            " (mask " + hex(pending.mask) + ") at " + format_site(pending.site));
        }
      }
      warp.groups.push_back(WarpGroup{mask, 0, &op, site, width, elastic});
      group = &warp.groups.back();
    }
    warp.values[thread.lane] = value;
    warp.arguments[thread.lane] = argument;
    group->arrived |= bit;
    if (group->arrived == mask) {
      complete_group(thread, warp, static_cast<std::size_t>(group - warp.groups.data()));
      return warp.results[thread.lane];
    }
    thread.state = ThreadState::kWaitingWarp;
    thread.wait_site = site;
    thread.wait_name = op.name;
    yield(thread);
    return warp.results[thread.lane];
  }

  /**
   * Suspends the calling thread until wake() names it: waits on something other than a block
   * barrier or warp collective (mbarrier phases, warpgroup collectives). A block left with parked
   * threads and nothing runnable faults naming each wait's `name` and site, never hangs.
   */
  void park(const char* name, const std::source_location& site) {
    SimThread& thread = *tls_thread;
    thread.state = ThreadState::kParked;
    thread.wait_site = site;
    thread.wait_name = name;
    yield(thread);
  }

  /**
   * A scheduling point: the calling thread stays runnable but goes to the back of the ready queue,
   * so every thread runnable now runs before it continues (still deterministic). The CUDA dialect
   * calls it after an mbarrier arrival that woke waiters, so what a release lets another thread do
   * (a producer's next copy into a buffer) happens before the releasing thread's next step (its
   * wait for a wgmma that may still read that buffer) — a window a cooperative scheduler that
   * switches only at waits would never open.
   */
  void reschedule() {
    SimThread& thread = *tls_thread;
    push_ready(thread);
    yield(thread);
  }

  /** Makes the parked thread with linear id `linear` runnable again (no effect on one that is not parked). */
  void wake(unsigned linear) {
    SimThread& thread = threads_[linear];
    if (thread.state != ThreadState::kParked) return;
    thread.state = ThreadState::kRunnable;
    push_ready(thread);
  }

  /**
   * A check run once the running block ends (every thread finished, or no progress possible:
   * `deadlocked`); it returns a description of what was left unsettled, or "" when all is well.
   * Registered again for each block (the list is cleared when a block starts).
   */
  using BlockEndCheck = std::string (*)(bool deadlocked);

  /** Runs `check` when the running block ends (once per block, however often it is added). */
  void add_block_end_check(BlockEndCheck check) {
    if (std::find(block_end_checks_.begin(), block_end_checks_.end(), check) == block_end_checks_.end())
      block_end_checks_.push_back(check);
  }

  /** Lanes of the calling thread's warp that exist and have not exited. */
  std::uint32_t live_lanes() const {
    const WarpState& warp = warps_[tls_thread->warp];
    return warp.existing & ~warp.exited;
  }

  /** The launch being run. */
  const LaunchShape& shape() const { return shape_; }
  /** Index of the block being run. */
  const Dim3& block_index() const { return block_index_; }
  /** Dynamic shared memory of the running block (16-byte aligned). */
  void* dynamic_shared() { return dynamic_shared_.data(); }
  /** Changes for every block this runner starts (lets per-block static storage know a new block began). */
  std::uint64_t block_serial() const { return block_serial_; }

 private:
  static void thread_entry(void* argument) {
    auto* thread = static_cast<SimThread*>(argument);
    BlockRunner* runner = thread->runner;
    try {
      runner->body_(runner->body_context_);
      runner->on_exit(*thread);
      thread->state = ThreadState::kFinished;
    } catch (const KernelFault& fault) {
      if (runner->fault_.empty()) runner->fault_ = fault.what();
      thread->state = ThreadState::kFailed;
    } catch (const std::exception& error) {
      if (runner->fault_.empty()) runner->fault_ = runner->prefix(*thread) + "threw: " + error.what();
      thread->state = ThreadState::kFailed;
    } catch (...) {
      if (runner->fault_.empty()) runner->fault_ = runner->prefix(*thread) + "threw an unknown exception";
      thread->state = ThreadState::kFailed;
    }
    thread->context.switch_to(runner->scheduler_);
    std::abort();  // a finished fiber is never resumed
  }

  /** Runs the combine of a group whose lanes have all arrived, wakes its waiting lanes (not `caller`) and removes it. */
  void complete_group(SimThread& caller, WarpState& warp, std::size_t index) {
    const WarpGroup group = warp.groups[index];
    warp.groups.erase(warp.groups.begin() + static_cast<std::ptrdiff_t>(index));
    unsigned offending = 0;
    const char* misuse =
        group.op->combine(warp.values, warp.arguments, group.width, group.mask, warp.results, &offending);
    if (misuse != nullptr) {
      throw KernelFault(prefix(caller) + group.op->name + " at " + format_site(group.site) + " (mask " +
                        hex(group.mask) + "): lane " + std::to_string(offending) + " " + misuse);
    }
    const unsigned base = caller.warp * kWarpSize;
    for (unsigned lane = 0; lane < kWarpSize; lane++) {
      if ((group.mask & (1u << lane)) && base + lane != caller.linear) push_ready(threads_[base + lane]);
    }
  }

  void on_exit(SimThread& thread) {
    WarpState& warp = warps_[thread.warp];
    warp.exited |= 1u << thread.lane;
    for (std::size_t index = 0; index < warp.groups.size(); index++) {
      WarpGroup& pending = warp.groups[index];
      if ((pending.mask & (1u << thread.lane)) == 0) continue;
      if (!pending.elastic) {
        throw KernelFault(prefix(thread) + "exits while lanes " + hex(pending.arrived) +
                          " of its warp wait for it in " + pending.op->name + " (mask " + hex(pending.mask) + ") at " +
                          format_site(pending.site));
      }
      // An inactive lane leaves an elastic collective; the rest may now be complete.
      pending.mask &= ~(1u << thread.lane);
      if (pending.mask != 0 && pending.arrived == pending.mask) {
        complete_group(thread, warp, index);
        index--;
      }
    }
    if (barrier_arrived_ > 0) {
      throw KernelFault(prefix(thread) + "exits while " + std::to_string(barrier_arrived_) +
                        " threads of its block wait at " + barrier_name_ + " at " + format_site(barrier_site_) +
                        ": every thread of a block must reach every barrier");
    }
    if (first_exited_ == nullptr) first_exited_ = &thread;
    finished_++;
  }

  void yield(SimThread& thread) {
    thread.context.switch_to(scheduler_);
    tls_thread = &thread;
  }

  void push_ready(SimThread& thread) {
    std::size_t slot = ready_head_ + ready_count_;
    if (slot >= ready_.size()) slot -= ready_.size();
    ready_[slot] = &thread;
    ready_count_++;
  }

  SimThread& pop_ready() {
    SimThread* thread = ready_[ready_head_];
    if (++ready_head_ == ready_.size()) ready_head_ = 0;
    ready_count_--;
    return *thread;
  }

  FiberStack* acquire_stack() {
    if (free_stacks_.empty()) {
      all_stacks_.push_back(std::make_unique<FiberStack>(stack_bytes_));
      return all_stacks_.back().get();
    }
    FiberStack* stack = free_stacks_.back();
    free_stacks_.pop_back();
    return stack;
  }

  void release_stack(SimThread& thread) {
    if (thread.stack != nullptr) {
      free_stacks_.push_back(thread.stack);
      thread.stack = nullptr;
    }
  }

  static bool same_site(const std::source_location& left, const std::source_location& right) {
    return left.line() == right.line() && left.column() == right.column() &&
           std::strcmp(left.file_name(), right.file_name()) == 0;
  }

  static std::string hex(std::uint32_t value) {
    char text[16];
    std::snprintf(text, sizeof text, "0x%08x", value);
    return text;
  }

  std::string prefix(const SimThread& thread) const {
    return std::string("kernel '") + shape_.kernel_name + "': thread " + format_dim(thread.index) + " of block " +
           format_dim(block_index_) + " ";
  }

  std::string describe_deadlock() const {
    std::string text = std::string("kernel '") + shape_.kernel_name + "': block " + format_dim(block_index_) +
                       " can make no progress (divergent barrier or collective):";
    unsigned finished = 0;
    for (const SimThread& thread : threads_) {
      if (thread.state == ThreadState::kFinished) finished++;
    }
    if (finished > 0) text += " " + std::to_string(finished) + " threads exited;";
    std::vector<std::pair<std::string, unsigned>> waits;
    for (const SimThread& thread : threads_) {
      if (thread.state != ThreadState::kWaitingBarrier && thread.state != ThreadState::kWaitingWarp &&
          thread.state != ThreadState::kParked)
        continue;
      std::string where = std::string(thread.wait_name) + " at " + format_site(thread.wait_site);
      auto found = std::find_if(waits.begin(), waits.end(), [&](const auto& entry) { return entry.first == where; });
      if (found == waits.end())
        waits.emplace_back(where, 1);
      else
        found->second++;
    }
    for (const auto& [where, count] : waits) text += " " + std::to_string(count) + " threads wait in " + where + ";";
    text.pop_back();
    return text;
  }

  LaunchShape shape_;
  void (*body_)(void*) = nullptr;
  void* body_context_ = nullptr;
  Dim3 block_index_;
  std::uint64_t block_serial_ = 0;
  std::vector<SimThread> threads_;
  std::vector<WarpState> warps_;
  std::vector<SimThread*> ready_;
  std::size_t ready_head_ = 0;
  std::size_t ready_count_ = 0;
  std::vector<int> block_values_;
  int barrier_result_ = 0;
  std::size_t barrier_arrived_ = 0;
  std::source_location barrier_site_;
  const char* barrier_name_ = "";
  unsigned finished_ = 0;
  const SimThread* first_exited_ = nullptr;
  std::string fault_;
  FiberContext scheduler_;
  std::size_t stack_bytes_ = 0;
  std::vector<std::unique_ptr<FiberStack>> all_stacks_;
  std::vector<FiberStack*> free_stacks_;
  std::vector<unsigned char> dynamic_shared_;
  std::vector<BlockEndCheck> block_end_checks_;
};

/**
 * The engine: settings, the calling thread's runner and an optional pool of worker threads
 * that run blocks of large launches in parallel. One per process.
 */
class Engine {
 public:
  /** The process-wide engine. */
  static Engine& instance() {
    static Engine engine;
    return engine;
  }

  /** Current settings. */
  EngineSettings settings() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return settings_;
  }

  /** Replaces the settings (not while a launch runs). */
  void configure(const EngineSettings& settings) {
    std::lock_guard<std::mutex> launch_lock(launch_mutex_);
    stop_workers();
    std::lock_guard<std::mutex> lock(mutex_);
    settings_ = settings;
    if (settings_.workers == 0) settings_.workers = 1;
  }

  /** Runs `body(context)` in every thread of every block of `shape`; blocks until done. */
  LaunchResult launch(const LaunchShape& shape, void (*body)(void*), void* context) {
    std::lock_guard<std::mutex> launch_lock(launch_mutex_);
    const std::size_t blocks = static_cast<std::size_t>(shape.grid.x) * shape.grid.y * shape.grid.z;
    const std::size_t threads_per_block = static_cast<std::size_t>(shape.block.x) * shape.block.y * shape.block.z;
    LaunchResult result;
    if (blocks == 0 || threads_per_block == 0) return result;
    const EngineSettings settings = this->settings();
    job_shape_ = shape;
    job_body_ = body;
    job_context_ = context;
    job_blocks_ = blocks;
    next_block_.store(0);
    failed_.store(false);
    job_fault_.clear();
    const bool parallel =
        settings.workers > 1 && blocks > 1 && blocks * threads_per_block >= settings.parallel_threshold_threads;
    if (parallel) {
      start_workers(settings.workers - 1);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        job_generation_++;
        busy_workers_ = workers_.size();
      }
      work_ready_.notify_all();
    }
    run_blocks(caller_runner(), settings.stack_bytes);
    if (parallel) {
      std::unique_lock<std::mutex> lock(mutex_);
      work_done_.wait(lock, [&] { return busy_workers_ == 0; });
    }
    if (failed_.load()) {
      result.ok = false;
      result.message = job_fault_;
    }
    return result;
  }

  /** Convenience: runs a callable (copied once, shared by every thread). */
  template <typename Body>
  LaunchResult launch(const LaunchShape& shape, Body& body) {
    return launch(shape, [](void* context) { (*static_cast<Body*>(context))(); }, &body);
  }

  ~Engine() {
    std::lock_guard<std::mutex> launch_lock(launch_mutex_);
    stop_workers();
  }

 private:
  Engine() {
    if (const char* workers = std::getenv("GPU_SIM_WORKERS")) {
      const long value = std::strtol(workers, nullptr, 10);
      if (value > 0 && value <= 256) settings_.workers = static_cast<unsigned>(value);
    }
    if (const char* stack = std::getenv("GPU_SIM_STACK_BYTES")) {
      const long long value = std::strtoll(stack, nullptr, 10);
      if (value >= 16 * 1024) settings_.stack_bytes = static_cast<std::size_t>(value);
    }
  }

  static BlockRunner& caller_runner() {
    static thread_local BlockRunner runner;
    return runner;
  }

  void run_blocks(BlockRunner& runner, std::size_t stack_bytes) {
    runner.begin_launch(job_shape_, job_body_, job_context_, stack_bytes);
    const Dim3 grid = job_shape_.grid;
    std::string fault;
    while (!failed_.load(std::memory_order_relaxed)) {
      const std::size_t block = next_block_.fetch_add(1);
      if (block >= job_blocks_) break;
      const Dim3 index{static_cast<unsigned>(block % grid.x), static_cast<unsigned>((block / grid.x) % grid.y),
                       static_cast<unsigned>(block / (static_cast<std::size_t>(grid.x) * grid.y))};
      if (!runner.run_block(index, fault)) {
        std::lock_guard<std::mutex> lock(fault_mutex_);
        if (!failed_.exchange(true)) job_fault_ = fault;
        break;
      }
    }
  }

  void start_workers(unsigned count) {
    if (workers_.size() == count) return;
    stop_workers();
    std::uint64_t generation = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = false;
      generation = job_generation_;
    }
    for (unsigned i = 0; i < count; i++) {
      workers_.emplace_back([this, generation] { worker_loop(generation); });
    }
  }

  void stop_workers() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    work_ready_.notify_all();
    for (std::thread& worker : workers_) worker.join();
    workers_.clear();
  }

  void worker_loop(std::uint64_t seen) {
    BlockRunner runner;
    for (;;) {
      std::size_t stack_bytes = 0;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        work_ready_.wait(lock, [&] { return stopping_ || job_generation_ != seen; });
        if (stopping_) return;
        seen = job_generation_;
        stack_bytes = settings_.stack_bytes;
      }
      run_blocks(runner, stack_bytes);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        busy_workers_--;
      }
      work_done_.notify_all();
    }
  }

  mutable std::mutex mutex_;
  std::mutex launch_mutex_;
  std::mutex fault_mutex_;
  std::condition_variable work_ready_;
  std::condition_variable work_done_;
  EngineSettings settings_;
  std::vector<std::thread> workers_;
  bool stopping_ = false;
  std::uint64_t job_generation_ = 0;
  std::size_t busy_workers_ = 0;
  LaunchShape job_shape_;
  void (*job_body_)(void*) = nullptr;
  void* job_context_ = nullptr;
  std::size_t job_blocks_ = 0;
  std::atomic<std::size_t> next_block_{0};
  std::atomic<bool> failed_{false};
  std::string job_fault_;
};

// ---- accessors for dialect layers (valid only inside a running GPU thread) ----

/** The running GPU thread. */
inline SimThread& current_thread() { return *tls_thread; }
/** The runner of the running block. */
inline BlockRunner& current_runner() { return *tls_runner; }
/** Index of the running thread within its block. */
inline const Dim3& thread_index() { return tls_thread->index; }
/** Index of the running block within the grid. */
inline const Dim3& block_index() { return tls_runner->block_index(); }
/** Threads per block. */
inline const Dim3& block_extent() { return tls_runner->shape().block; }
/** Blocks per grid. */
inline const Dim3& grid_extent() { return tls_runner->shape().grid; }
/** True when called from inside a simulated GPU thread. */
inline bool in_kernel() { return tls_thread != nullptr; }

/**
 * Which block a dialect layer's per-block side state (a worker-thread-local table) belongs to:
 * moved() is true, and the cursor then points at the running block, when the worker has started
 * another block or kernel since the last call — the caller resets its state then.
 */
struct BlockCursor {
  const BlockRunner* runner = nullptr;
  std::uint64_t serial = 0;
  const char* kernel = nullptr;

  bool moved() {
    const BlockRunner& running = current_runner();
    if (runner == &running && serial == running.block_serial() && kernel == running.shape().kernel_name) return false;
    runner = &running;
    serial = running.block_serial();
    kernel = running.shape().kernel_name;
    return true;
  }
};

/** Block-wide barrier (threadgroup barrier); `name` appears in divergence messages. */
inline void barrier(const char* name, const std::source_location& site) { tls_runner->barrier(name, site); }

}  // namespace gpu_sim
