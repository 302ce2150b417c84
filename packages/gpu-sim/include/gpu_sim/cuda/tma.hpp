// gpu_sim/cuda/tma.hpp — the sm_90 Tensor Memory Accelerator's tiled bulk tensor copies in the
// simulator: tensor maps as the CUDA driver's cuTensorMapEncodeTiled builds them, and
// `cp.async.bulk.tensor.Nd.shared::cluster.global.mbarrier::complete_tx::bytes`.
//
//  - encode_tensor_map_tiled(map, type, rank, address, dims, strides, box, element_strides,
//    swizzle, oob_nan): validates like the driver (rank 1…5, 16-byte aligned base, byte strides
//    of dimensions 1… multiples of 16 below 2^40, box extents 1…256 with an inner extent of whole
//    16-byte units, element strides 1…8, an inner box of at most the swizzle span) and returns ""
//    or what is wrong. Element strides other than 1 and interleaved layouts are not simulated
//    (reported as such).
//  - tma_load(dst, map, coordinates, bar): the box whose first element is at `coordinates`
//    (innermost first, signed: negative or past the end is out of bounds) lands at `dst` (128-byte
//    aligned, dynamic shared memory) densely, innermost dimension first; elements out of bounds
//    are zero (NaN with oob_nan). With a swizzle the 16-byte unit at shared address a lands at
//    a ^ (((a >> 7) & mask) << 4), mask 1/3/7 for 32/64/128-byte swizzles (PTX's Swizzle<1|2|3,4,3>,
//    the pattern wgmma's descriptors read, wgmma.hpp), on the absolute shared address. The whole
//    box's bytes (zero-filled ones too) complete on `bar` when the copy is delivered. Until then
//    the destination is poisoned (0xff bytes: NaN) and readers that check (wgmma) report a read
//    before arrival with both sites; delivery happens when a thread waits on `bar` (mbarrier.hpp).
//  - tma_store(map, coordinates, src) (`cp.async.bulk.tensor.Nd.global.shared::cta.bulk_group`):
//    the inverse — the shared box at `src`, laid out and swizzled as tma_load lands it, goes to
//    the box's in-bounds elements (out-of-bounds ones are not written). The global writes happen
//    at issue; bulk_commit_group() closes the thread's group of stores and
//    bulk_wait_group_read(n) retires all but its newest n groups, aborting the launch (naming both
//    sites) when a retired store's shared source changed after issue — on the device the copy
//    engine may have read either contents; a block that ends with stores not covered by a wait
//    is reported too (its shared memory goes away). Groups are per thread and per block. A source
//    byte that generic-proxy stores wrote with no fence.proxy.async in the block since aborts the
//    store at issue (async_proxy.hpp); the bytes a tma_load lands need none.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <source_location>
#include <string>
#include <vector>

#include "async_groups.hpp"
#include "async_proxy.hpp"
#include "mbarrier.hpp"

