// gpu_sim/cuda/mma_sync.hpp — the PTX warp-level matrix instructions of sm_80+ kernels in the
// simulator, with their register fragments laid out exactly as the PTX ISA defines them (so a
// kernel's fragment bookkeeping is tested, not just its arithmetic):
//
//  - mma_m16n8k16(type, d, a, b, c): mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32.
//    With g = lane / 4 and t = lane % 4 (PTX ISA "Matrix Fragments for mma.m16n8k16 with floating
//    point type"), each 32-bit register holds two 16-bit elements, the lower-indexed one in the low half:
//      A (16×16, row): a[0] = A(g, 2t..2t+1), a[1] = A(g+8, 2t..), a[2] = A(g, 2t+8..), a[3] = A(g+8, 2t+8..)
//      B (16×8, col):  b[0] = B(2t..2t+1, g), b[1] = B(2t+8..2t+9, g)
//      C, D (16×8 f32): c[0..1] = C(g, 2t..2t+1), c[2..3] = C(g+8, 2t..2t+1)
//    Warp-collective: the last lane to arrive gathers every lane's fragments, computes
//    D = A·B + C once (products of 16-bit inputs are exact in f32; sums in f32, k ascending, from
//    C) and scatters D. d may alias c.
//  - mma_m16n8k8_tf32(d, a, b, c): mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32. Each
//    32-bit register holds one tf32 element (an f32 bit pattern whose low 13 mantissa bits the
//    tensor core ignores; the emulation clears them, so inputs that were not rounded with
//    cvt_rna_tf32 are truncated). PTX ISA "Matrix Fragments for mma.m16n8k8" (.tf32):
//      A (16×8, row): a[0] = A(g, t), a[1] = A(g+8, t), a[2] = A(g, t+4), a[3] = A(g+8, t+4)
//      B (8×8, col):  b[0] = B(t, g), b[1] = B(t+4, g)
//      C, D (16×8 f32): as m16n8k16. Products of tf32 inputs are exact in f32; sums in f32, k
//    ascending, from C.
//  - cvt_rna_tf32(x): cvt.rna.tf32.f32 — x rounded to tf32 (10 explicit mantissa bits), to nearest
//    with ties away from zero; infinities and NaN pass through.
//  - ldmatrix(count, trans, d, row_address): ldmatrix.sync.aligned.m8n8.x{1,2,4}{,.trans}.shared.b16.
//    Lanes 8m…8m+7 give the 16-byte row addresses of matrix m (lanes past 8·count are ignored);
//    lane l receives in d[m] the elements (row l/4, columns 2(l%4), 2(l%4)+1) of matrix m, or
//    with .trans (rows 2(l%4), 2(l%4)+1, column l/4). Row addresses must be 16-byte aligned.
//    A row that a cp.async (async_copy.hpp) has not delivered yet aborts the launch. Rows of one
//    matrix in the same 16-byte bank group are counted as bank conflicts (bank_conflicts.hpp).
//
// Both are warp-collective like wmma (mma.hpp): every lane of the warp must arrive at the same
// instruction and site (a lane that skips it or exits aborts the launch naming the kernel and
// file:line, never a hang), with the same shape, type and count.
#pragma once

#include <cstdint>
#include <cstring>
#include <source_location>
#include <string>

#include "async_copy.hpp"
#include "bank_conflicts.hpp"
#include "device.hpp"

