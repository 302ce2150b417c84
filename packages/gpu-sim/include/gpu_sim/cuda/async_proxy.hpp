// gpu_sim/cuda/async_proxy.hpp — which shared-memory bytes the async proxy (TMA, wgmma) may read
// without a fence.proxy.async, checked in the simulator.
//
// On the device, shared-memory stores made through the generic proxy (plain st.shared) reach a
// later async-proxy read — a cp.async.bulk.tensor store's source, a wgmma operand — only after the
// writing thread's fence.proxy.async (then a barrier orders the threads); without it the copy
// engine or the tensor cores may read stale bytes, sometimes. The simulator does not order
// anything here, so it checks instead, per byte of the block's dynamic shared memory:
//  - the bytes the async proxy last saw there (written by a TMA load, or read by a TMA store or a
//    wgmma) and the block's count of fence.proxy.async at that moment are kept;
//  - an async-proxy read of a byte that differs from what the async proxy last saw — so a generic
//    store changed it — while no thread of the block has executed fence.proxy.async since aborts
//    the launch, naming the instruction, the byte's shared address and the async access before;
//  - a byte the async proxy never touched counts as changed: reading it needs a fence since the
//    block started.
// The fence count is the block's, not the writing thread's: a kernel where one thread fences and
// another, writing, does not passes unnoticed; a kernel that leaves the fence out passes nothing.
// State is per block (worker threads run one block at a time), created at the block's first
// async-proxy access or fence.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <source_location>
#include <string>
#include <vector>

#include "mbarrier.hpp"

namespace gpu_sim::ptx {

namespace async_proxy_detail {

/** Fence count of a byte the async proxy has not touched in this block. */
inline constexpr std::uint32_t kUntouched = std::numeric_limits<std::uint32_t>::max();

/** The running block's async-proxy view of its dynamic shared memory. */
struct BlockView {
  BlockCursor cursor;
  /** fence.proxy.async executed by the block's threads so far (saturating below kUntouched). */
  std::uint32_t fences = 0;
  /** Per byte: what the async proxy last saw there. */
  std::vector<unsigned char> seen;
  /** Per byte: `fences` when the async proxy last touched it, or kUntouched. */
  std::vector<std::uint32_t> fence_count;
  /** Per byte: where the async proxy last touched it, an index into `sites`. */
  std::vector<std::uint32_t> site_of;
  /** The distinct async-proxy access sites of the block. */
  std::vector<std::source_location> sites;
  /** The index in `sites` that record() found last (the next call usually has the same site). */
  std::uint32_t last_site = 0;

  /** Records `bytes` bytes from shared address `first` as seen by the async proxy at `site`, holding `values`. */
  void record(std::size_t first, const void* values, std::size_t bytes, const std::source_location& site) {
    const auto same = [&](std::uint32_t index) {
      return sites[index].line() == site.line() && std::strcmp(sites[index].file_name(), site.file_name()) == 0;
    };
    std::uint32_t index = last_site < sites.size() && same(last_site) ? last_site : 0;
    while (index < sites.size() && !same(index)) index++;
    if (index == sites.size()) sites.push_back(site);
    last_site = index;
    std::memcpy(seen.data() + first, values, bytes);
    for (std::size_t i = first; i < first + bytes; i++) {
      fence_count[i] = fences;
      site_of[i] = index;
    }
  }
};

inline thread_local BlockView tls_view;

/** The running block's view, reset (every byte untouched, no fences) when the worker starts another block. */
inline BlockView& block_view() {
  BlockView& view = tls_view;
  if (view.cursor.moved()) {
    const std::size_t bytes = current_runner().shape().dynamic_shared_bytes;
    view.fences = 0;
    view.seen.assign(bytes, 0);
    view.fence_count.assign(bytes, kUntouched);
    view.site_of.assign(bytes, 0);
    view.sites.clear();
    view.last_site = 0;
  }
  return view;
}

/** Shared address of `pointer` in the running block's dynamic shared memory (callers pass checked pointers). */
inline std::size_t offset_of(const void* pointer) {
  return static_cast<std::size_t>(static_cast<const unsigned char*>(pointer) -
                                  static_cast<const unsigned char*>(current_runner().dynamic_shared()));
}

}  // namespace async_proxy_detail

/** fence.proxy.async.shared::cta: this thread's generic-proxy shared stores become visible to later async-proxy reads. */
inline void fence_proxy_async() {
  async_proxy_detail::BlockView& view = async_proxy_detail::block_view();
  if (view.fences + 1 < async_proxy_detail::kUntouched) view.fences++;
}

/** The async proxy wrote `bytes` at `pointer` (a TMA load: issued, then delivered): later async reads of them need no fence. */
inline void async_proxy_wrote(const void* pointer, std::size_t bytes, const std::source_location& site) {
  async_proxy_detail::block_view().record(async_proxy_detail::offset_of(pointer), pointer, bytes, site);
}

/**
 * The async proxy (`instruction` at `site`) reads `bytes` at `pointer`: aborts the launch when a
 * generic store changed one of them since the async proxy last touched it and no fence.proxy.async
 * ran in the block since (see the file header); then records them as seen.
 */
inline void async_proxy_reads(const void* pointer, std::size_t bytes, const char* instruction,
                              const std::source_location& site) {
  async_proxy_detail::BlockView& view = async_proxy_detail::block_view();
  const std::size_t first = async_proxy_detail::offset_of(pointer);
  const auto* current = static_cast<const unsigned char*>(pointer);
  for (std::size_t i = 0; i < bytes; i++) {
    const std::size_t at = first + i;
    const bool untouched = view.fence_count[at] == async_proxy_detail::kUntouched;
    const bool changed = untouched || view.seen[at] != current[i];
    const std::uint32_t fences_before = untouched ? 0 : view.fence_count[at];
    if (!changed || view.fences != fences_before) continue;
    const std::string where = "reads shared address " + std::to_string(at) + ", ";
    mbarrier_detail::fail(
        instruction, site,
        (untouched ? where + "which no async-proxy write landed and no fence.proxy.async has published in this block"
                   : where + "which generic-proxy stores changed after the async proxy's access at " +
                         format_site(view.sites[view.site_of[at]]) + ", with no fence.proxy.async in the block since") +
            ": the async proxy may read stale bytes (fence after the stores, then synchronise, before issuing)");
  }
  view.record(first, pointer, bytes, site);
}

}  // namespace gpu_sim::ptx
