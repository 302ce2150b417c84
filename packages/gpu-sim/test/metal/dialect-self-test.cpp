// Runs the kernels of dialect-self-test.metal (rewritten and compiled into this program) through
// gpu_sim's Metal ABI, as a host would dispatch them, and checks every result. Prints one
// "ok <name>" line per check, or "FAIL <name>: <why>".
#include <gpu_sim/metal/kernel_abi.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "../self_test.hpp"

using self_test::check;

using gpu_sim::Dim3;
using gpu_sim::metal::ArgumentTable;
using gpu_sim::metal::ConstantType;
using gpu_sim::metal::KernelRegistry;

template <typename T>
static void bind(ArgumentTable& table, int index, std::vector<T>& data) {
  table.buffers[index] = data.data();
  table.buffer_bytes[index] = data.size() * sizeof(T);
}

static gpu_sim::LaunchResult run(const char* name, const ArgumentTable& table, Dim3 groups, Dim3 threads) {
  const gpu_sim::metal::KernelInfo* kernel = KernelRegistry::instance().find(name);
  if (kernel == nullptr)
    return gpu_sim::LaunchResult{
        false, std::string("no kernel ") + name + " (have " + KernelRegistry::instance().names() + ")"};
  return gpu_sim::metal::dispatch(*kernel, table, groups, threads);
}

