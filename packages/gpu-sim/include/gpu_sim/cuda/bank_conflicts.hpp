// gpu_sim/cuda/bank_conflicts.hpp — shared-memory bank conflicts of ldmatrix, the one shared load
// the simulator sees a whole warp issue at once, counted per process.
//
// Shared memory has 32 banks of 4 bytes. ldmatrix reads each 8×8 b16 matrix's eight 16-byte rows
// in one pass when they lie in eight different 16-byte bank groups (byte address / 16 mod 8); rows
// at the same address are read once; n different rows in one group take n passes. The simulator
// counts the warp-wide ldmatrix instructions that took more passes than matrices, the passes over
// that, and the first such instruction's kernel and site — so a test can require that a swizzled
// layout is read without conflicts. Addresses are the simulator's, whose shared memory is 16-byte
// aligned: a shift by a multiple of 16 bytes moves every row to another group alike, so the count
// is the GPU's. Plain shared loads and stores run thread by thread here: their conflicts are not seen.
#pragma once

#include <cstdint>
#include <mutex>
#include <source_location>
#include <string>

#include "../engine.hpp"

namespace gpu_sim::ptx {

/** What the counters hold: conflicting instructions, their passes beyond one per matrix, the first one. */
struct BankConflicts {
  /** ldmatrix instructions (warp-wide) that needed more than one pass for some matrix. */
  std::uint64_t instructions = 0;
  /** Passes those instructions took beyond one per matrix. */
  std::uint64_t extra_passes = 0;
  /** "kernel 'name': ldmatrix at file:line took n extra passes" for the first, or empty. */
  std::string first;
};

namespace bank_conflict_detail {
inline std::mutex mutex;
inline BankConflicts counts;
}  // namespace bank_conflict_detail

/** Passes beyond one that reading these 8 rows of 16 bytes takes (0: conflict-free). */
inline int extra_passes_of_rows(const void* const (&rows)[8]) {
  int most = 1;
  for (int group = 0; group < 8; group++) {
    int distinct = 0;
    for (int row = 0; row < 8; row++) {
      const auto address = reinterpret_cast<std::uintptr_t>(rows[row]);
      if ((address / 16) % 8 != static_cast<std::uintptr_t>(group)) continue;
      bool seen = false;
      for (int earlier = 0; earlier < row; earlier++) seen = seen || rows[earlier] == rows[row];
      if (!seen) distinct++;
    }
    if (distinct > most) most = distinct;
  }
  return most - 1;
}

/** Counts one instruction at `site` that took `extra` passes beyond one per matrix (extra > 0). */
inline void record_bank_conflict(const char* instruction, int extra, const std::source_location& site) {
  const std::lock_guard<std::mutex> lock(bank_conflict_detail::mutex);
  BankConflicts& counts = bank_conflict_detail::counts;
  counts.instructions++;
  counts.extra_passes += static_cast<std::uint64_t>(extra);
  if (counts.first.empty()) {
    counts.first = std::string("kernel '") + current_runner().shape().kernel_name + "': " + instruction + " at " +
                   format_site(site) + " took " + std::to_string(extra) + " extra pass" + (extra == 1 ? "" : "es");
  }
}

/** The counts since the process started or the last take_bank_conflicts(). */
inline BankConflicts bank_conflicts() {
  const std::lock_guard<std::mutex> lock(bank_conflict_detail::mutex);
  return bank_conflict_detail::counts;
}

/** The counts since the process started or the last take, zeroed. */
inline BankConflicts take_bank_conflicts() {
  const std::lock_guard<std::mutex> lock(bank_conflict_detail::mutex);
  BankConflicts taken = bank_conflict_detail::counts;
  bank_conflict_detail::counts = BankConflicts{};
  return taken;
}

}  // namespace gpu_sim::ptx
