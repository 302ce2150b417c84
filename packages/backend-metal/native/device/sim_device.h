// device/sim_device.h — the simulated machine of the simulator build (tests only): how many GPUs
// it has, their facts and memory, the engine's worker threads, and faults to inject, so every
// probe() reason, the out-of-memory path and command-buffer errors are tested without a Mac.
#pragma once

#include <cstddef>
#include <string>

namespace kiln::metal::sim {

/** What the simulated machine looks like. */
struct SimulatorConfig {
  /** GPUs present (0: probe says no Metal device). */
  int device_count = 1;
  /** macOS version reported ("12.7.0" makes probe say the OS is too old). */
  std::string os_version = "14.5.0";
  /** GPU name. */
  std::string name = "kiln Metal simulator (gpu-sim on the CPU)";
  /** GPU family reported ("apple9", "apple7", "mac2", …; "mac1" is a GPU without Metal 3). */
  std::string family = "apple9";
  /** simdgroup matrices (false selects the threadgroup-tiled matmul, as on AMD GPUs). */
  bool simdgroup_matrix = true;
  /** Simulated GPU memory: allocations beyond it fail (out-of-memory path). */
  std::size_t memory_bytes = std::size_t{4} << 30;
  /** recommendedMaxWorkingSetSize (the default allocation limit). */
  std::size_t recommended_working_set_bytes = std::size_t{3} << 30;
  /** The next committed command buffer fails with this error: "page-fault", "out-of-memory", "timeout" ("" = none). */
  std::string inject_command_buffer_error;
};

/** Replaces the simulated machine (affects devices opened afterwards; injected errors apply at once). */
void configure(const SimulatorConfig& config);

/** The simulated machine. */
SimulatorConfig config();

/** Sets the engine's worker threads (threadgroups of large dispatches run in parallel). */
void set_workers(unsigned workers);

/** The fiber context switch compiled in ("x86-64 assembly", …). */
const char* fiber_implementation();

}  // namespace kiln::metal::sim
