// Self-test of the sm_80 PTX emulation (gpu_sim/cuda/mma_sync.hpp, async_copy.hpp): mma.sync
// m16n8k16 (f16/bf16), m16n8k8 (tf32, with cvt.rna.tf32.f32 rounding) and ldmatrix against the PTX ISA fragment layouts, a full ldmatrix → mma chain against
// a scalar loop, ldmatrix bank conflicts counted (none for rows 16 bytes apart, one extra pass per
// matrix for rows 32 bytes apart), cp.async group semantics (deferred delivery, zero fill), and the misuse the
// device does not report (a lane skipping a collective, misaligned rows or copies, reading a
// stage before its copy arrived). Prints "ok <name>" per check, or "FAIL <name>: <why>"; exits 1 on failure.
#include <gpu_sim/cuda/mma_sync.hpp>
#include <gpu_sim/cuda/runtime.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "launch_and_wait.hpp"
#include "self_test.hpp"

using self_test::check;
using self_test::contains;

using gpu_sim::ptx::MmaInput;

/** Without dynamic shared memory (launch_and_wait). */
template <typename... Parameters, typename... Arguments>
static cudaError_t launch(const char* name, void (*kernel)(Parameters...), dim3 grid, dim3 block,
                          Arguments... arguments) {
  return self_test::launch_and_wait(name, kernel, grid, block, 0, arguments...);
}

template <typename T>
static T* device_copy(const std::vector<T>& values) {
  void* pointer = nullptr;
  cudaMalloc(&pointer, values.size() * sizeof(T));
  std::memcpy(pointer, values.data(), values.size() * sizeof(T));
  return static_cast<T*>(pointer);
}

static std::uint32_t pack(std::uint16_t low, std::uint16_t high) {
  return static_cast<std::uint32_t>(low) | (static_cast<std::uint32_t>(high) << 16);
}

// Lanes build their fragments straight from the PTX ISA formulas; out [16][8] = a [16][16] · b [16][8] + c.
template <MmaInput Type>
__global__ void formula_product_kernel(const std::uint16_t* a, const std::uint16_t* b, const float* c, float* out) {
  const int lane = static_cast<int>(threadIdx.x);
  const int g = lane / 4, t = lane % 4;
  const std::uint32_t a_regs[4] = {pack(a[g * 16 + 2 * t], a[g * 16 + 2 * t + 1]),
                                   pack(a[(g + 8) * 16 + 2 * t], a[(g + 8) * 16 + 2 * t + 1]),
                                   pack(a[g * 16 + 2 * t + 8], a[g * 16 + 2 * t + 9]),
                                   pack(a[(g + 8) * 16 + 2 * t + 8], a[(g + 8) * 16 + 2 * t + 9])};
  const std::uint32_t b_regs[2] = {pack(b[(2 * t) * 8 + g], b[(2 * t + 1) * 8 + g]),
                                   pack(b[(2 * t + 8) * 8 + g], b[(2 * t + 9) * 8 + g])};
  const float c_regs[4] = {c[g * 8 + 2 * t], c[g * 8 + 2 * t + 1], c[(g + 8) * 8 + 2 * t], c[(g + 8) * 8 + 2 * t + 1]};
  float d[4];
  gpu_sim::ptx::mma_m16n8k16<Type>(d, a_regs, b_regs, c_regs);
  out[g * 8 + 2 * t] = d[0];
  out[g * 8 + 2 * t + 1] = d[1];
  out[(g + 8) * 8 + 2 * t] = d[2];
  out[(g + 8) * 8 + 2 * t + 1] = d[3];
}

