// Self-test of the sm_90 emulation (gpu_sim/cuda/mbarrier.hpp, tma.hpp, wgmma.hpp): TMA boxes in
// every swizzle mode against the swizzle formula (out-of-bounds zero fill, poison before the
// barrier phase), wgmma m64nNk16 through descriptors in every swizzle mode with K-major and
// MN-major operands against a scalar product, queued accumulators, tensor-map validation, and the
// misuse the device does not report (a barrier phase that never completes, a wgmma reading a stage
// before its copy arrived, a warp skipping a warpgroup collective, a bulk store's source changed
// before its wait, a block ending with a bulk store not waited for); TMA stores of partial boxes
// in two swizzle modes. Prints "ok <name>" per check,
// or "FAIL <name>: <why>"; exits 1 on failure.
#include <gpu_sim/cuda/wgmma.hpp>
#include <gpu_sim/cuda/runtime.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "launch_and_wait.hpp"
#include "self_test.hpp"

using self_test::check;
using self_test::contains;

using gpu_sim::cuda::TensorMap;
using gpu_sim::cuda::TensorMapSwizzle;
using gpu_sim::ptx::MmaInput;

/** One block of `block` threads (launch_and_wait). */
template <typename... Parameters, typename... Arguments>
static cudaError_t launch(const char* name, void (*kernel)(Parameters...), dim3 block, std::size_t shared,
                          Arguments... arguments) {
  return self_test::launch_and_wait(name, kernel, dim3(1), block, shared, arguments...);
}

template <typename T>
static T* device_copy(const std::vector<T>& values) {
  void* pointer = nullptr;
  cudaMalloc(&pointer, values.size() * sizeof(T));
  std::memcpy(pointer, values.data(), values.size() * sizeof(T));
  return static_cast<T*>(pointer);
}

/** A 2D map of 16-bit elements: `columns` contiguous, `rows` rows, box `box_columns` × `box_rows`. */
static TensorMap map_2d(const void* data, std::uint64_t columns, std::uint64_t rows, std::uint32_t box_columns,
                        std::uint32_t box_rows, TensorMapSwizzle swizzle) {
  TensorMap map;
  const std::uint64_t dims[2] = {columns, rows};
  const std::uint64_t strides[1] = {columns * 2};
  const std::uint32_t box[2] = {box_columns, box_rows};
  const std::uint32_t element_strides[2] = {1, 1};
  const std::string error =
      gpu_sim::cuda::encode_tensor_map_tiled(map, 2, 2, data, dims, strides, box, element_strides, swizzle, false);
  if (!error.empty()) std::printf("encode failed: %s\n", error.c_str());
  return map;
}

// One thread loads a box at (column0, row0) and copies the shared bytes out raw; poisoned[0] is
// the first element read before the wait.
__global__ void box_kernel(const TensorMap map, int column0, int row0, unsigned bytes, std::uint16_t* out,
                           std::uint16_t* poisoned) {
  GPU_SIM_EXTERN_SHARED(unsigned char, shared);
  if (threadIdx.x != 0) return;
  auto* bar = reinterpret_cast<std::uint64_t*>(shared);
  unsigned char* stage = shared + 1024;
  gpu_sim::ptx::mbarrier_init(bar, 1);
  gpu_sim::ptx::mbarrier_arrive_expect_tx(bar, bytes);
  const std::int32_t coordinates[2] = {column0, row0};
  gpu_sim::ptx::tma_load(stage, &map, coordinates, bar);
  std::memcpy(poisoned, stage, 2);
  gpu_sim::ptx::mbarrier_wait_parity(bar, 0);
  std::memcpy(out, stage, bytes);
}

// One thread lays out element (r, c) of a box as tma_load would land value base + r·columns + c,
// fences its stores for the async proxy, stores the box at (column0, row0) with tma_store, commits
// and waits for the read; misuse 1 changes the source after issuing (bulk_wait_group_read reports
// it), misuse 2 never waits (the block's end reports it), misuse 3 leaves the fence out (tma_store
// reports it).
__global__ void store_box_kernel(const TensorMap map, int column0, int row0, std::uint16_t base, int misuse) {
  GPU_SIM_EXTERN_SHARED(unsigned char, shared);
  if (threadIdx.x != 0) return;
  unsigned char* box = shared + 1024;
  for (std::uint32_t r = 0; r < map.box[1]; r++) {
    for (std::uint32_t c = 0; c < map.box[0]; c++) {
      const std::uint64_t at = gpu_sim::cuda::swizzle_address(1024 + (r * map.box[0] + c) * 2, map.swizzle) - 1024;
      const auto value = static_cast<std::uint16_t>(base + r * map.box[0] + c);
      std::memcpy(box + at, &value, 2);
    }
  }
  if (misuse != 3) gpu_sim::ptx::fence_proxy_async();
  const std::int32_t coordinates[2] = {column0, row0};
  gpu_sim::ptx::tma_store(&map, coordinates, box);
  gpu_sim::ptx::bulk_commit_group();
  if (misuse == 1) box[0] ^= 1;
  if (misuse != 2) gpu_sim::ptx::bulk_wait_group_read(0);
}

