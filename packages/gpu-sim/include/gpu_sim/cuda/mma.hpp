// gpu_sim/cuda/mma.hpp — CUDA's warp matrix functions (`nvcuda::wmma`, <mma.h>) in the simulator.
//
// A fragment's layout across the lanes of a warp is opaque in CUDA, so any layout is a faithful
// one: here element e of the tile (row-major index, e = row·cols + col) lives in lane e % 32,
// slot e / 32. Each lane therefore holds tile_elements / 32 values in `x[]`, as on the device
// (8 per lane for the 16×16 tiles), and elementwise loops over `x[i]` behave as they do there.
//
//  - load_matrix_sync / store_matrix_sync: warp-collective. Every lane of the warp must arrive
//    (a lane that skips it, or exits, aborts the launch naming the kernel and file:line); every
//    lane must pass the same pointer, ldm and layout; the pointer must be 256-bit (32-byte)
//    aligned and ldm a multiple of 16 bytes — CUDA's documented requirements, which the device
//    does not check (it silently loads garbage). Then each lane reads or writes its own slots,
//    so a lane reading what another lane stored without a __syncwarp()/__syncthreads() in between
//    may see the old value, exactly the race it is on the GPU.
//  - mma_sync: warp-collective; the last lane to arrive gathers A, B and C from every lane's
//    fragment, computes D = A·B + C once (products of the 16-bit inputs are exact in f32; sums in
//    f32, k ascending), and scatters D into every lane's fragment. D may alias C.
//  - fill_fragment: per lane, as in CUDA's header (no synchronisation).
//
// Shapes: m16n16k16, m32n8k16, m8n32k16 with __half or __nv_bfloat16 inputs and float or __half
// accumulators. Other types (tf32, integer, sub-byte) are not emulated: they fail to compile.
#pragma once

#include <cstdint>
#include <source_location>
#include <type_traits>

#include "device.hpp"

namespace nvcuda::wmma {

struct row_major;
struct col_major;
struct matrix_a;
struct matrix_b;
struct accumulator;

/** Memory layout of an accumulator load/store. */
enum layout_t { mem_row_major, mem_col_major };

namespace detail {

template <typename T>
inline constexpr bool kInputType = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;
template <typename T>
inline constexpr bool kAccumulatorType = std::is_same_v<T, float> || std::is_same_v<T, __half>;

/** Rows and columns of the tile a fragment holds (matrix_a: m×k, matrix_b: k×n, accumulator: m×n). */
template <typename Use, int M, int N, int K>
struct TileShape;
template <int M, int N, int K>
struct TileShape<matrix_a, M, N, K> {
  static constexpr int kRows = M, kColumns = K;
};
template <int M, int N, int K>
struct TileShape<matrix_b, M, N, K> {
  static constexpr int kRows = K, kColumns = N;
};
template <int M, int N, int K>
struct TileShape<accumulator, M, N, K> {
  static constexpr int kRows = M, kColumns = N;
};

template <int M, int N, int K>
inline constexpr bool kSupportedShape =
    (M == 16 && N == 16 && K == 16) || (M == 32 && N == 8 && K == 16) || (M == 8 && N == 32 && K == 16);

inline float to_float(float value) { return value; }
inline float to_float(__half value) { return __half2float(value); }
inline float to_float(__nv_bfloat16 value) { return __bfloat162float(value); }
template <typename T>
T from_float(float value) {
  if constexpr (std::is_same_v<T, float>)
    return value;
  else if constexpr (std::is_same_v<T, __half>)
    return __float2half_rn(value);
  else
    return __float2bfloat16_rn(value);
}

/** What one lane passes to a load or store (compared across lanes). */
struct MemoryCall {
  std::uintptr_t address;
  unsigned ldm;
  int layout;
  unsigned element_bytes;
};

inline const char* check_memory_calls(const std::uint64_t* values, const std::int32_t*, int, std::uint32_t mask,
                                      std::uint64_t* results, unsigned* offending) {
  const MemoryCall* first = nullptr;
  for (unsigned lane = 0; lane < gpu_sim::kWarpSize; lane++) {
    if ((mask & (1u << lane)) == 0) continue;
    const auto* call = reinterpret_cast<const MemoryCall*>(static_cast<std::uintptr_t>(values[lane]));
    results[lane] = 0;
    *offending = lane;
    if (first == nullptr) first = call;
    if (call->address != first->address)
      return "passes a different pointer than lane 0 (the pointer must be the same in every lane)";
    if (call->ldm != first->ldm) return "passes a different ldm than lane 0 (ldm must be the same in every lane)";
    if (call->layout != first->layout) return "passes a different layout than lane 0";
    if (call->address % 32 != 0)
      return "passes a pointer that is not 256-bit (32-byte) aligned, as the warp matrix functions require";
    if ((call->ldm * call->element_bytes) % 16 != 0)
      return "passes an ldm that is not a multiple of 16 bytes (8 16-bit or 4 32-bit elements)";
  }
  return nullptr;
}

inline constexpr gpu_sim::CollectiveOp kLoadOp{"wmma::load_matrix_sync", check_memory_calls};
inline constexpr gpu_sim::CollectiveOp kStoreOp{"wmma::store_matrix_sync", check_memory_calls};

inline void collective_memory_check(const gpu_sim::CollectiveOp& op, const MemoryCall& call,
                                    const std::source_location& site) {
  gpu_sim::current_runner().collective(op, 0xffffffffu,
                                       static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(&call)), 0,
                                       static_cast<int>(gpu_sim::kWarpSize), site);
}

/** Offset in memory of tile element (row, column) for a row- or column-major layout with leading dimension ldm. */
inline std::size_t memory_offset(int row, int column, unsigned ldm, bool row_major_layout) {
  return row_major_layout ? static_cast<std::size_t>(row) * ldm + static_cast<std::size_t>(column)
                          : static_cast<std::size_t>(column) * ldm + static_cast<std::size_t>(row);
}

}  // namespace detail