namespace gpu_sim::ptx {

/** The 16-bit input type of an mma. */
enum class MmaInput { kF16, kBF16 };

namespace mma_detail {

/** What one lane passes to mma.sync (its registers, read and written by the completing lane). */
struct MmaCall {
  float* d;
  const std::uint32_t* a;
  const std::uint32_t* b;
  const float* c;
};

template <MmaInput Type>
float decode(std::uint32_t bits) {
  const auto half = static_cast<std::uint16_t>(bits & 0xffffu);
  return Type == MmaInput::kF16 ? f16_bits_to_f32(half) : bf16_bits_to_f32(half);
}

/** Gathers A, B and C from every lane's registers, computes D = A·B + C, scatters D. */
template <MmaInput Type>
const char* product(const std::uint64_t* values, const std::int32_t*, int, std::uint32_t, std::uint64_t* results,
                    unsigned*) {
  float a[16][16];
  float b[16][8];
  float c[16][8];
  for (unsigned lane = 0; lane < kWarpSize; lane++) {
    const auto* call = reinterpret_cast<const MmaCall*>(static_cast<std::uintptr_t>(values[lane]));
    const int g = static_cast<int>(lane / 4);
    const int t = static_cast<int>(lane % 4);
    for (int i = 0; i < 8; i++) {
      const int row = g + ((i & 2) ? 8 : 0);
      const int column = 2 * t + (i & 1) + (i >= 4 ? 8 : 0);
      a[row][column] = decode<Type>(call->a[i / 2] >> (16 * (i & 1)));
    }
    for (int i = 0; i < 4; i++)
      b[2 * t + (i & 1) + (i >= 2 ? 8 : 0)][g] = decode<Type>(call->b[i / 2] >> (16 * (i & 1)));
    for (int i = 0; i < 4; i++) c[g + (i >= 2 ? 8 : 0)][2 * t + (i & 1)] = call->c[i];
    results[lane] = 0;
  }
  for (int row = 0; row < 16; row++) {
    for (int column = 0; column < 8; column++) {
      float total = c[row][column];
      for (int depth = 0; depth < 16; depth++) total += a[row][depth] * b[depth][column];
      c[row][column] = total;
    }
  }
  for (unsigned lane = 0; lane < kWarpSize; lane++) {
    const auto* call = reinterpret_cast<const MmaCall*>(static_cast<std::uintptr_t>(values[lane]));
    for (int i = 0; i < 4; i++) call->d[i] = c[lane / 4 + (i >= 2 ? 8 : 0)][2 * (lane % 4) + (i & 1)];
  }
  return nullptr;
}

template <MmaInput Type>
inline constexpr CollectiveOp kMmaOp{Type == MmaInput::kF16 ? "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
                                                            : "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
                                     product<Type>};

/** The tf32 value of a register: its f32 bits with the low 13 mantissa bits cleared. */
inline float tf32_value(std::uint32_t bits) {
  const std::uint32_t kept = bits & 0xffffe000u;
  float value;
  std::memcpy(&value, &kept, sizeof value);
  return value;
}

/** Gathers the tf32 A (16×8), B (8×8) and f32 C fragments from every lane, computes D = A·B + C, scatters D. */
inline const char* product_tf32(const std::uint64_t* values, const std::int32_t*, int, std::uint32_t,
                                std::uint64_t* results, unsigned*) {
  float a[16][8];
  float b[8][8];
  float c[16][8];
  for (unsigned lane = 0; lane < kWarpSize; lane++) {
    const auto* call = reinterpret_cast<const MmaCall*>(static_cast<std::uintptr_t>(values[lane]));
    const int g = static_cast<int>(lane / 4);
    const int t = static_cast<int>(lane % 4);
    for (int i = 0; i < 4; i++) a[g + ((i & 1) ? 8 : 0)][t + (i >= 2 ? 4 : 0)] = tf32_value(call->a[i]);
    for (int i = 0; i < 2; i++) b[t + 4 * i][g] = tf32_value(call->b[i]);
    for (int i = 0; i < 4; i++) c[g + (i >= 2 ? 8 : 0)][2 * t + (i & 1)] = call->c[i];
    results[lane] = 0;
  }
  for (int row = 0; row < 16; row++) {
    for (int column = 0; column < 8; column++) {
      float total = c[row][column];
      for (int depth = 0; depth < 8; depth++) total += a[row][depth] * b[depth][column];
      c[row][column] = total;
    }
  }
  for (unsigned lane = 0; lane < kWarpSize; lane++) {
    const auto* call = reinterpret_cast<const MmaCall*>(static_cast<std::uintptr_t>(values[lane]));
    for (int i = 0; i < 4; i++) call->d[i] = c[lane / 4 + (i >= 2 ? 8 : 0)][2 * (lane % 4) + (i & 1)];
  }
  return nullptr;
}

inline constexpr CollectiveOp kMmaTf32Op{"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", product_tf32};

/** What one lane passes to ldmatrix. */
struct LdmatrixCall {
  std::uint32_t* d;
  const void* row_address;
  std::source_location site;
};

/** Lane l's 32-bit register for matrix `m` from the row addresses of lanes 8m…8m+7. */
template <bool Trans>
std::uint32_t matrix_register(const std::uint64_t* values, int m, unsigned lane) {
  const auto row = [&](unsigned index) {
    const auto* call = reinterpret_cast<const LdmatrixCall*>(static_cast<std::uintptr_t>(values[8 * m + index]));
    return static_cast<const std::uint16_t*>(call->row_address);
  };
  std::uint16_t low, high;
  if (Trans) {
    low = row(2 * (lane % 4))[lane / 4];
    high = row(2 * (lane % 4) + 1)[lane / 4];
  } else {
    low = row(lane / 4)[2 * (lane % 4)];
    high = row(lane / 4)[2 * (lane % 4) + 1];
  }
  return static_cast<std::uint32_t>(low) | (static_cast<std::uint32_t>(high) << 16);
}

/** Checks the row addresses (alignment, undelivered cp.async data), then fills every lane's registers. */
template <int Count, bool Trans>
const char* load_matrices(const std::uint64_t* values, const std::int32_t*, int, std::uint32_t, std::uint64_t* results,
                          unsigned* offending) {
  for (unsigned lane = 0; lane < 8u * Count; lane++) {
    const auto* call = reinterpret_cast<const LdmatrixCall*>(static_cast<std::uintptr_t>(values[lane]));
    *offending = lane;
    if (reinterpret_cast<std::uintptr_t>(call->row_address) % 16 != 0)
      return "passes a row address that is not 16-byte aligned, as ldmatrix requires";
    std::uint16_t row[8];
    std::memcpy(row, call->row_address, sizeof row);
    bool poisoned = false;
    for (std::uint16_t element : row) poisoned = poisoned || element == 0xffffu;
    const async_detail::PendingCopy* copy = poisoned ? pending_copy(call->row_address, 16) : nullptr;
    if (copy != nullptr) {
      throw KernelFault(current_runner().running_thread_prefix() + "ldmatrix at " + format_site(call->site) +
                        ": lane " + std::to_string(lane) + " reads a shared-memory row that the cp.async issued at " +
                        format_site(copy->site) +
                        " has not delivered yet (the issuing thread must cp.async.wait_group/wait_all, then the block "
                        "__syncthreads, before it is read)");
    }
  }
  // Bank conflicts: each matrix's 8 rows are one pass when they lie in 8 different 16-byte bank groups.
  int extra = 0;
  for (int m = 0; m < Count; m++) {
    const void* rows[8];
    for (int row = 0; row < 8; row++)
      rows[row] = reinterpret_cast<const LdmatrixCall*>(static_cast<std::uintptr_t>(values[8 * m + row]))->row_address;
    extra += extra_passes_of_rows(rows);
  }
  if (extra > 0) {
    const auto* first = reinterpret_cast<const LdmatrixCall*>(static_cast<std::uintptr_t>(values[0]));
    record_bank_conflict(Trans ? "ldmatrix .trans" : "ldmatrix", extra, first->site);
  }
  for (unsigned lane = 0; lane < kWarpSize; lane++) {
    const auto* call = reinterpret_cast<const LdmatrixCall*>(static_cast<std::uintptr_t>(values[lane]));
    for (int m = 0; m < Count; m++) call->d[m] = matrix_register<Trans>(values, m, lane);
    results[lane] = 0;
  }
  return nullptr;
}

template <int Count, bool Trans>
inline constexpr CollectiveOp kLdmatrixOp{
    Count == 1 ? (Trans ? "ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16" : "ldmatrix.sync.aligned.m8n8.x1.shared.b16")
    : Count == 2
        ? (Trans ? "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16" : "ldmatrix.sync.aligned.m8n8.x2.shared.b16")
        : (Trans ? "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" : "ldmatrix.sync.aligned.m8n8.x4.shared.b16"),
    load_matrices<Count, Trans>};

}  // namespace mma_detail

/** d = a·b + c for one m16n8k16 tile (warp-collective; layouts in the file header). */
template <MmaInput Type>
void mma_m16n8k16(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2], const float (&c)[4],
                  std::source_location site = std::source_location::current()) {
  const mma_detail::MmaCall call{d, a, b, c};
  current_runner().collective(mma_detail::kMmaOp<Type>, 0xffffffffu,
                              static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(&call)), 0,
                              static_cast<int>(kWarpSize), site);
}