namespace gpu_sim::cuda {

/** Swizzle modes, numbered as CUtensorMapSwizzle. */
enum class TensorMapSwizzle : std::uint32_t { kNone = 0, k32B = 1, k64B = 2, k128B = 3 };

/** A tiled tensor map (the simulator's CUtensorMap; passed to kernels by value). */
struct alignas(64) TensorMap {
  /** kMagic once encoded. */
  std::uint32_t magic = 0;
  std::uint32_t rank = 0;
  std::uint32_t element_bytes = 0;
  TensorMapSwizzle swizzle = TensorMapSwizzle::kNone;
  const unsigned char* address = nullptr;
  std::uint64_t dims[5] = {};
  /** Byte strides; strides[0] is the element size. */
  std::uint64_t strides[5] = {};
  std::uint32_t box[5] = {};
  bool oob_nan = false;
  static constexpr std::uint32_t kMagic = 0x544d4150u;
};

/** Bytes of the span a swizzle mode permutes within (16 for none). */
inline std::uint32_t swizzle_span(TensorMapSwizzle swizzle) {
  return swizzle == TensorMapSwizzle::k128B  ? 128u
         : swizzle == TensorMapSwizzle::k64B ? 64u
         : swizzle == TensorMapSwizzle::k32B ? 32u
                                             : 16u;
}

/** The swizzled shared address of byte address `address` (Swizzle<B,4,3> on the absolute address). */
inline std::uint64_t swizzle_address(std::uint64_t address, TensorMapSwizzle swizzle) {
  const std::uint64_t mask = swizzle == TensorMapSwizzle::k128B  ? 7u
                             : swizzle == TensorMapSwizzle::k64B ? 3u
                             : swizzle == TensorMapSwizzle::k32B ? 1u
                                                                 : 0u;
  return address ^ (((address >> 7) & mask) << 4);
}

/** cuTensorMapEncodeTiled (non-interleaved, no L2 promotion hints): "" or what is wrong. */
inline std::string encode_tensor_map_tiled(TensorMap& map, std::uint32_t element_bytes, std::uint32_t rank,
                                           const void* address, const std::uint64_t* dims, const std::uint64_t* strides,
                                           const std::uint32_t* box, const std::uint32_t* element_strides,
                                           TensorMapSwizzle swizzle, bool oob_nan) {
  map = TensorMap{};
  if (element_bytes != 1 && element_bytes != 2 && element_bytes != 4 && element_bytes != 8)
    return "element size must be 1, 2, 4 or 8 bytes";
  if (rank < 1 || rank > 5) return "tensor rank " + std::to_string(rank) + " is outside 1…5";
  if (reinterpret_cast<std::uintptr_t>(address) % 16 != 0) return "global address is not 16-byte aligned";
  for (std::uint32_t i = 0; i < rank; i++) {
    const std::string where = " of dimension " + std::to_string(i);
    if (dims[i] == 0 || dims[i] > (1ull << 32))
      return "globalDim" + where + " is " + std::to_string(dims[i]) + ", outside 1…2^32";
    if (box[i] == 0 || box[i] > 256) return "boxDim" + where + " is " + std::to_string(box[i]) + ", outside 1…256";
    if (element_strides[i] == 0 || element_strides[i] > 8)
      return "elementStrides" + where + " is " + std::to_string(element_strides[i]) + ", outside 1…8";
    if (element_strides[i] != 1) return "elementStrides other than 1 are not simulated";
    if (i > 0) {
      const std::uint64_t stride = strides[i - 1];
      if (stride % 16 != 0 || stride >= (1ull << 40))
        return "globalStrides" + where + " is " + std::to_string(stride) +
               " bytes: it must be a multiple of 16 below 2^40";
    }
  }
  if ((box[0] * element_bytes) % 16 != 0)
    return "the inner box extent (boxDim[0] · element size = " + std::to_string(box[0] * element_bytes) +
           " bytes) is not a multiple of 16 bytes";
  if (swizzle != TensorMapSwizzle::kNone && box[0] * element_bytes > swizzle_span(swizzle)) {
    return "the inner box extent (" + std::to_string(box[0] * element_bytes) + " bytes) exceeds the swizzle span of " +
           std::to_string(swizzle_span(swizzle)) + " bytes";
  }
  map.magic = TensorMap::kMagic;
  map.rank = rank;
  map.element_bytes = element_bytes;
  map.swizzle = swizzle;
  map.address = static_cast<const unsigned char*>(address);
  map.strides[0] = element_bytes;
  for (std::uint32_t i = 0; i < rank; i++) {
    map.dims[i] = dims[i];
    map.box[i] = box[i];
    if (i > 0) map.strides[i] = strides[i - 1];
  }
  map.oob_nan = oob_nan;
  return "";
}

/** Bytes of one box of `map`. */
inline std::uint32_t box_bytes(const TensorMap& map) {
  std::uint32_t bytes = map.element_bytes;
  for (std::uint32_t i = 0; i < map.rank; i++) bytes *= map.box[i];
  return bytes;
}

}  // namespace gpu_sim::cuda

