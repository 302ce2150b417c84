// gpu_sim/cuda/named_barrier.hpp — the CTA's sixteen named barriers (`bar.sync` / `barrier.sync`,
// `bar.arrive` / `barrier.arrive`) in the simulator, as the PTX ISA defines them, with the misuse
// the device does not report named with the kernel and file:line.
//
//  - bar_sync(id, count): bar.sync id, count — the calling thread waits for the rest of its warp
//    (the instruction is .aligned: every non-exited lane of the warp executes the same one), the
//    warp then counts as 32 arrivals (the warp size, as on the device) on barrier `id`, and the
//    threads wait until `count` arrivals have come; the barrier then starts over (reusable at
//    once). count 0 stands for "every thread of the block" (bar.sync id with no count: the block's
//    threads rounded up to whole warps).
//  - bar_arrive(id, count): bar.arrive id, count — the same arrival without waiting for the
//    phase to complete (a producer signalling consumers); count must be given (non-zero).
// Checked: id 0 … 15; count a multiple of 32 and at most the block's threads (rounded up to
// warps); every arrival on one phase of a barrier passes the same count (mixing counts aborts
// naming both sites); the lanes of a warp meet at the same instruction (a lane at another
// barrier instruction aborts naming both). A barrier that can never complete (threads waiting
// in bar.sync and nothing left that could arrive) aborts the launch with each waiting site and
// the barrier's arrivals so far, never hangs; a block that ends with arrivals on a phase that
// never completed (a bar.arrive that no bar.sync matched) aborts too — stricter than the device,
// where leftover arrivals are silently dropped, because they mean the two sides' protocol
// disagrees. __syncthreads() is modelled separately (gpu_sim::barrier): mixing it with bar.sync 0
// and a count is not detected, so kernels keep id 0 for __syncthreads.
// A phase completion that wakes waiters is a scheduling point (as an mbarrier release is): the
// released threads run before the completing lane's next step.
// State is per block (worker threads run one block at a time), reset when a worker starts another.
#pragma once

#include <array>
#include <cstring>
#include <cstdint>
#include <source_location>
#include <string>
#include <vector>

#include "../engine.hpp"