// The ldmatrix chain of a GEMM: a [16][16] row-major through ldmatrix.x4, b [16][8] stored [k][n]
// through ldmatrix.x2.trans, then mma (d aliases c).
__global__ void ldmatrix_product_kernel(const std::uint16_t* a, const std::uint16_t* b, float* out) {
  __shared__ __align__(16) std::uint16_t tile_a[16 * 16];
  __shared__ __align__(16) std::uint16_t tile_b[16 * 8];
  const int lane = static_cast<int>(threadIdx.x);
  for (int i = lane; i < 256; i += 32) tile_a[i] = a[i];
  for (int i = lane; i < 128; i += 32) tile_b[i] = b[i];
  __syncwarp();
  std::uint32_t a_regs[4];
  std::uint32_t b_regs[2];
  gpu_sim::ptx::ldmatrix<4, false>(a_regs, &tile_a[(lane % 16) * 16 + (lane / 16) * 8]);
  gpu_sim::ptx::ldmatrix<2, true>(b_regs, &tile_b[(lane % 16) * 8]);
  float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  gpu_sim::ptx::mma_m16n8k16<MmaInput::kF16>(d, a_regs, b_regs, d);
  const int g = lane / 4, t = lane % 4;
  out[g * 8 + 2 * t] = d[0];
  out[g * 8 + 2 * t + 1] = d[1];
  out[(g + 8) * 8 + 2 * t] = d[2];
  out[(g + 8) * 8 + 2 * t + 1] = d[3];
}

// Each lane compares its ldmatrix registers with the layout the PTX ISA gives; out[lane] = mismatches.
template <int Count, bool Trans>
__global__ void ldmatrix_layout_kernel(int* out) {
  __shared__ __align__(16) std::uint16_t tile[4 * 64];
  const int lane = static_cast<int>(threadIdx.x);
  for (int i = lane; i < 256; i += 32)
    tile[i] = static_cast<std::uint16_t>(i);  // matrix m, row r, column c = m·64 + r·8 + c
  __syncwarp();
  std::uint32_t regs[Count];
  // Lane 8m + r points at row r of matrix m (lanes past 8·Count point at garbage: ignored).
  gpu_sim::ptx::ldmatrix<Count, Trans>(regs, lane < 8 * Count ? &tile[lane * 8] : &tile[3]);
  int mismatches = 0;
  for (int m = 0; m < Count; m++) {
    const int row_low = Trans ? 2 * (lane % 4) : lane / 4, column_low = Trans ? lane / 4 : 2 * (lane % 4);
    const int row_high = Trans ? row_low + 1 : row_low, column_high = Trans ? column_low : column_low + 1;
    const std::uint32_t expected = pack(static_cast<std::uint16_t>(m * 64 + row_low * 8 + column_low),
                                        static_cast<std::uint16_t>(m * 64 + row_high * 8 + column_high));
    mismatches += regs[m] != expected ? 1 : 0;
  }
  out[lane] = mismatches;
}

// Two groups of 16-byte copies (the second zero-filled past 6 bytes); after wait_group 1 the first
// has arrived and the second is still poison; after wait_group 0 both have.
__global__ void groups_kernel(const std::uint16_t* source, std::uint32_t* out) {
  __shared__ __align__(16) std::uint16_t stage[2][8];
  if (threadIdx.x != 0) return;
  gpu_sim::ptx::cp_async(stage[0], source, 16, 16, true);
  gpu_sim::ptx::commit_group();
  gpu_sim::ptx::cp_async(stage[1], source + 8, 16, 6, false);
  gpu_sim::ptx::commit_group();
  gpu_sim::ptx::wait_group(1);
  out[0] = stage[0][1];
  out[1] = stage[1][0];
  gpu_sim::ptx::wait_group(0);
  out[2] = stage[1][2];
  out[3] = stage[1][3];
}