static void check_store_box(TensorMapSwizzle swizzle, const char* name) {
  const int columns = 72, rows = 20;
  std::vector<std::uint16_t> sentinel(columns * rows, 7);
  std::uint16_t* data = device_copy(sentinel);
  const std::uint32_t box_columns = gpu_sim::cuda::swizzle_span(swizzle) / 2, box_rows = 16;
  const TensorMap map = map_2d(data, columns, rows, box_columns, box_rows, swizzle);
  const int column0 = columns - static_cast<int>(box_columns) / 2, row0 = 10;
  const cudaError_t error = launch("store_box_kernel", store_box_kernel, dim3(32), 1024 + box_columns * box_rows * 2,
                                   map, column0, row0, static_cast<std::uint16_t>(100), 0);
  std::string detail = error == cudaSuccess ? "" : gpu_sim_cuda_fault_detail();
  for (int row = 0; row < rows && detail.empty(); row++) {
    for (int column = 0; column < columns && detail.empty(); column++) {
      const int r = row - row0, c = column - column0;
      const bool inside = r >= 0 && c >= 0 && r < static_cast<int>(box_rows) && c < static_cast<int>(box_columns);
      const std::uint16_t expected = inside ? static_cast<std::uint16_t>(100 + r * box_columns + c) : 7;
      if (data[row * columns + column] != expected)
        detail = "element (" + std::to_string(row) + ", " + std::to_string(column) +
                 ") = " + std::to_string(data[row * columns + column]) + ", expected " + std::to_string(expected);
    }
  }
  check(detail.empty(), name, detail);
}

static void check_box(TensorMapSwizzle swizzle, const char* name) {
  const int columns = 72, rows = 20;
  std::vector<std::uint16_t> values(columns * rows);
  for (int i = 0; i < columns * rows; i++) values[i] = static_cast<std::uint16_t>(i + 1);
  const std::uint32_t box_columns = gpu_sim::cuda::swizzle_span(swizzle) / 2, box_rows = 16;
  const TensorMap map = map_2d(device_copy(values), columns, rows, box_columns, box_rows, swizzle);
  const unsigned bytes = box_columns * box_rows * 2;
  std::uint16_t* out = device_copy(std::vector<std::uint16_t>(bytes / 2, 7));
  std::uint16_t* poisoned = device_copy(std::vector<std::uint16_t>(1, 7));
  const int column0 = columns - static_cast<int>(box_columns) / 2, row0 = 10;
  const cudaError_t error =
      launch("box_kernel", box_kernel, dim3(32), 1024 + bytes, map, column0, row0, bytes, out, poisoned);
  std::string detail = error == cudaSuccess ? "" : gpu_sim_cuda_fault_detail();
  if (detail.empty() && poisoned[0] != 0xffffu)
    detail = "the destination read before the wait was " + std::to_string(poisoned[0]) + ", not poison";
  for (std::uint32_t r = 0; r < box_rows && detail.empty(); r++) {
    for (std::uint32_t c = 0; c < box_columns && detail.empty(); c++) {
      const std::uint64_t at = gpu_sim::cuda::swizzle_address(1024 + (r * box_columns + c) * 2, swizzle) - 1024;
      const int row = row0 + static_cast<int>(r), column = column0 + static_cast<int>(c);
      const std::uint16_t expected = row < rows && column < columns ? values[row * columns + column] : 0;
      if (out[at / 2] != expected)
        detail = "box (" + std::to_string(r) + ", " + std::to_string(c) + ") = " + std::to_string(out[at / 2]) +
                 ", expected " + std::to_string(expected);
    }
  }
  check(detail.empty(), name, detail);
}

/** A wgmma shared-memory matrix descriptor. */
static std::uint64_t descriptor(std::uint32_t start, std::uint32_t lbo, std::uint32_t sbo, TensorMapSwizzle swizzle) {
  const std::uint64_t mode = swizzle == TensorMapSwizzle::k128B  ? 1
                             : swizzle == TensorMapSwizzle::k64B ? 2
                             : swizzle == TensorMapSwizzle::k32B ? 3
                                                                 : 0;
  return ((start >> 4) & 0x3fffu) | (static_cast<std::uint64_t>((lbo >> 4) & 0x3fffu) << 16) |
         (static_cast<std::uint64_t>((sbo >> 4) & 0x3fffu) << 32) | (mode << 62);
}

constexpr int kN = 32;
constexpr int kK = 48;

