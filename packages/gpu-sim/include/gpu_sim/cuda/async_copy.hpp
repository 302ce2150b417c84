// gpu_sim/cuda/async_copy.hpp — PTX's asynchronous global→shared copies (sm_80 `cp.async`) in
// the simulator, with the visibility rules the device has and does not check.
//
//  - cp_async(dst, src, cp_size, src_size, cache_global): cp.async.{ca,cg}.shared.global with
//    cp-size 4, 8 or 16 (cg: 16 only) and src-size ≤ cp-size (the rest is zero-filled; 0 reads
//    nothing). dst and src must be cp-size aligned, as the PTX ISA requires. The copy is NOT made
//    here: it is queued in the calling thread's open group and its destination is poisoned (every
//    byte 0xff: a NaN in f16/bf16/f32), so a read before the matching wait sees NaN instead of
//    silently seeing data the GPU might not have delivered yet.
//  - commit_group(): closes the thread's open group (an empty one too, as on the device).
//  - wait_group(n): performs the thread's oldest committed groups until at most n are pending;
//    wait_all(): commits and waits for everything. Per thread, like the instructions: other
//    threads see the data after a __syncthreads()/__syncwarp() that follows their waits.
//  - pending_copy(address, bytes): the not yet delivered copy whose destination overlaps
//    [address, address + bytes) in the running block, if any. ldmatrix (mma_sync.hpp) calls it
//    when it reads poison, so reading a stage before its copy arrived aborts the launch naming the
//    kernel, the reading instruction's file:line and the copy's file:line.
// Copies still pending when a block ends are dropped (the GPU would deliver them; a kernel that
// never waits has a bug the destination's NaNs show). State is per block: worker threads run
// one block at a time, so it is thread_local and reset when a new block starts.
#pragma once

#include <cstdint>
#include <cstring>
#include <deque>
#include <source_location>
#include <string>
#include <vector>

#include "../engine.hpp"
#include "async_groups.hpp"

namespace gpu_sim::ptx {

namespace async_detail {

/** One queued copy. */
struct PendingCopy {
  unsigned char* destination;
  const unsigned char* source;
  unsigned bytes;
  unsigned source_bytes;
  std::source_location site;
};

/** The copies of one thread: the open group and the committed ones, oldest first. */
using ThreadCopies = AsyncGroups<PendingCopy>;

/** Every thread's copies in the block the worker runs now. */
struct BlockCopies {
  BlockCursor cursor;
  std::vector<ThreadCopies> threads;
  /** Copies queued and not yet performed in the whole block. */
  std::size_t pending = 0;
};

inline thread_local BlockCopies tls_block_copies;

/** The running block's copies (reset when the worker has moved on to another block). */
inline BlockCopies& block_copies() {
  BlockRunner& runner = current_runner();
  BlockCopies& state = tls_block_copies;
  if (state.cursor.moved()) {
    const Dim3& block = runner.shape().block;
    state.threads.assign(static_cast<std::size_t>(block.x) * block.y * block.z, ThreadCopies{});
    state.pending = 0;
  }
  return state;
}

[[noreturn]] inline void fail(const char* instruction, const std::source_location& site, const std::string& problem) {
  throw KernelFault(current_runner().running_thread_prefix() + instruction + " at " + format_site(site) + " " +
                    problem);
}

inline void perform(const PendingCopy& copy) {
  if (copy.source_bytes > 0) std::memcpy(copy.destination, copy.source, copy.source_bytes);
  std::memset(copy.destination + copy.source_bytes, 0, copy.bytes - copy.source_bytes);
}

}  // namespace async_detail

/** cp.async.{ca,cg}.shared.global [dst], [src], cp_size, src_size (see the file header). */
inline void cp_async(void* destination, const void* source, unsigned cp_size, unsigned source_size, bool cache_global,
                     std::source_location site = std::source_location::current()) {
  const char* name = cache_global ? "cp.async.cg" : "cp.async.ca";
  if (cp_size != 4 && cp_size != 8 && cp_size != 16)
    async_detail::fail(name, site, "copies " + std::to_string(cp_size) + " bytes: cp-size must be 4, 8 or 16");
  if (cache_global && cp_size != 16)
    async_detail::fail(name, site, "copies " + std::to_string(cp_size) + " bytes: .cg supports only 16");
  if (source_size > cp_size) {
    async_detail::fail(name, site,
                       "has src-size " + std::to_string(source_size) + " above its cp-size " + std::to_string(cp_size));
  }
  const auto destination_address = reinterpret_cast<std::uintptr_t>(destination);
  const auto source_address = reinterpret_cast<std::uintptr_t>(source);
  if (destination_address % cp_size != 0 || (source_size > 0 && source_address % cp_size != 0)) {
    async_detail::fail(
        name, site,
        std::string("has a ") + (destination_address % cp_size != 0 ? "shared destination" : "global source") +
            " address that is not " + std::to_string(cp_size) + "-byte aligned (cp-size alignment is required)");
  }
  async_detail::BlockCopies& block = async_detail::block_copies();
  block.threads[current_thread().linear].open.push_back(async_detail::PendingCopy{
      static_cast<unsigned char*>(destination), static_cast<const unsigned char*>(source), cp_size, source_size, site});
  block.pending++;
  std::memset(destination, 0xff, cp_size);
}

/** cp.async.commit_group: the thread's uncommitted copies become one group. */
inline void commit_group() {
  async_detail::ThreadCopies& copies = async_detail::block_copies().threads[current_thread().linear];
  copies.commit();
}

/** cp.async.wait_group n: this thread's committed groups are delivered until at most `n` are pending. */
inline void wait_group(unsigned n) {
  async_detail::BlockCopies& block = async_detail::block_copies();
  async_detail::ThreadCopies& copies = block.threads[current_thread().linear];
  while (copies.committed.size() > n) {
    for (const async_detail::PendingCopy& copy : copies.committed.front()) async_detail::perform(copy);
    block.pending -= copies.committed.front().size();
    copies.committed.pop_front();
  }
}

/** cp.async.wait_all: commit_group, then wait_group 0. */
inline void wait_all() {
  commit_group();
  wait_group(0);
}

/** The queued copy of the running block whose destination overlaps [address, address + bytes), or nullptr. */
inline const async_detail::PendingCopy* pending_copy(const void* address, std::size_t bytes) {
  async_detail::BlockCopies& block = async_detail::block_copies();
  if (block.pending == 0) return nullptr;
  const auto* begin = static_cast<const unsigned char*>(address);
  const auto overlaps = [&](const async_detail::PendingCopy& copy) {
    return copy.destination < begin + bytes && begin < copy.destination + copy.bytes;
  };
  for (const async_detail::ThreadCopies& thread : block.threads) {
    for (const async_detail::PendingCopy& copy : thread.open) {
      if (overlaps(copy)) return &copy;
    }
    for (const auto& group : thread.committed) {
      for (const async_detail::PendingCopy& copy : group) {
        if (overlaps(copy)) return &copy;
      }
    }
  }
  return nullptr;
}

}  // namespace gpu_sim::ptx