// Lane 0's copy of row 0 is committed but never waited for before the warp reads it with ldmatrix.
__global__ void early_read_kernel(const std::uint16_t* source, float* out) {
  __shared__ __align__(16) std::uint16_t tile[32 * 8];
  const int lane = static_cast<int>(threadIdx.x);
  gpu_sim::ptx::cp_async(&tile[lane * 8], source + lane * 8, 16, 16, true);
  gpu_sim::ptx::commit_group();
  if (lane != 0) gpu_sim::ptx::wait_group(0);
  __syncwarp();
  std::uint32_t regs[4];
  gpu_sim::ptx::ldmatrix<4, false>(regs, &tile[lane * 8]);
  out[lane] = static_cast<float>(regs[0] & 0xffu);
}

__global__ void skipped_mma_kernel(float* out) {
  const std::uint32_t a[4] = {0, 0, 0, 0};
  const std::uint32_t b[2] = {0, 0};
  float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  if (threadIdx.x == 5) return;
  gpu_sim::ptx::mma_m16n8k16<MmaInput::kBF16>(d, a, b, d);
  out[threadIdx.x] = d[0];
}

__global__ void misaligned_ldmatrix_kernel(float* out) {
  __shared__ __align__(16) std::uint16_t tile[40 * 8];
  const int lane = static_cast<int>(threadIdx.x);
  std::uint32_t regs[1];
  gpu_sim::ptx::ldmatrix<1, false>(regs, &tile[lane * 8 + (lane == 2 ? 4 : 0)]);
  out[lane] = static_cast<float>(regs[0] & 1u);
}

__global__ void misaligned_copy_kernel(const std::uint16_t* source) {
  __shared__ __align__(16) std::uint16_t tile[16];
  gpu_sim::ptx::cp_async(tile, source + 1, 16, 16, true);
  gpu_sim::ptx::wait_all();
}

__global__ void cg_eight_bytes_kernel(const std::uint16_t* source) {
  __shared__ __align__(16) std::uint16_t tile[16];
  gpu_sim::ptx::cp_async(tile, source, 8, 8, true);
  gpu_sim::ptx::wait_all();
}

// tf32: lanes build fragments from the PTX ISA formulas for m16n8k8; out [16][8] = a [16][8] · b [8][8] + c, inputs rounded by cvt.rna.
__global__ void tf32_formula_product_kernel(const float* a, const float* b, const float* c, float* out) {
  const int lane = static_cast<int>(threadIdx.x);
  const int g = lane / 4, t = lane % 4;
  using gpu_sim::ptx::cvt_rna_tf32;
  const std::uint32_t a_regs[4] = {cvt_rna_tf32(a[g * 8 + t]), cvt_rna_tf32(a[(g + 8) * 8 + t]),
                                   cvt_rna_tf32(a[g * 8 + t + 4]), cvt_rna_tf32(a[(g + 8) * 8 + t + 4])};
  const std::uint32_t b_regs[2] = {cvt_rna_tf32(b[t * 8 + g]), cvt_rna_tf32(b[(t + 4) * 8 + g])};
  const float c_regs[4] = {c[g * 8 + 2 * t], c[g * 8 + 2 * t + 1], c[(g + 8) * 8 + 2 * t], c[(g + 8) * 8 + 2 * t + 1]};
  float d[4];
  gpu_sim::ptx::mma_m16n8k8_tf32(d, a_regs, b_regs, c_regs);
  out[g * 8 + 2 * t] = d[0];
  out[g * 8 + 2 * t + 1] = d[1];
  out[(g + 8) * 8 + 2 * t] = d[2];
  out[(g + 8) * 8 + 2 * t + 1] = d[3];
}

