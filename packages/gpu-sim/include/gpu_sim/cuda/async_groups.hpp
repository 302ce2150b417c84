// gpu_sim/cuda/async_groups.hpp — PTX's group discipline for a thread's asynchronous operations
// (cp.async's commit_group / wait_group, cp.async.bulk's commit_group / wait_group.read): the
// operations issued since the last commit, then the committed groups, oldest first. The layers
// that queue such operations (async_copy.hpp, tma.hpp) keep one per thread and decide what
// retiring a group means.
#pragma once

#include <deque>
#include <utility>
#include <vector>

namespace gpu_sim::ptx {

/** One thread's asynchronous operations of one kind, in commit groups. */
template <typename Operation>
struct AsyncGroups {
  /** Issued since the last commit. */
  std::vector<Operation> open;
  /** Committed groups, oldest first. */
  std::deque<std::vector<Operation>> committed;

  /** commit_group: the open operations become the newest group (an empty one too, as on the device). */
  void commit() {
    committed.push_back(std::move(open));
    open.clear();
  }
};

}  // namespace gpu_sim::ptx