/** Where one operand (rows × kK) sits in shared memory and how its boxes were loaded. */
struct OperandLayout {
  bool mn_major;
  int rows;
  TensorMapSwizzle swizzle;
  /** Elements per swizzle row (span / 2). */
  int per_row() const { return static_cast<int>(gpu_sim::cuda::swizzle_span(swizzle)) / 2; }
  int span() const { return static_cast<int>(gpu_sim::cuda::swizzle_span(swizzle)); }
  /** Boxes loaded (along k when K-major, along rows when MN-major). */
  int boxes() const { return mn_major ? (rows + per_row() - 1) / per_row() : (kK + per_row() - 1) / per_row(); }
  int box_bytes() const { return mn_major ? kK * span() : rows * span(); }
  /** The descriptor of the k16 step `step` for a tile at shared address `base`. */
  std::uint64_t step_descriptor(std::uint32_t base, int step) const {
    const int k0 = step * 16;
    if (mn_major) {
      if (swizzle == TensorMapSwizzle::kNone)
        return descriptor(base + k0 * 16, 128, static_cast<std::uint32_t>(box_bytes()), swizzle);
      return descriptor(base + k0 * span(), static_cast<std::uint32_t>(box_bytes()), 8 * span(), swizzle);
    }
    const std::uint32_t start = base + (k0 / per_row()) * box_bytes() + (k0 % per_row()) * 2;
    return descriptor(start, swizzle == TensorMapSwizzle::kNone ? static_cast<std::uint32_t>(box_bytes()) : 16,
                      8 * span(), swizzle);
  }
};

// 128 threads: thread 0 loads A (64 × kK) and B (kN × kK) by boxes, everyone waits, three k16
// steps of wgmma m64n32k16, one group each with up to two groups in flight (wait_group 1) as a
// pipelined kernel keeps them; out [64][kN] from the fragment layout; nan_before[0] = 1 when the
// accumulators read NaN between the first commit and its wait.
template <MmaInput Type>
__global__ void wgmma_kernel(const TensorMap map_a, const TensorMap map_b, OperandLayout layout_a,
                             OperandLayout layout_b, float* out, int* nan_before) {
  GPU_SIM_EXTERN_SHARED(unsigned char, shared);
  auto* bar = reinterpret_cast<std::uint64_t*>(shared);
  unsigned char* tile_a = shared + 1024;
  unsigned char* tile_b = tile_a + 8192;
  if (threadIdx.x == 0) {
    gpu_sim::ptx::mbarrier_init(bar, 1);
    gpu_sim::ptx::mbarrier_arrive_expect_tx(
        bar, static_cast<unsigned>(layout_a.boxes() * layout_a.box_bytes() + layout_b.boxes() * layout_b.box_bytes()));
    for (int box = 0; box < layout_a.boxes(); box++) {
      const std::int32_t at[2] = {box * layout_a.per_row(), 0};
      gpu_sim::ptx::tma_load(tile_a + box * layout_a.box_bytes(), &map_a, at, bar);
    }
    for (int box = 0; box < layout_b.boxes(); box++) {
      const std::int32_t at[2] = {box * layout_b.per_row(), 0};
      gpu_sim::ptx::tma_load(tile_b + box * layout_b.box_bytes(), &map_b, at, bar);
    }
  }
  __syncthreads();
  gpu_sim::ptx::mbarrier_wait_parity(bar, 0);
  float d[kN / 2];
  for (float& value : d) value = 0.0f;
  const std::uint32_t base_a = gpu_sim::ptx::shared_address(tile_a), base_b = gpu_sim::ptx::shared_address(tile_b);
  gpu_sim::ptx::wgmma_fence();
  for (int step = 0; step < kK / 16; step++) {
    gpu_sim::ptx::wgmma_mma_async<kN, Type>(d, layout_a.step_descriptor(base_a, step),
                                            layout_b.step_descriptor(base_b, step), step > 0, layout_a.mn_major,
                                            layout_b.mn_major);
    gpu_sim::ptx::wgmma_commit_group();
    if (step == 0 && threadIdx.x == 0) nan_before[0] = std::isnan(d[0]) ? 1 : 0;
    gpu_sim::ptx::wgmma_wait_group(1);
  }
  gpu_sim::ptx::wgmma_wait_group(0);
  const int t = static_cast<int>(threadIdx.x), warp = t / 32, g = (t % 32) / 4, q = t % 4;
  for (int i = 0; i < kN / 2; i++) out[(16 * warp + g + ((i & 2) ? 8 : 0)) * kN + 8 * (i / 4) + 2 * q + (i & 1)] = d[i];
}

