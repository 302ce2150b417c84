#include "cublas.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <climits>
#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

#include "cuda_error.h"

namespace kiln {

// ---- the part of cuBLAS's C API kiln uses (values as in cublas_api.h and library_types.h) ----
namespace {

using CublasStatus = int;
using CublasHandle = void*;
constexpr CublasStatus kCublasSuccess = 0;
constexpr int kOpN = 0;
constexpr int kOpT = 1;
constexpr int kDataF32 = 0;                             // CUDA_R_32F
constexpr int kDataF16 = 2;                             // CUDA_R_16F
constexpr int kDataBF16 = 14;                           // CUDA_R_16BF
constexpr int kCompute32F = 68;                         // CUBLAS_COMPUTE_32F
constexpr int kCompute32FFastTF32 = 77;                 // CUBLAS_COMPUTE_32F_FAST_TF32
constexpr int kDefaultMath = 0;                         // CUBLAS_DEFAULT_MATH
constexpr int kDisallowReducedPrecisionReduction = 16;  // CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION
constexpr int kGemmDefault = -1;                        // CUBLAS_GEMM_DEFAULT
constexpr int kAtomicsNotAllowed = 0;                   // CUBLAS_ATOMICS_NOT_ALLOWED

using CreateFunction = CublasStatus (*)(CublasHandle*);
using DestroyFunction = CublasStatus (*)(CublasHandle);
using SetStreamFunction = CublasStatus (*)(CublasHandle, cudaStream_t);
using SetMathModeFunction = CublasStatus (*)(CublasHandle, int);
using SetAtomicsModeFunction = CublasStatus (*)(CublasHandle, int);
using GetVersionFunction = CublasStatus (*)(CublasHandle, int*);
using GemmStridedBatchedFunction = CublasStatus (*)(CublasHandle, int, int, int, int, int, const void*, const void*,
                                                    int, int, long long, const void*, int, int, long long, const void*,
                                                    void*, int, int, long long, int, int, int);

const char* status_name(CublasStatus status) {
  switch (status) {
    case 0: return "CUBLAS_STATUS_SUCCESS";
    case 1: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case 3: return "CUBLAS_STATUS_ALLOC_FAILED";
    case 7: return "CUBLAS_STATUS_INVALID_VALUE";
    case 8: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case 11: return "CUBLAS_STATUS_MAPPING_ERROR";
    case 13: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case 14: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case 15: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case 16: return "CUBLAS_STATUS_LICENSE_ERROR";
    default: return "an unknown cuBLAS status";
  }
}

std::string describe_status(CublasStatus status) {
  return std::string(status_name(status)) + " (" + std::to_string(status) + ")";
}

bool is_directory(const std::string& path) {
  struct stat info{};
  return stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

bool exists(const std::string& path) {
  struct stat info{};
  return stat(path.c_str(), &info) == 0;
}

std::string last_dl_error() {
  const char* error = dlerror();
  return error != nullptr ? error : "unknown dlopen error";
}

}  // namespace

struct CublasFunctions {
  void* library = nullptr;
  void* lt_library = nullptr;
  CreateFunction create = nullptr;
  DestroyFunction destroy = nullptr;
  SetStreamFunction set_stream = nullptr;
  SetMathModeFunction set_math_mode = nullptr;
  SetAtomicsModeFunction set_atomics_mode = nullptr;
  GetVersionFunction get_version = nullptr;
  GemmStridedBatchedFunction gemm_strided_batched = nullptr;
  // Libraries stay loaded for the life of the process (as the CUDA runtime's own do).
};

namespace {

/** Opens libcublasLt (when given) then libcublas and resolves every symbol; fills `lookup` either way. */
void open_pair(const std::string& lt_path, const std::string& path, CublasLookup& lookup) {
  dlerror();
  void* lt = nullptr;
  if (!lt_path.empty()) {
    lt = dlopen(lt_path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (lt == nullptr) {
      lookup.reason = lt_path + ": " + last_dl_error();
      return;
    }
  }
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    lookup.reason = path + ": " + last_dl_error();
    return;
  }
  lookup.location = path;
  if (vendor::kSimulator && dlsym(library, "kiln_simulated_cublas") == nullptr) {
    lookup.reason = path +
                    " is a real cuBLAS, which needs a GPU: the simulator only loads kiln's test double (a library "
                    "exporting kiln_simulated_cublas)";
    return;
  }
  auto functions = std::make_shared<CublasFunctions>();
  functions->library = library;
  functions->lt_library = lt;
  const auto resolve = [&](const char* name) -> void* {
    void* symbol = dlsym(library, name);
    if (symbol == nullptr && lookup.reason.empty()) lookup.reason = path + " has no " + name;
    return symbol;
  };
  functions->create = reinterpret_cast<CreateFunction>(resolve("cublasCreate_v2"));
  functions->destroy = reinterpret_cast<DestroyFunction>(resolve("cublasDestroy_v2"));
  functions->set_stream = reinterpret_cast<SetStreamFunction>(resolve("cublasSetStream_v2"));
  functions->set_math_mode = reinterpret_cast<SetMathModeFunction>(resolve("cublasSetMathMode"));
  functions->set_atomics_mode = reinterpret_cast<SetAtomicsModeFunction>(resolve("cublasSetAtomicsMode"));
  functions->get_version = reinterpret_cast<GetVersionFunction>(resolve("cublasGetVersion_v2"));
  functions->gemm_strided_batched = reinterpret_cast<GemmStridedBatchedFunction>(resolve("cublasGemmStridedBatchedEx"));
  if (!lookup.reason.empty()) return;
  lookup.loaded = true;
  lookup.functions = std::move(functions);
}

/** Tries the .13 then the .12 pair in `directory` ("" = the loader's search path). */
CublasLookup search(const std::string& directory) {
  CublasLookup lookup;
  std::vector<std::string> reasons;
  for (const char* major : {"13", "12"}) {
    const std::string prefix = directory.empty() ? "" : directory + "/";
    const std::string lt = prefix + "libcublasLt.so." + major;
    const std::string main = prefix + "libcublas.so." + major;
    if (!directory.empty() && !exists(main)) {
      reasons.push_back(main + " does not exist");
      continue;
    }
    CublasLookup attempt;
    open_pair(directory.empty() || exists(lt) ? lt : "", main, attempt);
    if (attempt.loaded) return attempt;
    reasons.push_back(attempt.reason);
  }
  std::string joined;
  for (const std::string& reason : reasons) joined += (joined.empty() ? "" : "; ") + reason;
  lookup.location = directory.empty() ? "libcublas.so.13, libcublas.so.12" : directory;
  lookup.reason = joined;
  return lookup;
}

/** A file: libcublas.so.* itself; libcublasLt with the same suffix (or .13/.12) from its directory when present. */
CublasLookup open_file(const std::string& path) {
  CublasLookup lookup;
  const std::size_t slash = path.rfind('/');
  const std::string directory = slash == std::string::npos ? "." : path.substr(0, slash);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  std::string lt;
  if (name.rfind("libcublas", 0) == 0) {
    const std::string candidate = directory + "/libcublasLt" + name.substr(std::string("libcublas").size());
    if (exists(candidate)) lt = candidate;
  }
  for (const char* major : {"13", "12"}) {
    const std::string candidate = directory + "/libcublasLt.so." + major;
    if (lt.empty() && exists(candidate)) lt = candidate;
  }
  open_pair(lt, path, lookup);
  if (lookup.location.empty()) lookup.location = path;
  return lookup;
}

CublasLookup look(const std::string& explicit_path) {
  std::string path = explicit_path;
  std::string source = "cublasPath";
  if (path.empty()) {
    const char* environment = std::getenv("KILN_CUBLAS_PATH");
    if (environment != nullptr && environment[0] != '\0') {
      path = environment;
      source = "KILN_CUBLAS_PATH";
    }
  }
  if (path.empty()) {
    if (vendor::kSimulator) {
      CublasLookup lookup;
      lookup.location = "none";
      lookup.reason =
          "the simulator does not search for cuBLAS (a real cuBLAS needs a GPU; tests pass cublasPath to kiln's test "
          "double)";
      return lookup;
    }
    CublasLookup lookup = search("");
    if (!lookup.loaded)
      lookup.reason = "not found by the dynamic loader (" + lookup.reason +
                      "); set KILN_CUBLAS_PATH to the directory holding libcublas.so.13";
    return lookup;
  }
  if (!exists(path)) {
    CublasLookup lookup;
    lookup.location = path;
    lookup.reason = source + "=" + path + " does not exist";
    return lookup;
  }
  CublasLookup lookup = is_directory(path) ? search(path) : open_file(path);
  if (!lookup.loaded) lookup.reason = source + "=" + path + ": " + lookup.reason;
  return lookup;
}

}  // namespace

const CublasLookup& find_cublas(const std::string& explicit_path) {
  static std::mutex mutex;
  static std::map<std::string, CublasLookup> cache;
  std::lock_guard<std::mutex> lock(mutex);
  // The environment is part of the key: a test may change KILN_CUBLAS_PATH between backends.
  const char* environment = std::getenv("KILN_CUBLAS_PATH");
  const std::string key = explicit_path + '\n' + (environment != nullptr ? environment : "");
  auto found = cache.find(key);
  if (found == cache.end()) found = cache.emplace(key, look(explicit_path)).first;
  return found->second;
}

std::string cublas_version_text(int version) {
  if (version <= 0) return "unknown version";
  return std::to_string(version / 10000) + "." + std::to_string((version / 100) % 100) + "." +
         std::to_string(version % 100);
}

CublasSession::CublasSession(const CublasLookup& lookup, cudaStream_t stream, bool allow_tf32)
    : functions_(lookup.functions), allow_tf32_(allow_tf32) {
  if (!lookup.loaded || !functions_)
    throw NativeError(ErrorKind::kDevice, "cuda backend: cuBLAS is not loaded: " + lookup.reason);
  const CublasStatus created = functions_->create(&handle_);
  if (created != kCublasSuccess) {
    handle_ = nullptr;
    throw NativeError(
        ErrorKind::kDevice,
        "cuda backend: cublasCreate failed with " + describe_status(created) + " (" + lookup.location + ")",
        "Check that this cuBLAS matches the driver (cuBLAS 13 needs r580+), or create the backend with matmul: "
        "'kiln'.");
  }
  CublasStatus status = functions_->set_stream(handle_, stream);
  if (status == kCublasSuccess)
    status = functions_->set_math_mode(handle_, kDefaultMath | kDisallowReducedPrecisionReduction);
  // Reproducible results (docs/backend-cuda.md, determinism): no atomics-based algorithms, and one
  // stream per handle, so cuBLAS's default workspace and its split-K reductions are used in a fixed order.
  if (status == kCublasSuccess) status = functions_->set_atomics_mode(handle_, kAtomicsNotAllowed);
  if (status == kCublasSuccess) status = functions_->get_version(handle_, &version_);
  if (status != kCublasSuccess) {
    functions_->destroy(handle_);
    handle_ = nullptr;
    throw NativeError(ErrorKind::kDevice,
                      "cuda backend: setting up the cuBLAS handle failed with " + describe_status(status));
  }
}

CublasSession::~CublasSession() {
  if (handle_ != nullptr) functions_->destroy(handle_);
}

bool CublasSession::fits(const MatmulShape& shape) {
  const Index limit = INT_MAX;
  return shape.m <= limit && shape.n <= limit && shape.k <= limit && shape.batch <= limit;
}

void CublasSession::gemm(int dtype, const void* a, const void* b, void* out, const MatmulShape& shape) {
  const int type = dtype == kF32 ? kDataF32 : dtype == kF16 ? kDataF16 : kDataBF16;
  const int compute = dtype == kF32 && allow_tf32_ ? kCompute32FFastTF32 : kCompute32F;
  const float alpha = 1.0f;
  const float beta = 0.0f;
  // Row-major out [m, n] is column-major out^T [n, m] = op(B)^T · op(A)^T: B is the first operand.
  const int m = static_cast<int>(shape.n);
  const int n = static_cast<int>(shape.m);
  const int k = static_cast<int>(shape.k);
  const int first_op = shape.transpose_b ? kOpT : kOpN;
  const int first_ld = static_cast<int>(shape.transpose_b ? shape.k : shape.n);
  const int second_op = shape.transpose_a ? kOpT : kOpN;
  const int second_ld = static_cast<int>(shape.transpose_a ? shape.m : shape.k);
  const CublasStatus status =
      functions_->gemm_strided_batched(handle_, first_op, second_op, m, n, k, &alpha, b, type, first_ld,
                                       shape.batch_stride_b, a, type, second_ld, shape.batch_stride_a, &beta, out, type,
                                       m, shape.m * shape.n, static_cast<int>(shape.batch), compute, kGemmDefault);
  if (status != kCublasSuccess) {
    NativeError failure(
        status == 3 ? ErrorKind::kOutOfMemory : ErrorKind::kDevice,
        "cuda backend: cublasGemmStridedBatchedEx failed with " + describe_status(status),
        "Create the backend with matmul: 'kiln' to use kiln's own kernels, and report this with the shapes.");
    throw failure;
  }
  calls_++;
}

}  // namespace kiln
