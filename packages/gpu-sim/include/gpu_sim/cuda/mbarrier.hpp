// gpu_sim/cuda/mbarrier.hpp — sm_90 shared-memory barriers (`mbarrier`) with transaction counts
// in the simulator, and the shared-space addresses the Hopper instructions take.
//
//  - shared_address(pointer): the pointer's offset in the block's dynamic shared memory (what
//    __cvta_generic_to_shared gives on the device when all shared data is dynamic); a pointer
//    outside it aborts the launch. shared_pointer(address) is the inverse.
//  - init(bar, count): mbarrier.init.shared.b64 — phase 0 in progress, `count` (1 … 2^20 − 1)
//    arrivals expected, transaction count 0.
//  - arrive(bar) / arrive_expect_tx(bar, bytes) / expect_tx(bar, bytes): mbarrier.arrive{.expect_tx}
//    — expect_tx raises the pending transaction bytes; an arrive counts one arrival. The current
//    phase completes when every expected arrival has come and the transaction count is back at 0;
//    the next phase then starts with the same expected count. An arrival that completes a phase
//    with parked waiters lets them (and every other runnable thread) run before the arriving
//    thread continues, so a release's consequences — a producer's next copy into the released
//    buffer — come before the releasing thread's next step, as they may on a GPU.
//  - wait_parity(bar, parity): mbarrier.try_wait.parity in a loop — returns once the phase of that
//    parity has completed (i.e. the current phase's parity differs). Copies in flight that signal
//    this barrier (tma.hpp) are delivered first (the copy engine has had its time); otherwise the
//    thread parks. A wait that can never end (every thread of the block waiting, no copy in
//    flight) aborts the launch naming the kernel and each wait's file:line instead of hanging.
//    A copy issued to a barrier that already has parked waiters is delivered at once.
//  - in_flight_copy(address, bytes): the undelivered asynchronous copy (any barrier) whose
//    destination overlaps the range, so readers (wgmma) can report reading a stage too early;
//    copies_issued() and each copy's `order` tell whether it was issued before or after a reader.
// A barrier used before init, or initialised twice while threads wait on it, aborts the launch.
// State is per block (worker threads run one block at a time): a side table keyed by the
// barrier's shared address, reset when the worker starts another block.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <source_location>
#include <string>
#include <vector>

#include "../engine.hpp"