template <MmaInput Type>
static void check_wgmma(TensorMapSwizzle swizzle, bool a_mn_major, bool b_mn_major, const char* name) {
  const auto encode = [](float value) {
    return Type == MmaInput::kF16 ? gpu_sim::f32_to_f16_bits(value) : gpu_sim::f32_to_bf16_bits(value);
  };
  std::vector<float> a(64 * kK), b(kN * kK);  // a[m][k], b[n][k]
  for (int i = 0; i < 64 * kK; i++) a[i] = static_cast<float>((i * 7) % 11 - 5) / 4.0f;
  for (int i = 0; i < kN * kK; i++) b[i] = static_cast<float>((i * 5) % 13 - 6) / 2.0f;
  // Global storage: K-major operands row-major [rows][k]; MN-major ones [k][rows].
  const auto store = [&](const std::vector<float>& values, int rows, bool mn_major) {
    std::vector<std::uint16_t> bits(values.size());
    for (int r = 0; r < rows; r++) {
      for (int k = 0; k < kK; k++) bits[mn_major ? k * rows + r : r * kK + k] = encode(values[r * kK + k]);
    }
    return device_copy(bits);
  };
  const OperandLayout layout_a{a_mn_major, 64, swizzle}, layout_b{b_mn_major, kN, swizzle};
  const auto map_of = [&](const OperandLayout& layout, const std::vector<float>& values) {
    const void* data = store(values, layout.rows, layout.mn_major);
    return layout.mn_major ? map_2d(data, layout.rows, kK, layout.per_row(), kK, swizzle)
                           : map_2d(data, kK, layout.rows, layout.per_row(), layout.rows, swizzle);
  };
  const TensorMap map_a = map_of(layout_a, a), map_b = map_of(layout_b, b);
  float* out = device_copy(std::vector<float>(64 * kN, -99.0f));
  int* nan_before = device_copy(std::vector<int>(1, 0));
  const cudaError_t error = launch("wgmma_kernel", wgmma_kernel<Type>, dim3(128), 1024 + 8192 + 8192, map_a, map_b,
                                   layout_a, layout_b, out, nan_before);
  std::string detail = error == cudaSuccess ? "" : gpu_sim_cuda_fault_detail();
  if (detail.empty() && nan_before[0] != 1)
    detail = "the accumulators were not NaN between commit_group and wait_group";
  for (int index = 0; index < 64 * kN && detail.empty(); index++) {
    float expected = 0.0f;
    for (int k = 0; k < kK; k++) expected += a[(index / kN) * kK + k] * b[(index % kN) * kK + k];
    if (out[index] != expected)
      detail = "out[" + std::to_string(index) + "] = " + std::to_string(out[index]) + ", expected " +
               std::to_string(expected);
  }
  check(detail.empty(), name, detail);
}

// A from registers: each thread packs its fragment of a [64][kK] (16-bit bits in global memory)
// per k16 step; B (kN × kK) through TMA as in wgmma_kernel. `clobber` changes the registers
// before the wait (a misuse the simulator must report).
template <MmaInput Type>
__global__ void wgmma_rs_kernel(const TensorMap map_b, OperandLayout layout_b, const std::uint16_t* a_bits, float* out,
                                int clobber) {
  GPU_SIM_EXTERN_SHARED(unsigned char, shared);
  auto* bar = reinterpret_cast<std::uint64_t*>(shared);
  unsigned char* tile_b = shared + 1024;
  if (threadIdx.x == 0) {
    gpu_sim::ptx::mbarrier_init(bar, 1);
    gpu_sim::ptx::mbarrier_arrive_expect_tx(bar, static_cast<unsigned>(layout_b.boxes() * layout_b.box_bytes()));
    for (int box = 0; box < layout_b.boxes(); box++) {
      const std::int32_t at[2] = {box * layout_b.per_row(), 0};
      gpu_sim::ptx::tma_load(tile_b + box * layout_b.box_bytes(), &map_b, at, bar);
    }
  }
  __syncthreads();
  gpu_sim::ptx::mbarrier_wait_parity(bar, 0);
  const int t = static_cast<int>(threadIdx.x), warp = t / 32, g = (t % 32) / 4, q = t % 4;
  const auto pair = [&](int row, int column) {
    return static_cast<std::uint32_t>(a_bits[row * kK + column]) |
           (static_cast<std::uint32_t>(a_bits[row * kK + column + 1]) << 16);
  };
  float d[kN / 2];
  const std::uint32_t base_b = gpu_sim::ptx::shared_address(tile_b);
  for (int step = 0; step < kK / 16; step++) {
    const int k0 = 16 * step;
    const std::uint32_t a[4] = {pair(16 * warp + g, k0 + 2 * q), pair(16 * warp + g + 8, k0 + 2 * q),
                                pair(16 * warp + g, k0 + 2 * q + 8), pair(16 * warp + g + 8, k0 + 2 * q + 8)};
    gpu_sim::ptx::wgmma_fence();
    gpu_sim::ptx::wgmma_mma_async_rs<kN, Type>(d, a, layout_b.step_descriptor(base_b, step), step > 0,
                                               layout_b.mn_major);
    gpu_sim::ptx::wgmma_commit_group();
    if (clobber != 0) const_cast<std::uint32_t&>(a[0]) ^= 1u;
    gpu_sim::ptx::wgmma_wait_group(0);
  }
  for (int i = 0; i < kN / 2; i++) out[(16 * warp + g + ((i & 2) ? 8 : 0)) * kN + 8 * (i / 4) + 2 * q + (i & 1)] = d[i];
}