int main() {
  {
    // 40 of 64 threads run: simdgroup 0 full, simdgroup 1 has 8 active lanes.
    std::vector<float> input(64);
    for (int i = 0; i < 64; i++) input[i] = static_cast<float>(i);
    std::vector<float> output(64 * 8, -1.0f);
    struct Sizes {
      unsigned count, pad;
    } sizes{40, 0};
    ArgumentTable table;
    bind(table, 0, input);
    bind(table, 1, output);
    table.buffers[2] = &sizes;
    table.buffer_bytes[2] = sizeof sizes;
    const auto result = run("simd_functions", table, Dim3{1, 1, 1}, Dim3{64, 1, 1});
    bool good = result.ok;
    std::string detail = result.message;
    for (int t = 0; t < 40 && good; t++) {
      const float* row = &output[t * 8];
      const int base = t < 32 ? 0 : 32;
      const int active = t < 32 ? 32 : 8;
      float sum = 0, prefix = 0;
      for (int l = 0; l < active; l++) sum += static_cast<float>(base + l);
      for (int l = 0; l <= t - base; l++) prefix += static_cast<float>(base + l);
      float lanes = 0;
      for (int l = 0; l < active; l++) lanes += static_cast<float>(l);
      const float expected[8] = {sum,
                                 static_cast<float>(base + active - 1),
                                 prefix,
                                 prefix - static_cast<float>(t),
                                 static_cast<float>(t ^ 1),
                                 static_cast<float>(base + 2),
                                 lanes,
                                 base + active - 1 > 20 ? 1.0f : 0.0f};
      for (int k = 0; k < 8; k++) {
        if (row[k] != expected[k]) {
          good = false;
          detail = "thread " + std::to_string(t) + " value " + std::to_string(k) + ": " + std::to_string(row[k]) +
                   " != " + std::to_string(expected[k]);
        }
      }
    }
    for (int t = 40; t < 64 && good; t++) good = output[t * 8] == -1.0f;
    check(good, "simd functions act on the active lanes of a simdgroup (early return)", detail);
  }
  {
    std::vector<unsigned> output(1002, 0);
    ArgumentTable table;
    bind(table, 0, output);
    const auto result = run("rotate", table, Dim3{2, 1, 1}, Dim3{64, 1, 1});
    bool good = result.ok;
    for (unsigned g = 0; g < 2 && good; g++) {
      for (unsigned t = 0; t < 64; t++) good = good && output[g * 64 + t] == (t + 3) % 64 + 100 * g;
    }
    check(good, "threadgroup arrays and threadgroup_barrier (2 threadgroups)", result.message);
    check(result.ok && output[1000] == 0xffffffffu && output[1001] == 0xffffffffu,
          "threadgroup memory reads 0xFF before the first write, in every threadgroup", std::to_string(output[1000]));
  }
  {
    std::vector<float> a(64), b(64), c(64, 0.0f);
    for (int i = 0; i < 64; i++) {
      a[i] = static_cast<float>(i % 7) - 3.0f;
      b[i] = static_cast<float>(i % 5) * 0.5f;
    }
    ArgumentTable table;
    bind(table, 0, a);
    bind(table, 1, b);
    bind(table, 2, c);
    const auto result = run("matrix_product", table, Dim3{1, 1, 1}, Dim3{32, 1, 1});
    bool good = result.ok;
    for (int r = 0; r < 8; r++) {
      for (int col = 0; col < 8; col++) {
        float sum = 1.0f;
        for (int k = 0; k < 8; k++) sum += a[r * 8 + k] * b[k * 8 + col];
        good = good && std::fabs(c[r * 8 + col] - sum) < 1e-5f;
      }
    }
    check(good, "simdgroup_float8x8 load, multiply_accumulate and store", result.message);
    std::vector<float> wide(64 + 32, 1.0f);
    ArgumentTable lanes;
    bind(lanes, 0, wide);
    bind(lanes, 1, c);
    const auto dependent = run("lane_dependent_load", lanes, Dim3{1, 1, 1}, Dim3{32, 1, 1});
    check(!dependent.ok && dependent.message.find("simdgroup_load") != std::string::npos &&
              dependent.message.find("loads from another address") != std::string::npos,
          "a simdgroup_load whose address depends on the lane fails", dependent.message);
  }
  {
    std::vector<int> counter{0};
    std::vector<float> total{0.0f};
    std::vector<unsigned> maximum{0};
    ArgumentTable table;
    bind(table, 0, counter);
    bind(table, 1, total);
    bind(table, 2, maximum);
    const auto result = run("atomics", table, Dim3{8, 1, 1}, Dim3{128, 1, 1});
    check(result.ok && counter[0] == 1024 && total[0] == 512.0f && maximum[0] == 1023,
          "atomic_int, atomic_float and compare-exchange",
          result.message + " " + std::to_string(counter[0]) + " " + std::to_string(total[0]) + " " +
              std::to_string(maximum[0]));
  }
  {
    std::vector<float> input(24), output(24, 0.0f);
    std::vector<_Float16> input16(24), output16(24);
    for (int i = 0; i < 24; i++) {
      input[i] = static_cast<float>(i);
      input16[i] = static_cast<_Float16>(i);
    }
    ArgumentTable table;
    bind(table, 0, input);
    bind(table, 1, output);
    const auto missing = run("scale_f32", table, Dim3{2, 3, 1}, Dim3{4, 1, 1});
    check(!missing.ok &&
              missing.message.find("function constant 'kScale' [[function_constant(0)]] was not set by the host") !=
                  std::string::npos,
          "reading a function constant the host did not set fails the dispatch", missing.message);
    table.set_constant(0, ConstantType::kBool, true);
    const auto wrong = run("scale_f32", table, Dim3{2, 3, 1}, Dim3{4, 1, 1});
    check(!wrong.ok && wrong.message.find("is declared int but the host set a bool") != std::string::npos,
          "a function constant of the wrong type fails", wrong.message);
    table.set_constant(0, ConstantType::kInt, 3);
    const auto result = run("scale_f32", table, Dim3{2, 3, 1}, Dim3{4, 1, 1});
    bool good = result.ok;
    for (int i = 0; i < 24; i++) good = good && output[i] == 3.0f * static_cast<float>(i);
    ArgumentTable half_table = table;
    bind(half_table, 0, input16);
    bind(half_table, 1, output16);
    const auto half_result = run("scale_f16", half_table, Dim3{2, 3, 1}, Dim3{4, 1, 1});
    for (int i = 0; i < 24; i++) good = good && static_cast<float>(output16[i]) == 3.0f * static_cast<float>(i);
    check(good && half_result.ok,
          "function constants and template kernels instantiated with host_name (f32, f16; uint2 builtins)",
          result.message + half_result.message);
  }
  {
    std::vector<unsigned> output(2 * 3 * 48 * 8, 0);
    ArgumentTable table;
    bind(table, 0, output);
    const auto result = run("builtins", table, Dim3{2, 3, 1}, Dim3{8, 3, 2});
    bool good = result.ok;
    std::string detail = result.message;
    for (unsigned gy = 0; gy < 3; gy++) {
      for (unsigned gx = 0; gx < 2; gx++) {
        for (unsigned linear = 0; linear < 48; linear++) {
          const unsigned x = linear % 8, y = (linear / 8) % 3, z = linear / 24;
          const unsigned* row = &output[((gy * 2 + gx) * 48 + linear) * 8];
          const unsigned expected[8] = {gx * 8 + x, gy * 3 + y, z, linear, linear / 32, 32, 2, gy};
          for (int k = 0; k < 8; k++) {
            if (row[k] != expected[k]) {
              good = false;
              detail = "group (" + std::to_string(gx) + "," + std::to_string(gy) + ") thread " +
                       std::to_string(linear) + " builtin " + std::to_string(k);
            }
          }
        }
      }
    }
    check(good, "builtins: positions, indices, simdgroup index and width", detail);
  }
  {
    std::vector<float> output(32, 0.0f);
    ArgumentTable table;
    bind(table, 0, output);
    const auto result = run("divergent_barrier", table, Dim3{1, 1, 1}, Dim3{32, 1, 1});
    check(!result.ok && result.message.find("kernel 'divergent_barrier'") != std::string::npos &&
              result.message.find("threadgroup_barrier at dialect-self-test.metal:") != std::string::npos,
          "a barrier that returned threads never reach fails naming the kernel and the .metal line", result.message);
    std::printf("   message: %s\n", result.message.c_str());
    const auto simd = run("divergent_simd", table, Dim3{1, 1, 1}, Dim3{32, 1, 1});
    check(!simd.ok && simd.message.find("simd_shuffle_down") != std::string::npos &&
              simd.message.find("dialect-self-test.metal:") != std::string::npos,
          "lanes calling different simd functions fail naming both", simd.message);
    std::printf("   message: %s\n", simd.message.c_str());
    ArgumentTable empty;
    const auto unbound = run("divergent_barrier", empty, Dim3{1, 1, 1}, Dim3{32, 1, 1});
    check(!unbound.ok && unbound.message.find("parameter 'output' [[buffer(0)]] is not bound") != std::string::npos,
          "an unbound buffer fails the dispatch", unbound.message);
  }
  {
    std::vector<float> output(16, 0.0f);
    unsigned offset = 4;
    ArgumentTable table;
    bind(table, 0, output);
    table.buffers[1] = &offset;
    table.buffer_bytes[1] = sizeof offset;
    const auto aligned = run("vector_store", table, Dim3{1, 1, 1}, Dim3{32, 1, 1});
    check(aligned.ok && output[4] == 1.0f && output[7] == 4.0f, "an aligned float4 store runs", aligned.message);
    offset = 2;
    const auto misaligned = run("vector_store", table, Dim3{1, 1, 1}, Dim3{32, 1, 1});
    check(!misaligned.ok && misaligned.message.find("kernel 'vector_store'") != std::string::npos &&
              misaligned.message.find("16-byte store of float4 at dialect-self-test.metal:") != std::string::npos &&
              misaligned.message.find("misaligned address") != std::string::npos,
          "a float4 store through an address that is not 16-byte aligned fails naming the kernel and the .metal line",
          misaligned.message);
    std::printf("   message: %s\n", misaligned.message.c_str());
  }
  std::printf("%d failures\n", self_test::failures);
  return self_test::failures == 0 ? 0 : 1;
}
