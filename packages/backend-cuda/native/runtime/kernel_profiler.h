// runtime/kernel_profiler.h — opt-in per-kernel timing with CUDA events (`kiln train --profile`).
//
// Off (the default) it costs one branch per launch. On, each launch gets an event pair on the
// context's stream: the start is recorded when the launcher takes the launch context (before the
// kernel is queued), the end when the launch is checked (after it); a launcher that queues several
// kernels under one launch context (strided chunks) times the later ones from the previous end.
// read() waits for the last event and folds the pairs by kernel name (the launch description
// without its shapes) into calls, milliseconds and the bytes/flops the launcher declared. The
// simulator's events read the host clock (its stream runs each kernel as it is queued).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "../vendors/vendor.h"

namespace kiln {

/** What one launch moves and computes, when the launcher knows (0 = unknown). */
struct LaunchWork {
  /** Bytes read plus bytes written. */
  double bytes = 0;
  /** Floating-point operations (matmuls, attention). */
  double flops = 0;
};

/** One kernel name's totals over the profiled launches. */
struct KernelProfileEntry {
  std::string name;
  double calls = 0;
  double milliseconds = 0;
  double bytes = 0;
  double flops = 0;
};

/** See the file header. */
class KernelProfiler {
 public:
  KernelProfiler() = default;
  KernelProfiler(const KernelProfiler&) = delete;
  KernelProfiler& operator=(const KernelProfiler&) = delete;
  ~KernelProfiler();

  /** True while launches are timed. */
  bool active() const { return active_; }
  /** Starts timing launches on `stream` (drops what an earlier session recorded). */
  void start(cudaStream_t stream);
  /** Records the start event of the next launch (called when a launcher takes the launch context). */
  void before_launch() {
    if (active_) record_start();
  }
  /** Records the end event of a launch named by `description`. */
  void after_launch(const std::string& description, const LaunchWork& work) {
    if (active_) record_end(description, work);
  }
  /** Stops timing, waits for the recorded events and returns the totals per kernel name (slowest first). Throws NativeError. */
  std::vector<KernelProfileEntry> stop();

 private:
  struct Launch {
    std::size_t start;
    std::size_t end;
    std::string name;
    LaunchWork work;
  };
  void record_start();
  void record_end(const std::string& description, const LaunchWork& work);
  cudaEvent_t event(std::size_t index);

  bool active_ = false;
  cudaStream_t stream_ = nullptr;
  std::vector<cudaEvent_t> events_;
  std::size_t used_ = 0;
  /** Index of the recorded start not yet paired, or npos. */
  std::size_t pending_start_ = static_cast<std::size_t>(-1);
  std::vector<Launch> launches_;
};

/** The profile name of a launch description: shapes ("[…]") and per-call details (" as …", " by …", " step …") dropped. */
std::string profile_name(const std::string& description);

}  // namespace kiln
