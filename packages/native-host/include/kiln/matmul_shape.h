// kiln/matmul_shape.h — the dimensions of a batched matmul (core's MatmulParams), shared by the
// host, CUDA's launchers and cuBLAS path, and Metal's dispatch plan. Plain C++ (nvcc-safe).
#pragma once

#include <cstdint>

namespace kiln {

/** Batched matmul dimensions: out [batch, m, n] = op(a) [m, k] · op(b) [k, n] per batch entry. */
struct MatmulShape {
  long long batch = 1;
  long long m = 0;
  long long n = 0;
  long long k = 0;
  bool transpose_a = false;
  bool transpose_b = false;
  long long batch_stride_a = 0;
  long long batch_stride_b = 0;
};

}  // namespace kiln