static float bits_to_float(std::uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

static void check_tf32() {
  using gpu_sim::ptx::cvt_rna_tf32;
  const float tie = 1.0f + 0x1p-11f;  // halfway between two tf32 values: rounds away from zero
  const bool rounding = bits_to_float(cvt_rna_tf32(tie)) == 1.0f + 0x1p-10f &&
                        bits_to_float(cvt_rna_tf32(-tie)) == -(1.0f + 0x1p-10f) &&
                        bits_to_float(cvt_rna_tf32(1.0f + 0x1p-12f)) == 1.0f &&
                        bits_to_float(cvt_rna_tf32(1.0f + 0x1p-11f + 0x1p-20f)) == 1.0f + 0x1p-10f &&
                        bits_to_float(cvt_rna_tf32(__builtin_inff())) == __builtin_inff() &&
                        bits_to_float(cvt_rna_tf32(0x1.fffffep127f)) == __builtin_inff();
  check(rounding, "cvt.rna.tf32.f32 rounds to nearest, ties away from zero, to 10 mantissa bits");
  // Values with more than 10 mantissa bits: the product must use the rounded inputs.
  std::vector<float> a(128), b(64), c(128);
  for (int i = 0; i < 128; i++) a[i] = static_cast<float>((i * 7) % 11 - 5) / 3.0f;
  for (int i = 0; i < 64; i++) b[i] = static_cast<float>((i * 3) % 7 - 3) / 7.0f;
  for (int i = 0; i < 128; i++) c[i] = static_cast<float>(i % 5);
  float* out = device_copy(std::vector<float>(128, -99.0f));
  const cudaError_t error = launch("tf32_formula_product_kernel", tf32_formula_product_kernel, dim3(1), dim3(32),
                                   device_copy(a), device_copy(b), device_copy(c), out);
  std::string detail = error == cudaSuccess ? "" : gpu_sim_cuda_fault_detail();
  for (int row = 0; row < 16 && detail.empty(); row++) {
    for (int column = 0; column < 8; column++) {
      float expected = c[row * 8 + column];
      for (int k = 0; k < 8; k++)
        expected += bits_to_float(cvt_rna_tf32(a[row * 8 + k])) * bits_to_float(cvt_rna_tf32(b[k * 8 + column]));
      if (out[row * 8 + column] != expected) {
        detail = "out[" + std::to_string(row) + "][" + std::to_string(column) +
                 "] = " + std::to_string(out[row * 8 + column]) + ", expected " + std::to_string(expected);
        break;
      }
    }
  }
  check(detail.empty(), "tf32 mma.sync m16n8k8 with fragments from the PTX ISA formulas", detail);
}

static std::uint16_t to_bits(float value, MmaInput type) {
  return type == MmaInput::kF16 ? gpu_sim::f32_to_f16_bits(value) : gpu_sim::f32_to_bf16_bits(value);
}

template <MmaInput Type>
static void check_formula_product(const char* name) {
  // Small multiples of 1/4: products and sums are exact in f32, so the check is exact.
  std::vector<float> a(256), b(128), c(128);
  for (int i = 0; i < 256; i++) a[i] = static_cast<float>((i * 7) % 11 - 5) / 4.0f;
  for (int i = 0; i < 128; i++) b[i] = static_cast<float>((i * 3) % 7 - 3) / 2.0f;
  for (int i = 0; i < 128; i++) c[i] = static_cast<float>(i % 5);
  std::vector<std::uint16_t> a_bits(256), b_bits(128);
  for (int i = 0; i < 256; i++) a_bits[i] = to_bits(a[i], Type);
  for (int i = 0; i < 128; i++) b_bits[i] = to_bits(b[i], Type);
  std::uint16_t* device_a = device_copy(a_bits);
  std::uint16_t* device_b = device_copy(b_bits);
  float* device_c = device_copy(c);
  float* out = device_copy(std::vector<float>(128, -99.0f));
  const cudaError_t error =
      launch(name, formula_product_kernel<Type>, dim3(1), dim3(32), device_a, device_b, device_c, out);
  std::string detail = error == cudaSuccess ? "" : gpu_sim_cuda_fault_detail();
  for (int row = 0; row < 16 && detail.empty(); row++) {
    for (int column = 0; column < 8; column++) {
      float expected = c[row * 8 + column];
      for (int k = 0; k < 16; k++) expected += a[row * 16 + k] * b[k * 8 + column];
      if (out[row * 8 + column] != expected) {
        detail = "out[" + std::to_string(row) + "][" + std::to_string(column) +
                 "] = " + std::to_string(out[row * 8 + column]) + ", expected " + std::to_string(expected);
        break;
      }
    }
  }
  check(detail.empty(), name, detail);
}

template <int Count, bool Trans>
static void check_ldmatrix_layout(const char* name) {
  int* out = device_copy(std::vector<int>(32, -1));
  const cudaError_t error = launch(name, ldmatrix_layout_kernel<Count, Trans>, dim3(1), dim3(32), out);
  std::string detail = error == cudaSuccess ? "" : gpu_sim_cuda_fault_detail();
  for (int lane = 0; lane < 32 && detail.empty(); lane++) {
    if (out[lane] != 0)
      detail =
          "lane " + std::to_string(lane) + " has " + std::to_string(out[lane]) + " registers unlike the PTX ISA layout";
  }
  check(detail.empty(), name, detail);
}

int main() {
  check_formula_product<MmaInput::kBF16>("bf16 mma.sync m16n8k16 with fragments from the PTX ISA formulas");
  check_formula_product<MmaInput::kF16>("f16 mma.sync m16n8k16 with fragments from the PTX ISA formulas");
  check_tf32();
  check_ldmatrix_layout<4, false>("ldmatrix x4 register layout");
  check_ldmatrix_layout<4, true>("ldmatrix x4.trans register layout");
  check_ldmatrix_layout<2, false>("ldmatrix x2 register layout");
  check_ldmatrix_layout<2, true>("ldmatrix x2.trans register layout");
  check_ldmatrix_layout<1, false>("ldmatrix x1 register layout");
  check_ldmatrix_layout<1, true>("ldmatrix x1.trans register layout");
  {
    // Every matrix's rows there are 16 bytes apart: 8 different bank groups, one pass each.
    const gpu_sim::ptx::BankConflicts none = gpu_sim::ptx::take_bank_conflicts();
    check(none.instructions == 0 && none.extra_passes == 0 && none.first.empty(),
          "ldmatrix rows 16 bytes apart count no bank conflict", none.first);
  }

  {
    std::vector<float> a(256), b(128);
    std::vector<std::uint16_t> a_bits(256), b_bits(128);
    for (int i = 0; i < 256; i++) a_bits[i] = to_bits(a[i] = static_cast<float>(i % 9 - 4) / 8.0f, MmaInput::kF16);
    for (int i = 0; i < 128; i++) b_bits[i] = to_bits(b[i] = static_cast<float>(i % 5 - 2), MmaInput::kF16);
    float* out = device_copy(std::vector<float>(128, -99.0f));
    const cudaError_t error = launch("ldmatrix_product_kernel", ldmatrix_product_kernel, dim3(1), dim3(32),
                                     device_copy(a_bits), device_copy(b_bits), out);
    std::string detail = error == cudaSuccess ? "" : gpu_sim_cuda_fault_detail();
    for (int index = 0; index < 128 && detail.empty(); index++) {
      float expected = 0.0f;
      for (int k = 0; k < 16; k++) expected += a[(index / 8) * 16 + k] * b[k * 8 + index % 8];
      if (out[index] != expected)
        detail = "out[" + std::to_string(index) + "] = " + std::to_string(out[index]) + ", expected " +
                 std::to_string(expected);
    }
    check(detail.empty(), "ldmatrix x4 (A row-major) and x2.trans (B [k][n]) feed mma.sync to the exact product",
          detail);
    // A's rows are 32 bytes apart: each of its 4 matrices puts 2 rows in each of 4 bank groups (2 passes, 1
    // extra); B's x2.trans rows are 16 bytes apart (no conflict).
    const gpu_sim::ptx::BankConflicts conflicts = gpu_sim::ptx::take_bank_conflicts();
    check(conflicts.instructions == 1 && conflicts.extra_passes == 4 &&
              contains(conflicts.first, "kernel 'ldmatrix_product_kernel': ldmatrix at ") &&
              contains(conflicts.first, "took 4 extra passes"),
          "ldmatrix x4 over rows 32 bytes apart counts 1 conflicting instruction, 4 extra passes",
          std::to_string(conflicts.instructions) + " instructions, " + std::to_string(conflicts.extra_passes) +
              " extra passes: " + conflicts.first);
  }

  std::vector<std::uint16_t> source_values(32 * 8);
  for (int i = 0; i < 32 * 8; i++) source_values[i] = static_cast<std::uint16_t>(i + 1);
  std::uint16_t* source = device_copy(source_values);
  {
    std::uint32_t* out = device_copy(std::vector<std::uint32_t>(4, 7));
    const cudaError_t error = launch("groups_kernel", groups_kernel, dim3(1), dim3(32), source, out);
    const bool ok = error == cudaSuccess && out[0] == 2 && out[1] == 0xffffu && out[2] == 11 && out[3] == 0;
    check(ok, "cp.async groups arrive at their wait_group (poison before, zero fill past src-size after)",
          "got " + std::to_string(out[0]) + " " + std::to_string(out[1]) + " " + std::to_string(out[2]) + " " +
              std::to_string(out[3]) + " " + gpu_sim_cuda_fault_detail());
  }

  float* out = device_copy(std::vector<float>(32, 0.0f));
  cudaError_t error = launch("early_read_kernel", early_read_kernel, dim3(1), dim3(32), source, out);
  std::string detail = gpu_sim_cuda_fault_detail();
  check(error == cudaErrorLaunchFailure && contains(detail, "early_read_kernel") &&
            contains(detail, "ldmatrix at ptx-self-test.cpp:") &&
            contains(detail, "cp.async issued at ptx-self-test.cpp:") && contains(detail, "has not delivered"),
        "reading a stage before its cp.async arrived aborts naming the kernel, the read and the copy", detail);

  error = launch("skipped_mma_kernel", skipped_mma_kernel, dim3(1), dim3(32), out);
  detail = gpu_sim_cuda_fault_detail();
  check(error == cudaErrorLaunchFailure && contains(detail, "skipped_mma_kernel") &&
            contains(detail, "mma.sync.aligned.m16n8k16") && contains(detail, "ptx-self-test.cpp:"),
        "a lane that skips mma.sync aborts naming the kernel and file:line", detail);

  error = launch("misaligned_ldmatrix_kernel", misaligned_ldmatrix_kernel, dim3(1), dim3(32), out);
  detail = gpu_sim_cuda_fault_detail();
  check(error == cudaErrorLaunchFailure && contains(detail, "misaligned_ldmatrix_kernel") &&
            contains(detail, "lane 2") && contains(detail, "16-byte aligned"),
        "an ldmatrix row address that is not 16-byte aligned aborts the launch", detail);

  error = launch("misaligned_copy_kernel", misaligned_copy_kernel, dim3(1), dim3(1), source);
  detail = gpu_sim_cuda_fault_detail();
  check(error == cudaErrorLaunchFailure && contains(detail, "misaligned_copy_kernel") &&
            contains(detail, "cp.async.cg at ptx-self-test.cpp:") && contains(detail, "global source"),
        "a cp.async source that is not cp-size aligned aborts the launch", detail);

  error = launch("cg_eight_bytes_kernel", cg_eight_bytes_kernel, dim3(1), dim3(1), source);
  detail = gpu_sim_cuda_fault_detail();
  check(error == cudaErrorLaunchFailure && contains(detail, ".cg supports only 16"),
        "cp.async.cg with 8 bytes aborts the launch", detail);

  std::printf("%d failures\n", self_test::failures);
  return self_test::failures == 0 ? 0 : 1;
}