/** d = a·b + c for one m16n8k8 tile of tf32 inputs (warp-collective; layouts in the file header). */
inline void mma_m16n8k8_tf32(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2],
                             const float (&c)[4], std::source_location site = std::source_location::current()) {
  const mma_detail::MmaCall call{d, a, b, c};
  current_runner().collective(mma_detail::kMmaTf32Op, 0xffffffffu,
                              static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(&call)), 0,
                              static_cast<int>(kWarpSize), site);
}

/** cvt.rna.tf32.f32: the tf32 bit pattern (as a 32-bit register) of x rounded to nearest, ties away from zero. */
inline std::uint32_t cvt_rna_tf32(float x) {
  std::uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  if ((bits & 0x7f800000u) == 0x7f800000u) return bits;  // infinity or NaN
  // Adding half of the dropped unit to the magnitude bits rounds ties away from zero (the sign bit is apart).
  return (bits + 0x1000u) & 0xffffe000u;
}

/** ldmatrix.x{Count}{.trans}: Count 8×8 b16 matrices into d[0…Count-1] (warp-collective; see the file header). */
template <int Count, bool Trans>
void ldmatrix(std::uint32_t (&d)[Count], const void* row_address,
              std::source_location site = std::source_location::current()) {
  static_assert(Count == 1 || Count == 2 || Count == 4, "ldmatrix loads 1, 2 or 4 matrices");
  const mma_detail::LdmatrixCall call{d, row_address, site};
  current_runner().collective(mma_detail::kLdmatrixOp<Count, Trans>, 0xffffffffu,
                              static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(&call)), 0,
                              static_cast<int>(kWarpSize), site);
}

}  // namespace gpu_sim::ptx