template <MmaInput Type>
static void check_wgmma_rs(bool b_mn_major, const char* name) {
  const auto encode = [](float value) {
    return Type == MmaInput::kF16 ? gpu_sim::f32_to_f16_bits(value) : gpu_sim::f32_to_bf16_bits(value);
  };
  std::vector<float> a(64 * kK), b(kN * kK);
  for (int i = 0; i < 64 * kK; i++) a[i] = static_cast<float>((i * 7) % 11 - 5) / 4.0f;
  for (int i = 0; i < kN * kK; i++) b[i] = static_cast<float>((i * 5) % 13 - 6) / 2.0f;
  std::vector<std::uint16_t> a_bits(a.size()), b_bits(b.size());
  for (std::size_t i = 0; i < a.size(); i++) a_bits[i] = encode(a[i]);
  for (int r = 0; r < kN; r++) {
    for (int k = 0; k < kK; k++) b_bits[b_mn_major ? k * kN + r : r * kK + k] = encode(b[r * kK + k]);
  }
  const OperandLayout layout_b{b_mn_major, kN, TensorMapSwizzle::k128B};
  const void* b_data = device_copy(b_bits);
  const TensorMap map_b = b_mn_major ? map_2d(b_data, kN, kK, layout_b.per_row(), kK, TensorMapSwizzle::k128B)
                                     : map_2d(b_data, kK, kN, layout_b.per_row(), kN, TensorMapSwizzle::k128B);
  float* out = device_copy(std::vector<float>(64 * kN, -99.0f));
  const cudaError_t error = launch("wgmma_rs_kernel", wgmma_rs_kernel<Type>, dim3(128), 1024 + 8192, map_b, layout_b,
                                   device_copy(a_bits), out, 0);
  std::string detail = error == cudaSuccess ? "" : gpu_sim_cuda_fault_detail();
  for (int index = 0; index < 64 * kN && detail.empty(); index++) {
    float expected = 0.0f;
    for (int k = 0; k < kK; k++) expected += a[(index / kN) * kK + k] * b[(index % kN) * kK + k];
    if (out[index] != expected)
      detail = "out[" + std::to_string(index) + "] = " + std::to_string(out[index]) + ", expected " +
               std::to_string(expected);
  }
  check(detail.empty(), name, detail);
  if (b_mn_major) return;
  const cudaError_t misuse = launch("wgmma_rs_kernel", wgmma_rs_kernel<Type>, dim3(128), 1024 + 8192, map_b, layout_b,
                                    device_copy(a_bits), out, 1);
  const std::string fault = misuse == cudaSuccess ? "launched without error" : gpu_sim_cuda_fault_detail();
  check(contains(fault, "kernel 'wgmma_rs_kernel'") && contains(fault, "has its A registers changed by thread 0") &&
            contains(fault, "hopper-self-test.cpp:"),
        "changing a register-A wgmma's registers before its wait_group aborts naming the kernel and file:line", fault);
}

// Two arrivals expected, one comes: every thread waits forever on the GPU.
__global__ void stuck_phase_kernel() {
  GPU_SIM_EXTERN_SHARED(std::uint64_t, bar);
  if (threadIdx.x == 0) gpu_sim::ptx::mbarrier_init(bar, 2);
  __syncthreads();
  if (threadIdx.x == 0) gpu_sim::ptx::mbarrier_arrive(bar);
  gpu_sim::ptx::mbarrier_wait_parity(bar, 0);
}

// Thread 0 sets up the barrier at shared address 0 and copies the 64 × 64 bf16 box at (0, 0) of
// `map` to `tile` with tma_load; then the block synchronises.
__device__ void load_tile(const TensorMap& map, std::uint64_t* bar, unsigned char* tile) {
  if (threadIdx.x == 0) {
    gpu_sim::ptx::mbarrier_init(bar, 1);
    gpu_sim::ptx::mbarrier_arrive_expect_tx(bar, 64 * 64 * 2);
    const std::int32_t at[2] = {0, 0};
    gpu_sim::ptx::tma_load(tile, &map, at, bar);
  }
  __syncthreads();
}