namespace gpu_sim::ptx {

namespace tma_detail {

/**
 * Walks the box of `map` at `coordinates` laid out from shared address `shared_base`: calls
 * visit(shared byte, global byte or nullptr when out of bounds) per element, innermost first.
 */
template <typename Visit>
void walk_box(const cuda::TensorMap& map, const std::int64_t (&coordinates)[5], std::uint32_t shared_base,
              Visit&& visit) {
  auto* shared = static_cast<unsigned char*>(current_runner().dynamic_shared());
  std::uint32_t index[5] = {};
  const std::uint32_t count = cuda::box_bytes(map) / map.element_bytes;
  for (std::uint32_t element = 0; element < count; element++) {
    std::uint64_t dense = 0;
    std::uint64_t pitch = map.element_bytes;
    std::uint64_t offset = 0;
    bool inside = true;
    for (std::uint32_t d = 0; d < map.rank; d++) {
      dense += index[d] * pitch;
      pitch *= map.box[d];
      const std::int64_t coordinate = coordinates[d] + index[d];
      inside = inside && coordinate >= 0 && static_cast<std::uint64_t>(coordinate) < map.dims[d];
      offset += static_cast<std::uint64_t>(coordinate) * map.strides[d];
    }
    visit(shared + cuda::swizzle_address(shared_base + dense, map.swizzle),
          inside ? const_cast<unsigned char*>(map.address) + offset : nullptr);
    for (std::uint32_t d = 0; d < map.rank; d++) {
      if (++index[d] < map.box[d]) break;
      index[d] = 0;
    }
  }
}

/** Writes the box of `map` at `coordinates` to shared address `destination` (see the file header): an async-proxy write issued at `site`. */
inline void deliver(const cuda::TensorMap& map, const std::int64_t (&coordinates)[5], std::uint32_t destination,
                    const std::source_location& site) {
  walk_box(map, coordinates, destination, [&](unsigned char* target, const unsigned char* source) {
    if (source != nullptr) {
      std::memcpy(target, source, map.element_bytes);
    } else {
      std::memset(target, map.oob_nan ? 0xff : 0, map.element_bytes);
    }
  });
  async_proxy_wrote(static_cast<unsigned char*>(current_runner().dynamic_shared()) + destination, cuda::box_bytes(map),
                    site);
}

/** A bulk tensor store whose shared source the copy engine may still read: the bytes it was issued with. */
struct PendingStore {
  const unsigned char* source;
  std::vector<unsigned char> issued;
  std::source_location site;
};

/** One thread's bulk stores: not committed yet, then committed groups, oldest first. */
using BulkGroups = AsyncGroups<PendingStore>;

/** The bulk async-groups of the running block's threads (by linear id), reset per block as mbarriers are. */
struct BlockBulkGroups {
  BlockCursor cursor;
  std::map<unsigned, BulkGroups> threads;
};

inline thread_local BlockBulkGroups tls_bulk_groups;

/** Block-end check: bulk stores a thread issued and never waited for (their shared sources go away with the block). */
inline std::string unwaited_bulk_stores(bool) {
  std::string text;
  for (const auto& [linear, groups] : tls_bulk_groups.threads) {
    std::size_t stores = groups.open.size();
    const PendingStore* first = groups.open.empty() ? nullptr : &groups.open.front();
    for (const auto& group : groups.committed) {
      stores += group.size();
      if (first == nullptr && !group.empty()) first = &group.front();
    }
    if (stores == 0) continue;
    if (!text.empty()) text += "; ";
    text += "thread " + std::to_string(linear) + " has " + std::to_string(stores) +
            " bulk tensor store(s), the first issued at " + format_site(first->site) +
            ", not covered by a cp.async.bulk.wait_group.read";
  }
  if (text.empty()) return text;
  return "ends while the copy engine may still read shared memory: " + text;
}

inline BulkGroups& thread_bulk_groups() {
  BlockRunner& runner = current_runner();
  BlockBulkGroups& state = tls_bulk_groups;
  if (state.cursor.moved()) {
    state.threads.clear();
    runner.add_block_end_check(&unwaited_bulk_stores);
  }
  return state.threads[current_thread().linear];
}

/** The checks tma_load and tma_store share: an encoded map of rank Rank and a 128-byte aligned box inside dynamic shared memory. */
template <int Rank>
std::uint32_t checked_box(const cuda::TensorMap* map, const void* shared, const char* name,
                          const std::source_location& site) {
  if (map == nullptr || map->magic != cuda::TensorMap::kMagic)
    mbarrier_detail::fail(name, site, "uses a tensor map that was not encoded (cuTensorMapEncodeTiled)");
  if (static_cast<std::uint32_t>(Rank) != map->rank) {
    mbarrier_detail::fail(
        name, site,
        "gives " + std::to_string(Rank) + " coordinates for a tensor map of rank " + std::to_string(map->rank));
  }
  const std::uint32_t address = shared_address(shared, name, site);
  if (address % 128 != 0) mbarrier_detail::fail(name, site, "has a shared box that is not 128-byte aligned");
  shared_pointer(address, cuda::box_bytes(*map), name, site);
  return address;
}

}  // namespace tma_detail

/** cp.async.bulk.tensor.{rank}d.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [map, {coordinates}], [bar]. */
template <int Rank>
void tma_load(void* destination, const cuda::TensorMap* map, const std::int32_t (&coordinates)[Rank], void* bar,
              std::source_location site = std::source_location::current()) {
  const char* name = "cp.async.bulk.tensor";
  const std::uint32_t address = tma_detail::checked_box<Rank>(map, destination, name, site);
  const std::uint32_t bytes = cuda::box_bytes(*map);
  std::int64_t at[5] = {};
  for (int i = 0; i < Rank; i++) at[i] = coordinates[i];
  auto* target = static_cast<unsigned char*>(destination);
  std::memset(target, 0xff, bytes);
  async_proxy_wrote(target, bytes, site);  // the poison stands for the copy in flight
  const cuda::TensorMap copy = *map;
  mbarrier_add_copy(
      bar,
      mbarrier_detail::InFlightCopy{target, bytes, bytes, site,
                                    [copy, at, address, site]() { tma_detail::deliver(copy, at, address, site); }},
      name);
}

/**
 * cp.async.bulk.tensor.{rank}d.global.shared::cta.bulk_group [map, {coordinates}], [source]: the
 * box at `source` (laid out and swizzled as tma_load lands it) goes to the in-bounds elements of
 * the box of `map` at `coordinates`; out-of-bounds ones are not written. Written at issue; the
 * source must stay unchanged until a bulk_wait_group_read covers the store (checked there).
 */
template <int Rank>
void tma_store(const cuda::TensorMap* map, const std::int32_t (&coordinates)[Rank], const void* source,
               std::source_location site = std::source_location::current()) {
  const char* name = "cp.async.bulk.tensor (store)";
  const std::uint32_t address = tma_detail::checked_box<Rank>(map, source, name, site);
  std::int64_t at[5] = {};
  for (int i = 0; i < Rank; i++) at[i] = coordinates[i];
  async_proxy_reads(source, cuda::box_bytes(*map), name, site);
  tma_detail::walk_box(*map, at, address, [&](const unsigned char* from, unsigned char* to) {
    if (to != nullptr) std::memcpy(to, from, map->element_bytes);
  });
  const auto* bytes = static_cast<const unsigned char*>(source);
  tma_detail::thread_bulk_groups().open.push_back(
      tma_detail::PendingStore{bytes, std::vector<unsigned char>(bytes, bytes + cuda::box_bytes(*map)), site});
}

/** cp.async.bulk.commit_group: this thread's bulk stores since the last commit become one group. */
inline void bulk_commit_group() { tma_detail::thread_bulk_groups().commit(); }

/**
 * cp.async.bulk.wait_group.read n: this thread's committed groups but the newest n have read their
 * sources — a source changed since its store was issued aborts the launch naming both sites (the
 * copy engine may have read either contents).
 */
inline void bulk_wait_group_read(int n, std::source_location site = std::source_location::current()) {
  tma_detail::BulkGroups& groups = tma_detail::thread_bulk_groups();
  while (groups.committed.size() > static_cast<std::size_t>(n < 0 ? 0 : n)) {
    for (const tma_detail::PendingStore& store : groups.committed.front()) {
      if (std::memcmp(store.source, store.issued.data(), store.issued.size()) != 0) {
        mbarrier_detail::fail("cp.async.bulk.wait_group.read", site,
                              "finds the shared source of the bulk tensor store issued at " + format_site(store.site) +
                                  " changed before this wait");
      }
    }
    groups.committed.pop_front();
  }
}

}  // namespace gpu_sim::ptx