namespace gpu_sim::ptx {

namespace mbarrier_detail {

/** An asynchronous copy not yet delivered; `deliver` writes its destination. */
struct InFlightCopy {
  unsigned char* destination;
  std::size_t bytes;
  std::uint32_t transaction_bytes;
  std::source_location site;
  std::function<void()> deliver;
  /** Issue order among the block's copies (copies_issued() before it). */
  std::uint64_t order = 0;
};

/** One initialised barrier. */
struct Barrier {
  std::uint32_t expected = 0;
  std::uint32_t pending_arrivals = 0;
  std::int64_t pending_transactions = 0;
  /** Completed phases (the current phase's parity is phase & 1). */
  std::uint64_t phase = 0;
  std::source_location init_site;
  std::vector<InFlightCopy> copies;
  /** Linear ids of parked waiters. */
  std::vector<unsigned> waiters;
};

/** Barriers of the block the worker runs now. */
struct BlockBarriers {
  BlockCursor cursor;
  std::map<std::uint32_t, Barrier> barriers;
  /** Asynchronous copies issued in this block so far. */
  std::uint64_t copies_issued = 0;
};

inline thread_local BlockBarriers tls_block_barriers;

inline BlockBarriers& block_barriers() {
  BlockBarriers& state = tls_block_barriers;
  if (state.cursor.moved()) {
    state.barriers.clear();
    state.copies_issued = 0;
  }
  return state;
}

[[noreturn]] inline void fail(const char* instruction, const std::source_location& site, const std::string& problem) {
  throw KernelFault(current_runner().running_thread_prefix() + instruction + " at " + format_site(site) + " " +
                    problem);
}

}  // namespace mbarrier_detail

/** Offset of `pointer` in the running block's dynamic shared memory (the shared-space address). */
inline std::uint32_t shared_address(const void* pointer, const char* instruction = "a shared-memory instruction",
                                    std::source_location site = std::source_location::current()) {
  BlockRunner& runner = current_runner();
  const auto base = reinterpret_cast<std::uintptr_t>(runner.dynamic_shared());
  const auto address = reinterpret_cast<std::uintptr_t>(pointer);
  if (address < base || address >= base + runner.shape().dynamic_shared_bytes) {
    mbarrier_detail::fail(instruction, site,
                          "passes an address outside the block's dynamic shared memory (" +
                              std::to_string(runner.shape().dynamic_shared_bytes) + " bytes)");
  }
  return static_cast<std::uint32_t>(address - base);
}

/** The pointer of shared-space address `address` (checked against the dynamic shared size). */
inline unsigned char* shared_pointer(std::uint64_t address, std::size_t bytes, const char* instruction,
                                     const std::source_location& site) {
  BlockRunner& runner = current_runner();
  if (address + bytes > runner.shape().dynamic_shared_bytes) {
    mbarrier_detail::fail(instruction, site,
                          "reads shared bytes [" + std::to_string(address) + ", " + std::to_string(address + bytes) +
                              ") past the block's " + std::to_string(runner.shape().dynamic_shared_bytes) +
                              " bytes of dynamic shared memory");
  }
  return static_cast<unsigned char*>(runner.dynamic_shared()) + address;
}

namespace mbarrier_detail {

inline Barrier& find(void* bar, const char* instruction, const std::source_location& site) {
  const std::uint32_t address = shared_address(bar, instruction, site);
  if (address % 8 != 0) fail(instruction, site, "passes an mbarrier address that is not 8-byte aligned");
  auto& barriers = block_barriers().barriers;
  const auto found = barriers.find(address);
  if (found == barriers.end())
    fail(instruction, site, "uses the mbarrier at shared address " + std::to_string(address) + " before mbarrier.init");
  return found->second;
}

/** Completes the phase when nothing is pending; wakes the waiters. True when it woke any. */
inline bool maybe_complete(Barrier& barrier) {
  if (barrier.pending_arrivals != 0 || barrier.pending_transactions != 0) return false;
  barrier.phase++;
  barrier.pending_arrivals = barrier.expected;
  const bool woke = !barrier.waiters.empty();
  for (unsigned waiter : barrier.waiters) current_runner().wake(waiter);
  barrier.waiters.clear();
  return woke;
}

inline void deliver_copies(Barrier& barrier) {
  while (!barrier.copies.empty()) {
    InFlightCopy copy = std::move(barrier.copies.front());
    barrier.copies.erase(barrier.copies.begin());
    copy.deliver();
    barrier.pending_transactions -= copy.transaction_bytes;
  }
  maybe_complete(barrier);
}

}  // namespace mbarrier_detail

/** mbarrier.init.shared.b64 [bar], count. */
inline void mbarrier_init(void* bar, std::uint32_t count, std::source_location site = std::source_location::current()) {
  const char* name = "mbarrier.init";
  const std::uint32_t address = shared_address(bar, name, site);
  if (address % 8 != 0) mbarrier_detail::fail(name, site, "passes an mbarrier address that is not 8-byte aligned");
  if (count == 0 || count >= (1u << 20))
    mbarrier_detail::fail(name, site, "expects " + std::to_string(count) + " arrivals: the count must be 1 … 2^20 − 1");
  auto& barriers = mbarrier_detail::block_barriers().barriers;
  const auto found = barriers.find(address);
  if (found != barriers.end() && (!found->second.waiters.empty() || !found->second.copies.empty())) {
    mbarrier_detail::fail(name, site,
                          "re-initialises the mbarrier at shared address " + std::to_string(address) +
                              " while threads wait on it or copies are in flight to it");
  }
  mbarrier_detail::Barrier& barrier = barriers[address];
  barrier = mbarrier_detail::Barrier{};
  barrier.expected = count;
  barrier.pending_arrivals = count;
  barrier.init_site = site;
}

/** mbarrier.expect_tx: `bytes` more transaction bytes must complete before the current phase can. */
inline void mbarrier_expect_tx(void* bar, std::uint32_t bytes,
                               std::source_location site = std::source_location::current()) {
  mbarrier_detail::find(bar, "mbarrier.expect_tx", site).pending_transactions += bytes;
}

/** mbarrier.arrive.shared.b64: one arrival on the current phase; returns the phase count before the arrival (the state token). */
inline std::uint64_t mbarrier_arrive(void* bar, std::source_location site = std::source_location::current()) {
  mbarrier_detail::Barrier& barrier = mbarrier_detail::find(bar, "mbarrier.arrive", site);
  const std::uint64_t token = barrier.phase;
  if (barrier.pending_arrivals == 0) {
    mbarrier_detail::fail(
        "mbarrier.arrive", site,
        "arrives on a barrier whose current phase has no arrivals left (more arrivals than its count of " +
            std::to_string(barrier.expected) + ")");
  }
  barrier.pending_arrivals--;
  // An arrival that releases waiters is a scheduling point (engine.hpp reschedule): they run
  // before this thread's next step, as they may on a GPU.
  if (mbarrier_detail::maybe_complete(barrier)) current_runner().reschedule();
  return token;
}

/** mbarrier.arrive.expect_tx.shared.b64 [bar], bytes: expect_tx, then arrive. */
inline std::uint64_t mbarrier_arrive_expect_tx(void* bar, std::uint32_t bytes,
                                               std::source_location site = std::source_location::current()) {
  mbarrier_detail::find(bar, "mbarrier.arrive.expect_tx", site).pending_transactions += bytes;
  return mbarrier_arrive(bar, site);
}

/** True when the phase of `parity` has completed (mbarrier.test_wait.parity: never blocks). */
inline bool mbarrier_test_wait_parity(void* bar, std::uint32_t parity,
                                      std::source_location site = std::source_location::current()) {
  const mbarrier_detail::Barrier& barrier = mbarrier_detail::find(bar, "mbarrier.test_wait.parity", site);
  return (barrier.phase & 1u) != (parity & 1u);
}

/** Loops on mbarrier.try_wait.parity until the phase of `parity` has completed (see the file header). */
inline void mbarrier_wait_parity(void* bar, std::uint32_t parity,
                                 std::source_location site = std::source_location::current()) {
  const char* name = "mbarrier.try_wait.parity";
  mbarrier_detail::Barrier& barrier = mbarrier_detail::find(bar, name, site);
  if ((barrier.phase & 1u) != (parity & 1u)) return;
  mbarrier_detail::deliver_copies(barrier);
  while ((barrier.phase & 1u) == (parity & 1u)) {
    barrier.waiters.push_back(current_thread().linear);
    current_runner().park(name, site);
  }
}

/** Registers an asynchronous copy that completes `transaction_bytes` on `bar` when delivered. */
inline void mbarrier_add_copy(void* bar, mbarrier_detail::InFlightCopy copy, const char* instruction) {
  mbarrier_detail::Barrier& barrier = mbarrier_detail::find(bar, instruction, copy.site);
  copy.order = mbarrier_detail::block_barriers().copies_issued++;
  barrier.copies.push_back(std::move(copy));
  // Threads already parked on this barrier wait for exactly this: the copy lands now.
  if (!barrier.waiters.empty()) mbarrier_detail::deliver_copies(barrier);
}

/** Asynchronous copies issued in the running block so far (an InFlightCopy's `order` below it came earlier). */
inline std::uint64_t copies_issued() { return mbarrier_detail::block_barriers().copies_issued; }

/** The undelivered copy whose destination overlaps [address, address + bytes) in the running block, or nullptr. */
inline const mbarrier_detail::InFlightCopy* in_flight_copy(const void* address, std::size_t bytes) {
  const auto* begin = static_cast<const unsigned char*>(address);
  for (const auto& [offset, barrier] : mbarrier_detail::block_barriers().barriers) {
    for (const mbarrier_detail::InFlightCopy& copy : barrier.copies) {
      if (copy.destination < begin + bytes && begin < copy.destination + copy.bytes) return &copy;
    }
  }
  return nullptr;
}

}  // namespace gpu_sim::ptx