/** A tile of an m×n×k warp matrix product, spread over the 32 lanes of a warp (see the file header). */
template <typename Use, int M, int N, int K, typename T, typename Layout = void>
class fragment {
  static_assert(detail::kSupportedShape<M, N, K>,
                "gpu-sim emulates the m16n16k16, m32n8k16 and m8n32k16 warp matrix shapes only");
  static_assert(std::is_same_v<Use, accumulator> ? detail::kAccumulatorType<T> : detail::kInputType<T>,
                "gpu-sim emulates __half/__nv_bfloat16 matrix_a/matrix_b and float/__half accumulator fragments only");

 public:
  /** Rows of the tile. */
  static constexpr int kRows = detail::TileShape<Use, M, N, K>::kRows;
  /** Columns of the tile. */
  static constexpr int kColumns = detail::TileShape<Use, M, N, K>::kColumns;
  /** Elements each lane holds. */
  enum { num_elements = kRows * kColumns / 32 };
  /** Storage elements (no packed types here). */
  enum { num_storage_elements = num_elements };
  using element_type = T;
  using storage_element_type = T;
  /** This lane's elements: slot i is tile element lane + 32·i (row-major). */
  T x[num_elements];
};

/** Every element of the lane's fragment = value (per lane, as in CUDA). */
template <typename Use, int M, int N, int K, typename T, typename Layout>
void fill_fragment(fragment<Use, M, N, K, T, Layout>& target, const T& value) {
  for (int i = 0; i < fragment<Use, M, N, K, T, Layout>::num_elements; i++) target.x[i] = value;
}

namespace detail {

template <typename Fragment, typename T>
void load_lane_slots(Fragment& target, const T* pointer, unsigned ldm, bool row_major_layout) {
  const unsigned lane = gpu_sim::current_thread().lane;
  for (int slot = 0; slot < Fragment::num_elements; slot++) {
    const int element = static_cast<int>(lane) + 32 * slot;
    target.x[slot] =
        pointer[memory_offset(element / Fragment::kColumns, element % Fragment::kColumns, ldm, row_major_layout)];
  }
}

template <typename Fragment, typename T>
void store_lane_slots(T* pointer, const Fragment& source, unsigned ldm, bool row_major_layout) {
  const unsigned lane = gpu_sim::current_thread().lane;
  for (int slot = 0; slot < Fragment::num_elements; slot++) {
    const int element = static_cast<int>(lane) + 32 * slot;
    pointer[memory_offset(element / Fragment::kColumns, element % Fragment::kColumns, ldm, row_major_layout)] =
        source.x[slot];
  }
}

}  // namespace detail

/** Loads a matrix_a/matrix_b tile whose memory layout is the fragment's Layout (warp-collective). */
template <typename Use, int M, int N, int K, typename T, typename Layout>
void load_matrix_sync(fragment<Use, M, N, K, T, Layout>& target, const T* pointer, unsigned ldm,
                      std::source_location site = std::source_location::current()) {
  static_assert(std::is_same_v<Layout, row_major> || std::is_same_v<Layout, col_major>,
                "matrix_a/matrix_b fragments need a row_major or col_major layout");
  const bool row_major_layout = std::is_same_v<Layout, row_major>;
  const detail::MemoryCall call{reinterpret_cast<std::uintptr_t>(pointer), ldm, row_major_layout ? 0 : 1, sizeof(T)};
  detail::collective_memory_check(detail::kLoadOp, call, site);
  detail::load_lane_slots(target, pointer, ldm, row_major_layout);
}