// The warpgroup's wgmma m64n16k16 of `tile` (K-major, 128B swizzle) with itself; d[0] to `out` when given.
__device__ void multiply_tile(unsigned char* tile, float* out) {
  float d[8] = {};
  const std::uint64_t desc = descriptor(gpu_sim::ptx::shared_address(tile), 16, 1024, TensorMapSwizzle::k128B);
  gpu_sim::ptx::wgmma_mma_async<16, MmaInput::kBF16>(d, desc, desc, false, false, false);
  gpu_sim::ptx::wgmma_commit_group();
  gpu_sim::ptx::wgmma_wait_group(0);
  if (out != nullptr && threadIdx.x == 0) *out = d[0];
}

// The wgmma issues without waiting on the barrier its operands' copy signals.
__global__ void early_wgmma_kernel(const TensorMap map) {
  GPU_SIM_EXTERN_SHARED(unsigned char, shared);
  auto* bar = reinterpret_cast<std::uint64_t*>(shared);
  unsigned char* tile = shared + 1024;
  load_tile(map, bar, tile);
  multiply_tile(tile, nullptr);
  gpu_sim::ptx::mbarrier_wait_parity(bar, 0);
}

// Thread 0 patches one element of a TMA-loaded tile with a generic store (the element at shared
// address 1024 + 2), then fences it for the async proxy when `fenced`, and the warpgroup issues a
// wgmma reading the tile: without the fence the simulator must report the patched byte.
__global__ void patched_tile_kernel(const TensorMap map, bool fenced, float* out) {
  GPU_SIM_EXTERN_SHARED(unsigned char, shared);
  auto* bar = reinterpret_cast<std::uint64_t*>(shared);
  unsigned char* tile = shared + 1024;
  load_tile(map, bar, tile);
  gpu_sim::ptx::mbarrier_wait_parity(bar, 0);
  if (threadIdx.x == 0) {
    const std::uint16_t two = 0x4000;  // bf16 2.0 at row 0, k 1 (inside the first 16-byte unit: not swizzled)
    std::memcpy(tile + 2, &two, 2);
    if (fenced) gpu_sim::ptx::fence_proxy_async();
  }
  __syncthreads();
  multiply_tile(tile, out);
}

// The consumer warpgroup releases its stage (the `empty` barrier) before waiting for the wgmma that
// reads it; the producer, woken by that release, copies the next tile into the stage first.
__global__ void released_early_kernel(const TensorMap map) {
  GPU_SIM_EXTERN_SHARED(unsigned char, shared);
  auto* full = reinterpret_cast<std::uint64_t*>(shared);
  std::uint64_t* empty = full + 1;
  unsigned char* tile = shared + 1024;
  if (threadIdx.x == 0) {
    gpu_sim::ptx::mbarrier_init(full, 1);
    gpu_sim::ptx::mbarrier_init(empty, 1);
  }
  __syncthreads();
  if (threadIdx.x >= 128) {
    if (threadIdx.x != 128) return;
    const std::int32_t at[2] = {0, 0};
    for (int round = 0; round < 2; round++) {
      if (round > 0) gpu_sim::ptx::mbarrier_wait_parity(empty, 0);
      gpu_sim::ptx::mbarrier_arrive_expect_tx(full, 64 * 64 * 2);
      gpu_sim::ptx::tma_load(tile, &map, at, full);
    }
    return;
  }
  gpu_sim::ptx::mbarrier_wait_parity(full, 0);
  float d[8] = {};
  const std::uint64_t desc = descriptor(gpu_sim::ptx::shared_address(tile), 16, 1024, TensorMapSwizzle::k128B);
  gpu_sim::ptx::wgmma_mma_async<16, MmaInput::kBF16>(d, desc, desc, false, false, false);
  gpu_sim::ptx::wgmma_commit_group();
  if (threadIdx.x == 0) gpu_sim::ptx::mbarrier_arrive(empty);  // too early: the wgmma still reads the tile
  gpu_sim::ptx::wgmma_wait_group(0);
  gpu_sim::ptx::mbarrier_wait_parity(full, 1);
}

// Warp 3 skips the warpgroup collective.
__global__ void skipping_warp_kernel() {
  GPU_SIM_EXTERN_SHARED(unsigned char, shared);
  if (threadIdx.x >= 96) return;
  float d[8] = {};
  const std::uint64_t desc = descriptor(gpu_sim::ptx::shared_address(shared), 16, 1024, TensorMapSwizzle::k128B);
  gpu_sim::ptx::wgmma_mma_async<16, MmaInput::kBF16>(d, desc, desc, false, false, false);
}

