#include "kernel_profiler.h"

#include <algorithm>
#include <unordered_map>

#include "cuda_error.h"

namespace kiln {
namespace {

constexpr std::size_t kNone = static_cast<std::size_t>(-1);

}  // namespace

std::string profile_name(const std::string& description) {
  std::string name;
  name.reserve(description.size());
  int depth = 0;
  for (const char character : description) {
    if (character == '[') depth++;
    if (depth == 0) name += character;
    if (character == ']' && depth > 0) depth--;
  }
  for (const char* detail : {" as ", " by ", " step "}) {
    const std::size_t at = name.find(detail);
    if (at != std::string::npos) name.erase(at);
  }
  std::string collapsed;
  for (const char character : name) {
    if (character == ' ' && (collapsed.empty() || collapsed.back() == ' ')) continue;
    collapsed += character;
  }
  while (!collapsed.empty() && collapsed.back() == ' ') collapsed.pop_back();
  return collapsed;
}

KernelProfiler::~KernelProfiler() {
  for (cudaEvent_t event : events_) cudaEventDestroy(event);
}

cudaEvent_t KernelProfiler::event(std::size_t index) {
  while (events_.size() <= index) {
    cudaEvent_t created = nullptr;
    check_cuda(cudaEventCreateWithFlags(&created, cudaEventDefault), "kernel profile: cudaEventCreateWithFlags");
    events_.push_back(created);
  }
  return events_[index];
}

void KernelProfiler::start(cudaStream_t stream) {
  stream_ = stream;
  used_ = 0;
  pending_start_ = kNone;
  launches_.clear();
  active_ = true;
}

void KernelProfiler::record_start() {
  // A launch context taken without a launch (an upload) leaves a start behind: record over it.
  const std::size_t index = pending_start_ != kNone && pending_start_ + 1 == used_ ? pending_start_ : used_++;
  check_cuda(cudaEventRecord(event(index), stream_), "kernel profile: cudaEventRecord");
  pending_start_ = index;
}

void KernelProfiler::record_end(const std::string& description, const LaunchWork& work) {
  std::size_t start = pending_start_;
  if (start == kNone) {
    if (launches_.empty()) return;  // nothing to time from
    start = launches_.back().end;
  }
  const std::size_t end = used_++;
  check_cuda(cudaEventRecord(event(end), stream_), "kernel profile: cudaEventRecord");
  launches_.push_back(Launch{start, end, description, work});
  pending_start_ = kNone;
}

std::vector<KernelProfileEntry> KernelProfiler::stop() {
  active_ = false;
  std::vector<KernelProfileEntry> entries;
  if (launches_.empty()) return entries;
  check_cuda(cudaEventSynchronize(events_[launches_.back().end]), "kernel profile: cudaEventSynchronize");
  std::unordered_map<std::string, std::size_t> index_of;
  for (const Launch& launch : launches_) {
    float milliseconds = 0;
    check_cuda(cudaEventElapsedTime(&milliseconds, events_[launch.start], events_[launch.end]),
               "kernel profile: cudaEventElapsedTime");
    const std::string name = profile_name(launch.name);
    auto found = index_of.find(name);
    if (found == index_of.end()) {
      found = index_of.emplace(name, entries.size()).first;
      entries.push_back(KernelProfileEntry{name});
    }
    KernelProfileEntry& entry = entries[found->second];
    entry.calls += 1;
    entry.milliseconds += milliseconds;
    entry.bytes += launch.work.bytes;
    entry.flops += launch.work.flops;
  }
  launches_.clear();
  used_ = 0;
  std::sort(entries.begin(), entries.end(),
            [](const KernelProfileEntry& a, const KernelProfileEntry& b) { return a.milliseconds > b.milliseconds; });
  return entries;
}

}  // namespace kiln