namespace gpu_sim::ptx {

/** Named barriers per CTA (ids 0 … 15). */
inline constexpr unsigned kNamedBarriers = 16;

namespace named_barrier_detail {

/** One instruction site's arrivals on the current phase (for messages). */
struct ArrivalSite {
  const char* instruction;
  std::source_location site;
  unsigned threads;
};

/** One named barrier: the current phase's expected count, arrivals and parked waiters. */
struct Barrier {
  /** Threads the current phase expects (0 until its first arrival). */
  unsigned expected = 0;
  /** Arrivals on the current phase (32 per warp). */
  unsigned arrived = 0;
  /** Completed phases. */
  std::uint64_t phase = 0;
  std::vector<ArrivalSite> sites;
  /** Linear ids of threads parked in bar.sync. */
  std::vector<unsigned> waiters;
  /** "bar.sync 3, 256" of the current phase: the wait name shown in deadlock reports. */
  std::string label;
};

/** The lanes of one warp meeting at a bar instruction before the warp arrives. */
struct WarpMeeting {
  std::uint32_t arrived = 0;
  const char* instruction = nullptr;
  std::source_location site;
  unsigned id = 0;
  unsigned count = 0;
  /** Bumped when the meeting completes (parked lanes wait for it). */
  std::uint64_t generation = 0;
  /** The barrier phase the warp's arrival joined (read by its lanes after the meeting). */
  std::uint64_t joined_phase = 0;
  std::vector<unsigned> parked;
};

struct BlockState {
  BlockCursor cursor;
  std::array<Barrier, kNamedBarriers> barriers;
  std::vector<WarpMeeting> warps;
};

inline thread_local BlockState tls_block_state;

inline std::string describe_arrivals(unsigned id, const Barrier& barrier) {
  std::string text = "barrier " + std::to_string(id) + ": " + std::to_string(barrier.arrived) + " of its " +
                     std::to_string(barrier.expected) + " threads arrived (";
  for (std::size_t index = 0; index < barrier.sites.size(); index++) {
    const ArrivalSite& arrival = barrier.sites[index];
    if (index > 0) text += ", ";
    text += std::to_string(arrival.threads) + " in " + arrival.instruction + " at " + format_site(arrival.site);
  }
  return text + ")";
}

/** Block-end check: arrivals left on a phase that never completed. */
inline std::string unsettled_barriers(bool deadlocked) {
  std::string text;
  const auto& barriers = tls_block_state.barriers;
  for (unsigned id = 0; id < kNamedBarriers; id++) {
    if (barriers[id].arrived == 0) continue;
    if (!text.empty()) text += "; ";
    text += describe_arrivals(id, barriers[id]);
  }
  if (text.empty()) return text;
  if (deadlocked) return "named " + text + ", and no other thread can arrive";
  return "ends with named " + text +
         " on a phase that never completed: every bar.arrive needs the bar.sync (or arrivals) that completes its "
         "phase — the two sides of the barrier disagree on how often they meet";
}

inline BlockState& block_state() {
  BlockRunner& runner = current_runner();
  BlockState& state = tls_block_state;
  if (state.cursor.moved()) {
    state.barriers = {};
    const Dim3& block = runner.shape().block;
    state.warps.assign((block.x * block.y * block.z + kWarpSize - 1) / kWarpSize, WarpMeeting{});
    runner.add_block_end_check(&unsettled_barriers);
  }
  return state;
}

[[noreturn]] inline void fail(const char* instruction, unsigned id, unsigned count, const std::source_location& site,
                              const std::string& problem) {
  throw KernelFault(current_runner().running_thread_prefix() + instruction + " " + std::to_string(id) + ", " +
                    std::to_string(count) + " at " + format_site(site) + " " + problem);
}

/** Counts one warp's arrival (32 threads) on `barrier`; completes the phase when `expected` is reached and says whether that woke waiters. */
inline bool warp_arrives(Barrier& barrier, const char* instruction, unsigned id, unsigned count,
                         const std::source_location& site) {
  if (barrier.arrived == 0) {
    barrier.expected = count;
    barrier.sites.clear();
    barrier.label = std::string("bar.sync ") + std::to_string(id) + ", " + std::to_string(count);
  } else if (barrier.expected != count) {
    fail(instruction, id, count, site,
         "mixes thread counts on one phase: " + describe_arrivals(id, barrier) + " expecting " +
             std::to_string(barrier.expected) + "; every arrival on a barrier phase must pass the same count");
  }
  bool known = false;
  for (ArrivalSite& arrival : barrier.sites) {
    if (arrival.instruction == instruction && arrival.site.line() == site.line() &&
        arrival.site.column() == site.column() && std::strcmp(arrival.site.file_name(), site.file_name()) == 0) {
      arrival.threads += kWarpSize;
      known = true;
    }
  }
  if (!known) barrier.sites.push_back(ArrivalSite{instruction, site, kWarpSize});
  barrier.arrived += kWarpSize;
  if (barrier.arrived < barrier.expected) return false;
  barrier.phase++;
  barrier.arrived = 0;
  barrier.sites.clear();
  const bool woke = !barrier.waiters.empty();
  for (unsigned waiter : barrier.waiters) current_runner().wake(waiter);
  barrier.waiters.clear();
  return woke;
}

/** bar.sync (wait) or bar.arrive: checks, the warp's meeting, its arrival, and for bar.sync the wait for the phase. */
inline void named_barrier(const char* instruction, bool wait, unsigned id, unsigned count,
                          const std::source_location& site) {
  BlockRunner& runner = current_runner();
  const Dim3& block = runner.shape().block;
  const unsigned block_threads = (block.x * block.y * block.z + kWarpSize - 1) / kWarpSize * kWarpSize;
  if (id >= kNamedBarriers)
    fail(instruction, id, count, site, "names barrier " + std::to_string(id) + ": a CTA has barriers 0 … 15");
  if (count == 0) {
    if (!wait)
      fail(instruction, id, count, site, "needs a non-zero thread count (bar.arrive has no \"whole block\" form)");
    count = block_threads;
  }
  if (count % kWarpSize != 0)
    fail(instruction, id, count, site, "passes a thread count that is not a multiple of the warp size (32)");
  if (count > block_threads) {
    fail(instruction, id, count, site,
         "expects more threads than the block has (" + std::to_string(block_threads) +
             " in whole warps): the barrier can never complete");
  }
  BlockState& state = block_state();
  Barrier& barrier = state.barriers[id];
  const SimThread& thread = current_thread();
  WarpMeeting& meeting = state.warps[thread.warp];
  const std::uint32_t bit = 1u << thread.lane;
  if (meeting.arrived != 0 && (meeting.instruction != instruction || meeting.id != id || meeting.count != count ||
                               meeting.site.line() != site.line() || meeting.site.column() != site.column() ||
                               std::strcmp(meeting.site.file_name(), site.file_name()) != 0)) {
    fail(instruction, id, count, site,
         "while lanes of its warp wait in " + std::string(meeting.instruction) + " " + std::to_string(meeting.id) +
             ", " + std::to_string(meeting.count) + " at " + format_site(meeting.site) +
             ": the instruction is .aligned — every non-exited lane of a warp executes the same one");
  }
  meeting.instruction = instruction;
  meeting.site = site;
  meeting.id = id;
  meeting.count = count;
  meeting.arrived |= bit;
  std::uint64_t joined = 0;
  bool released = false;
  if ((meeting.arrived & runner.live_lanes()) != runner.live_lanes()) {
    const std::uint64_t generation = meeting.generation;
    meeting.parked.push_back(thread.linear);
    while (meeting.generation == generation) runner.park(instruction, site);
    joined = meeting.joined_phase;
  } else {
    meeting.arrived = 0;
    meeting.joined_phase = barrier.phase;
    joined = barrier.phase;
    released = warp_arrives(barrier, instruction, id, count, site);
    meeting.generation++;
    for (unsigned lane : meeting.parked) runner.wake(lane);
    meeting.parked.clear();
  }
  // A phase completion that woke waiters is a scheduling point (engine.hpp reschedule), as for an
  // mbarrier: the released threads run before the lane that completed it takes its next step, so
  // a side that still uses what it handed over shows it in every lane, not in 31 of 32.
  if (released) runner.reschedule();
  if (!wait) return;
  while (barrier.phase == joined) {
    barrier.waiters.push_back(thread.linear);
    runner.park(barrier.label.c_str(), site);
  }
}

}  // namespace named_barrier_detail

/** bar.sync id, count (barrier.sync.aligned): arrive on barrier `id` and wait for its phase; count 0 = the whole block. */
inline void bar_sync(unsigned id, unsigned count = 0, std::source_location site = std::source_location::current()) {
  named_barrier_detail::named_barrier("bar.sync", true, id, count, site);
}

/** bar.arrive id, count (barrier.arrive.aligned): arrive on barrier `id` without waiting; count must be non-zero. */
inline void bar_arrive(unsigned id, unsigned count, std::source_location site = std::source_location::current()) {
  named_barrier_detail::named_barrier("bar.arrive", false, id, count, site);
}

}  // namespace gpu_sim::ptx