int main() {
  check_box(TensorMapSwizzle::kNone,
            "TMA 2D box without swizzle lands densely, out-of-bounds elements zero, poison before the phase");
  check_box(TensorMapSwizzle::k32B, "TMA 2D box with the 32B swizzle lands at the Swizzle<1,4,3> addresses");
  check_box(TensorMapSwizzle::k64B, "TMA 2D box with the 64B swizzle lands at the Swizzle<2,4,3> addresses");
  check_box(TensorMapSwizzle::k128B, "TMA 2D box with the 128B swizzle lands at the Swizzle<3,4,3> addresses");
  check_store_box(TensorMapSwizzle::kNone,
                  "TMA 2D store without swizzle writes the box's in-bounds elements only (a partial box)");
  check_store_box(TensorMapSwizzle::k128B,
                  "TMA 2D store with the 128B swizzle reads the box from the Swizzle<3,4,3> addresses");
  {
    std::uint16_t* data = device_copy(std::vector<std::uint16_t>(64 * 8, 7));
    const TensorMap map = map_2d(data, 64, 8, 64, 8, TensorMapSwizzle::k128B);
    const cudaError_t error = launch("store_box_kernel", store_box_kernel, dim3(32), 1024 + 64 * 8 * 2, map, 0, 0,
                                     static_cast<std::uint16_t>(1), 1);
    const std::string detail = error == cudaSuccess ? "" : gpu_sim_cuda_fault_detail();
    check(contains(detail, "kernel 'store_box_kernel'") && contains(detail, "cp.async.bulk.wait_group.read at") &&
              contains(detail, "changed before this wait") && contains(detail, "hopper-self-test.cpp"),
          "a bulk store's source changed before its wait_group.read is reported with both sites", detail);
    const cudaError_t unwaited = launch("store_box_kernel", store_box_kernel, dim3(32), 1024 + 64 * 8 * 2, map, 0, 0,
                                        static_cast<std::uint16_t>(1), 2);
    const std::string ended = unwaited == cudaSuccess ? "" : gpu_sim_cuda_fault_detail();
    check(contains(ended, "kernel 'store_box_kernel'") &&
              contains(ended, "ends while the copy engine may still read") &&
              contains(ended, "thread 0 has 1 bulk tensor store(s), the first issued at hopper-self-test.cpp"),
          "a block that ends with a bulk store not covered by a wait_group.read is reported", ended);
    const cudaError_t unfenced = launch("store_box_kernel", store_box_kernel, dim3(32), 1024 + 64 * 8 * 2, map, 0, 0,
                                        static_cast<std::uint16_t>(1), 3);
    const std::string stale = unfenced == cudaSuccess ? "" : gpu_sim_cuda_fault_detail();
    check(contains(stale, "kernel 'store_box_kernel'") && contains(stale, "cp.async.bulk.tensor (store) at") &&
              contains(stale, "hopper-self-test.cpp") && contains(stale, "reads shared address 1024") &&
              contains(stale, "which no async-proxy write landed and no fence.proxy.async has published"),
          "a bulk store of shared bytes written with no fence.proxy.async is reported", stale);
  }

  const TensorMapSwizzle modes[4] = {TensorMapSwizzle::kNone, TensorMapSwizzle::k32B, TensorMapSwizzle::k64B,
                                     TensorMapSwizzle::k128B};
  const char* mode_names[4] = {"no", "32B", "64B", "128B"};
  for (int mode = 0; mode < 4; mode++) {
    const std::string first = std::string("bf16 wgmma m64n32k16 with K-major A and N-major B, ") + mode_names[mode] +
                              " swizzle, 3 pipelined groups, matches the scalar product";
    const std::string second = std::string("f16 wgmma m64n32k16 with M-major A and K-major B, ") + mode_names[mode] +
                               " swizzle, 3 pipelined groups, matches the scalar product";
    check_wgmma<MmaInput::kBF16>(modes[mode], false, true, first.c_str());
    check_wgmma<MmaInput::kF16>(modes[mode], true, false, second.c_str());
  }

  check_wgmma_rs<MmaInput::kBF16>(false,
                                  "bf16 wgmma m64n32k16 with A from registers (fragment layout) and K-major B, 3 "
                                  "groups, matches the scalar product");
  check_wgmma_rs<MmaInput::kF16>(
      true, "f16 wgmma m64n32k16 with A from registers and N-major B, 3 groups, matches the scalar product");

  {
    TensorMap map;
    std::vector<std::uint16_t> values(64 * 64);
    const std::uint64_t dims[2] = {60, 64};
    const std::uint64_t strides[1] = {120};
    const std::uint32_t box[2] = {64, 64};
    const std::uint32_t element_strides[2] = {1, 1};
    const std::string error = gpu_sim::cuda::encode_tensor_map_tiled(map, 2, 2, device_copy(values), dims, strides, box,
                                                                     element_strides, TensorMapSwizzle::k128B, false);
    check(contains(error, "globalStrides of dimension 1 is 120 bytes"),
          "a tensor map whose row stride is not a multiple of 16 bytes is refused", error);
    const std::uint32_t wide[2] = {128, 8};
    const std::uint64_t good_strides[1] = {128};
    const std::string too_wide = gpu_sim::cuda::encode_tensor_map_tiled(
        map, 2, 2, device_copy(values), dims, good_strides, wide, element_strides, TensorMapSwizzle::k128B, false);
    check(contains(too_wide, "exceeds the swizzle span of 128 bytes"), "a box wider than its swizzle span is refused",
          too_wide);
  }
  {
    const cudaError_t error = launch("stuck_phase_kernel", stuck_phase_kernel, dim3(32), 64);
    const std::string detail = error == cudaSuccess ? "launched without error" : gpu_sim_cuda_fault_detail();
    check(contains(detail, "kernel 'stuck_phase_kernel'") &&
              contains(detail, "32 threads wait in mbarrier.try_wait.parity at hopper-self-test.cpp:"),
          "a barrier phase that never completes aborts naming the kernel and the wait's file:line", detail);
  }
  {
    std::vector<std::uint16_t> values(64 * 64, 0x3f80);
    const TensorMap map = map_2d(device_copy(values), 64, 64, 64, 64, TensorMapSwizzle::k128B);
    const cudaError_t error = launch("early_wgmma_kernel", early_wgmma_kernel, dim3(128), 1024 + 8192, map);
    const std::string detail = error == cudaSuccess ? "launched without error" : gpu_sim_cuda_fault_detail();
    check(contains(detail, "kernel 'early_wgmma_kernel'") &&
              contains(detail, "wgmma.mma_async at hopper-self-test.cpp:") &&
              contains(detail, "cp.async.bulk.tensor issued at hopper-self-test.cpp:"),
          "a wgmma reading a stage before its copy arrived aborts naming the kernel, the wgmma and the copy", detail);
  }
  {
    // All ones but the patched A(0, 1) = B(0, 1) = 2: D(0, 0) = Σ_k A(0, k)·B(0, k) = 15 + 4 = 19.
    std::vector<std::uint16_t> values(64 * 64, 0x3f80);
    const TensorMap map = map_2d(device_copy(values), 64, 64, 64, 64, TensorMapSwizzle::k128B);
    float* out = device_copy(std::vector<float>(1, 0.0f));
    const cudaError_t fenced =
        launch("patched_tile_kernel", patched_tile_kernel, dim3(128), 1024 + 8192, map, true, out);
    const std::string fenced_detail = fenced == cudaSuccess ? "" : gpu_sim_cuda_fault_detail();
    check(fenced_detail.empty() && *out == 19.0f,
          "a wgmma reads a TMA-loaded tile patched by a generic store after fence.proxy.async",
          fenced_detail.empty() ? "D(0, 0) = " + std::to_string(*out) : fenced_detail);
    const cudaError_t unfenced =
        launch("patched_tile_kernel", patched_tile_kernel, dim3(128), 1024 + 8192, map, false, out);
    const std::string detail = unfenced == cudaSuccess ? "launched without error" : gpu_sim_cuda_fault_detail();
    check(contains(detail, "kernel 'patched_tile_kernel'") &&
              contains(detail, "wgmma.mma_async at hopper-self-test.cpp:") &&
              contains(detail,
                       "reads shared address 1026, which generic-proxy stores changed after the async "
                       "proxy's access at hopper-self-test.cpp:") &&
              contains(detail, "with no fence.proxy.async in the block since"),
          "a wgmma reading a tile patched by a generic store with no fence.proxy.async aborts naming the byte", detail);
  }
  {
    std::vector<std::uint16_t> values(64 * 64, 0x3f80);
    const TensorMap map = map_2d(device_copy(values), 64, 64, 64, 64, TensorMapSwizzle::k128B);
    const cudaError_t error = launch("released_early_kernel", released_early_kernel, dim3(160), 1024 + 8192, map);
    const std::string detail = error == cudaSuccess ? "launched without error" : gpu_sim_cuda_fault_detail();
    check(contains(detail, "kernel 'released_early_kernel'") &&
              contains(detail, "wgmma.mma_async at hopper-self-test.cpp:") &&
              contains(detail, "after this wgmma overwrites before the wgmma.wait_group that completes it"),
          "a stage released (mbarrier.arrive) before the wgmma reading it completed, and refilled by the woken "
          "producer, aborts naming the wgmma and the copy",
          detail);
  }
  {
    const cudaError_t error = launch("skipping_warp_kernel", skipping_warp_kernel, dim3(128), 8192);
    const std::string detail = error == cudaSuccess ? "launched without error" : gpu_sim_cuda_fault_detail();
    check(contains(detail, "kernel 'skipping_warp_kernel'") &&
              contains(detail, "96 threads wait in wgmma.mma_async at hopper-self-test.cpp:"),
          "a warp that skips a warpgroup-collective wgmma aborts naming the kernel and file:line", detail);
  }
  std::printf("%d failures\n", self_test::failures);
  return self_test::failures == 0 ? 0 : 1;
}