/** Loads an accumulator tile stored in `layout` (warp-collective). */
template <int M, int N, int K, typename T>
void load_matrix_sync(fragment<accumulator, M, N, K, T>& target, const T* pointer, unsigned ldm, layout_t layout,
                      std::source_location site = std::source_location::current()) {
  const detail::MemoryCall call{reinterpret_cast<std::uintptr_t>(pointer), ldm, static_cast<int>(layout), sizeof(T)};
  detail::collective_memory_check(detail::kLoadOp, call, site);
  detail::load_lane_slots(target, pointer, ldm, layout == mem_row_major);
}

/** Stores an accumulator tile in `layout` (warp-collective; each lane writes its own elements). */
template <int M, int N, int K, typename T>
void store_matrix_sync(T* pointer, const fragment<accumulator, M, N, K, T>& source, unsigned ldm, layout_t layout,
                       std::source_location site = std::source_location::current()) {
  const detail::MemoryCall call{reinterpret_cast<std::uintptr_t>(pointer), ldm, static_cast<int>(layout), sizeof(T)};
  detail::collective_memory_check(detail::kStoreOp, call, site);
  detail::store_lane_slots(pointer, source, ldm, layout == mem_row_major);
}

namespace detail {

template <typename D, typename A, typename B, typename C>
struct ProductCall {
  D* d;
  const A* a;
  const B* b;
  const C* c;
};

/** The last lane to arrive computes D = A·B + C for the whole warp. */
template <typename D, typename A, typename B, typename C>
const char* warp_product(const std::uint64_t* values, const std::int32_t*, int, std::uint32_t mask,
                         std::uint64_t* results, unsigned*) {
  constexpr int kM = A::kRows, kK = A::kColumns, kN = B::kColumns;
  float left[kM * kK];
  float right[kK * kN];
  float sum[kM * kN];
  for (unsigned lane = 0; lane < gpu_sim::kWarpSize; lane++) {
    const auto* call = reinterpret_cast<const ProductCall<D, A, B, C>*>(static_cast<std::uintptr_t>(values[lane]));
    for (int slot = 0; slot < A::num_elements; slot++) left[lane + 32 * slot] = to_float(call->a->x[slot]);
    for (int slot = 0; slot < B::num_elements; slot++) right[lane + 32 * slot] = to_float(call->b->x[slot]);
    for (int slot = 0; slot < C::num_elements; slot++) sum[lane + 32 * slot] = to_float(call->c->x[slot]);
    results[lane] = 0;
  }
  for (int row = 0; row < kM; row++) {
    for (int column = 0; column < kN; column++) {
      float total = sum[row * kN + column];
      for (int depth = 0; depth < kK; depth++) total += left[row * kK + depth] * right[depth * kN + column];
      sum[row * kN + column] = total;
    }
  }
  for (unsigned lane = 0; lane < gpu_sim::kWarpSize; lane++) {
    if ((mask & (1u << lane)) == 0) continue;
    const auto* call = reinterpret_cast<const ProductCall<D, A, B, C>*>(static_cast<std::uintptr_t>(values[lane]));
    for (int slot = 0; slot < D::num_elements; slot++)
      call->d->x[slot] = from_float<typename D::element_type>(sum[lane + 32 * slot]);
  }
  return nullptr;
}

template <typename D, typename A, typename B, typename C>
inline constexpr gpu_sim::CollectiveOp kProductOp{"wmma::mma_sync", warp_product<D, A, B, C>};

}  // namespace detail

/** d = a·b + c for the warp's tiles (warp-collective; d may be c). */
template <int M, int N, int K, typename TA, typename LayoutA, typename TB, typename LayoutB, typename TC, typename TD>
void mma_sync(fragment<accumulator, M, N, K, TD>& d, const fragment<matrix_a, M, N, K, TA, LayoutA>& a,
              const fragment<matrix_b, M, N, K, TB, LayoutB>& b, const fragment<accumulator, M, N, K, TC>& c,
              std::source_location site = std::source_location::current()) {
  static_assert(std::is_same_v<TA, TB>, "matrix_a and matrix_b fragments must have the same element type");
  using D = fragment<accumulator, M, N, K, TD>;
  using A = fragment<matrix_a, M, N, K, TA, LayoutA>;
  using B = fragment<matrix_b, M, N, K, TB, LayoutB>;
  using C = fragment<accumulator, M, N, K, TC>;
  const detail::ProductCall<D, A, B, C> call{&d, &a, &b, &c};
  gpu_sim::current_runner().collective(detail::kProductOp<D, A, B, C>, 0xffffffffu,
                                       static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(&call)), 0,
                                       static_cast<int>(gpu_sim::kWarpSize), site);
}

}  // namespace nvcuda::wmma
