// kiln/matmul_shape.h — the dimensions of a batched matmul (core's MatmulParams), shared by the
// host, CUDA's launchers and cuBLAS path, and Metal's dispatch plan. Plain C++ (nvcc-safe).
#pragma once

#include <cstdint>

namespace kiln {

/** Batched matmul dimensions: out [batch, m, n] = op(a) [m, k] · op(b) [k, n] per batch entry. */
struct MatmulShape {
  std::int64_t batch = 1;
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  bool transpose_a = false;
  bool transpose_b = false;
  std::int64_t batch_stride_a = 0;
  std::int64_t batch_stride_b = 0;
};

}  // namespace kiln
