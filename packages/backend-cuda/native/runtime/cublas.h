// runtime/cublas.h — cuBLAS, loaded at run time when the machine has it, for the batched matmuls.
//
// Nothing from cuBLAS is needed to build kiln: the few prototypes and enum values used are
// declared in cublas.cpp, and the libraries are opened with dlopen. Where it looks:
//   1. an explicit path (the backend option `cublasPath`, else the KILN_CUBLAS_PATH environment
//      variable): a directory holding libcublas.so.13 or .12 (and libcublasLt), or the file
//      libcublas.so.* itself;
//   2. otherwise the dynamic loader's search (LD_LIBRARY_PATH, the ld.so cache, …) for
//      libcublasLt.so.13 + libcublas.so.13, then the .12 pair.
// libcublasLt is opened first (RTLD_GLOBAL) so that libcublas finds it wherever it lives.
// The simulator build never searches: it only opens an explicit path, and only kiln's test
// double (a library exporting `kiln_simulated_cublas`), since a real cuBLAS needs a GPU.
//
// GEMMs: cublasGemmStridedBatchedEx on the row-major problem viewed column-major (out^T = op(B)^T ·
// op(A)^T), f32 accumulation for f32, f16 and bf16 (CUBLAS_COMPUTE_32F, reduced-precision split-K
// reductions disallowed); f32 uses no TF32 unless the backend was created with allowTf32.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "../kernels/matmul.cuh"

namespace kiln {

/** The cuBLAS entry points kiln uses (cublas.cpp). */
struct CublasFunctions;

/** What looking for cuBLAS found (cached per requested path). */
struct CublasLookup {
  /** True when both libraries opened and every symbol was found. */
  bool loaded = false;
  /** The libcublas file opened (or the names tried). */
  std::string location;
  /** Why not, when not loaded. */
  std::string reason;
  /** Opaque library state (function pointers), shared by every session. */
  std::shared_ptr<const CublasFunctions> functions;
};

/** Looks for cuBLAS: `explicit_path` (a file or directory), or "" for KILN_CUBLAS_PATH then the default names. Never throws. */
const CublasLookup& find_cublas(const std::string& explicit_path);

/** One backend's cuBLAS handle, bound to its stream. */
class CublasSession {
 public:
  /** Creates the handle; throws NativeError (kDevice) when cuBLAS cannot initialise. */
  CublasSession(const CublasLookup& lookup, cudaStream_t stream, bool allow_tf32);
  CublasSession(const CublasSession&) = delete;
  CublasSession& operator=(const CublasSession&) = delete;
  ~CublasSession();

  /** cuBLAS version as the library reports it (e.g. 130100 = 13.1.0). */
  int version() const { return version_; }
  /** True when f32 GEMMs may use TF32 tensor cores. */
  bool allow_tf32() const { return allow_tf32_; }
  /** GEMMs issued so far. */
  std::uint64_t calls() const { return calls_; }
  /** True when cuBLAS's int arguments can describe `shape`. */
  static bool fits(const MatmulShape& shape);
  /** Queues out = op(a)·op(b) for `dtype` (k ≥ 1, m, n, batch ≥ 1); throws NativeError naming the cuBLAS status on failure. */
  void gemm(int dtype, const void* a, const void* b, void* out, const MatmulShape& shape);

 private:
  std::shared_ptr<const CublasFunctions> functions_;
  void* handle_ = nullptr;
  int version_ = 0;
  bool allow_tf32_ = false;
  std::uint64_t calls_ = 0;
};

/** "13.1.0" for a cublasGetVersion number. */
std::string cublas_version_text(int version);

}  // namespace kiln
