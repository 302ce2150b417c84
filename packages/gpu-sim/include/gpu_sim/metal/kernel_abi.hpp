// gpu_sim/metal/kernel_abi.hpp — how host code runs a .metal kernel compiled through the shim:
// the argument table a dispatch binds (buffers by [[buffer(n)]] index, threadgroup memory by
// [[threadgroup(n)]] index, function constants by [[function_constant(n)]] index), the registry
// of kernels by host name, and dispatch() — Metal's dispatchThreadgroups:threadsPerThreadgroup:
// on the engine. Host code includes this header alone (it defines none of MSL's keyword macros);
// the rewrite step (metal-rewrite.js) appends to every rewritten .metal file the bindings that
// fill each kernel's parameters from the table and register it.
//
// Also here: function constants (read by kernels, set per dispatch under a lock, so two
// dispatches never see each other's values) and threadgroup storage (function-scope
// `threadgroup` arrays: one copy per engine worker, refilled with 0xFF bytes when a new
// threadgroup starts, so a read before the first write shows up as NaN/garbage as on a GPU).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <type_traits>

#include "../engine.hpp"

namespace gpu_sim::metal {

/** Highest [[buffer(n)]] / [[threadgroup(n)]] index + 1 (Metal's limit for compute). */
inline constexpr int kMaxBindings = 31;
/** Function constant indices the simulator accepts (0 … kMaxFunctionConstants − 1). */
inline constexpr int kMaxFunctionConstants = 64;

/** The MSL type of a function constant value. */
enum class ConstantType : std::uint8_t { kBool, kShort, kUshort, kInt, kUint, kHalf, kFloat };

/** "int", "bool", … */
inline const char* constant_type_name(ConstantType type) {
  switch (type) {
    case ConstantType::kBool: return "bool";
    case ConstantType::kShort: return "short";
    case ConstantType::kUshort: return "ushort";
    case ConstantType::kInt: return "int";
    case ConstantType::kUint: return "uint";
    case ConstantType::kHalf: return "half";
    default: return "float";
  }
}

/** What one dispatch binds, as a compute command encoder would hold it. */
struct ArgumentTable {
  /** setBuffer:offset:atIndex: / setBytes:length:atIndex: — the address of the first byte. */
  void* buffers[kMaxBindings] = {};
  /** Bytes available from that address (to the end of the buffer, or the setBytes length). */
  std::size_t buffer_bytes[kMaxBindings] = {};
  /** setThreadgroupMemoryLength:atIndex:. */
  std::size_t threadgroup_bytes[kMaxBindings] = {};
  /** Offsets of each threadgroup binding inside the block's dynamic shared memory (dispatch() fills them). */
  std::size_t threadgroup_offsets[kMaxBindings] = {};
  /** One function constant value. */
  struct Constant {
    bool set = false;
    ConstantType type = ConstantType::kInt;
    /** The value's bytes (little-endian, in the low bytes). */
    std::uint64_t bits = 0;
  };
  /** MTLFunctionConstantValues by index. */
  Constant constants[kMaxFunctionConstants];

  /** Binds a function constant. */
  template <typename T>
  void set_constant(int index, ConstantType type, T value) {
    static_assert(sizeof(T) <= 8);
    constants[index].set = true;
    constants[index].type = type;
    constants[index].bits = 0;
    std::memcpy(&constants[index].bits, &value, sizeof(T));
  }

  /** Kernel parameter `name` bound at [[buffer(index)]], as the parameter's pointer or reference type P. */
  template <typename P>
  P argument(int index, const char* name) const {
    void* address = buffers[index];
    if (address == nullptr) {
      throw KernelFault(std::string("parameter '") + name + "' [[buffer(" + std::to_string(index) + ")]] is not bound");
    }
    if constexpr (std::is_pointer_v<P>) {
      return static_cast<P>(address);
    } else {
      static_assert(std::is_reference_v<P>, "buffer parameters are pointers or references");
      using Value = std::remove_reference_t<P>;
      if (buffer_bytes[index] < sizeof(Value)) {
        throw KernelFault(std::string("parameter '") + name + "' [[buffer(" + std::to_string(index) + ")]] needs " +
                          std::to_string(sizeof(Value)) + " bytes but only " + std::to_string(buffer_bytes[index]) +
                          " are bound (host and shader disagree on the struct's layout)");
      }
      return *static_cast<Value*>(address);
    }
  }

  /** Kernel parameter `name` at [[threadgroup(index)]]: the running threadgroup's memory for that binding. */
  template <typename P>
  P threadgroup(int index, const char* name) const {
    static_assert(std::is_pointer_v<P>, "threadgroup parameters are pointers");
    if (threadgroup_bytes[index] == 0) {
      throw KernelFault(std::string("parameter '") + name + "' [[threadgroup(" + std::to_string(index) +
                        ")]] has no threadgroup memory");
    }
    return reinterpret_cast<P>(static_cast<unsigned char*>(current_runner().dynamic_shared()) +
                               threadgroup_offsets[index]);
  }
};

/** MSL's attribute builtins a kernel parameter can ask for. */
enum class Builtin {
  kThreadPositionInGrid,
  kThreadPositionInThreadgroup,
  kThreadgroupPositionInGrid,
  kThreadsPerGrid,
  kThreadsPerThreadgroup,
  kThreadgroupsPerGrid,
  kThreadIndexInThreadgroup,
  kThreadIndexInSimdgroup,
  kSimdgroupIndexInThreadgroup,
  kThreadsPerSimdgroup,
  kSimdgroupsPerThreadgroup,
};

/** The running GPU thread's value of `kind` (scalar builtins in .x). */
inline Dim3 builtin_value(Builtin kind) {
  const Dim3& thread = thread_index();
  const Dim3& group = block_index();
  const Dim3& size = block_extent();
  const Dim3& groups = grid_extent();
  const unsigned linear = current_thread().linear;
  const unsigned per_group = size.x * size.y * size.z;
  switch (kind) {
    case Builtin::kThreadPositionInGrid:
      return Dim3{group.x * size.x + thread.x, group.y * size.y + thread.y, group.z * size.z + thread.z};
    case Builtin::kThreadPositionInThreadgroup: return thread;
    case Builtin::kThreadgroupPositionInGrid: return group;
    case Builtin::kThreadsPerGrid: return Dim3{groups.x * size.x, groups.y * size.y, groups.z * size.z};
    case Builtin::kThreadsPerThreadgroup: return size;
    case Builtin::kThreadgroupsPerGrid: return groups;
    case Builtin::kThreadIndexInThreadgroup: return Dim3{linear, 0, 0};
    case Builtin::kThreadIndexInSimdgroup: return Dim3{linear % kWarpSize, 0, 0};
    case Builtin::kSimdgroupIndexInThreadgroup: return Dim3{linear / kWarpSize, 0, 0};
    case Builtin::kThreadsPerSimdgroup: return Dim3{kWarpSize, 0, 0};
    default: return Dim3{(per_group + kWarpSize - 1) / kWarpSize, 0, 0};
  }
}

template <typename T>
constexpr ConstantType constant_type_of() {
  if constexpr (std::is_same_v<T, bool>)
    return ConstantType::kBool;
  else if constexpr (std::is_same_v<T, short>)
    return ConstantType::kShort;
  else if constexpr (std::is_same_v<T, unsigned short>)
    return ConstantType::kUshort;
  else if constexpr (std::is_same_v<T, int>)
    return ConstantType::kInt;
  else if constexpr (std::is_same_v<T, unsigned int>)
    return ConstantType::kUint;
  else if constexpr (std::is_same_v<T, float>)
    return ConstantType::kFloat;
  else
    return ConstantType::kHalf;
}

/**
 * A program-scope `constant T name [[function_constant(index)]];` of a .metal file. Its value is
 * the one the dispatching host set (bind() copies it before the launch); reading one the host
 * did not set faults the launch, as Metal refuses to build such a pipeline.
 */
template <typename T>
class FunctionConstant {
 public:
  constexpr FunctionConstant(const char* name, int index) : name_(name), index_(index) {}

  /** The value (faults when the host did not set it). */
  operator T() const {
    if (!defined_) {
      throw KernelFault(std::string("function constant '") + name_ + "' [[function_constant(" + std::to_string(index_) +
                        ")]] was not set by the host");
    }
    return value_;
  }

  /** True when the host set it (MSL's is_function_constant_defined). */
  bool defined() const { return defined_; }

  /** Takes this constant's value from `table`; returns an error (type mismatch) or "". */
  std::string bind(const ArgumentTable& table) {
    const ArgumentTable::Constant& constant = table.constants[index_];
    defined_ = constant.set;
    if (!constant.set) return "";
    if (constant.type != constant_type_of<T>()) {
      defined_ = false;
      return std::string("function constant '") + name_ + "' [[function_constant(" + std::to_string(index_) +
             ")]] is declared " + constant_type_name(constant_type_of<T>()) + " but the host set a " +
             constant_type_name(constant.type);
    }
    std::memcpy(&value_, &constant.bits, sizeof(T));
    return "";
  }

 private:
  const char* name_;
  int index_;
  bool defined_ = false;
  T value_{};
};

/** Storage of one function-scope threadgroup variable (see the file header); `Site` is a unique lambda type per declaration. */
template <typename T, typename Site>
T& threadgroup_storage(Site) {
  static_assert(std::is_trivially_default_constructible_v<std::remove_all_extents_t<T>>,
                "threadgroup variables hold trivial types");
  struct Slot {
    alignas(16) T value;
    const BlockRunner* runner;
    std::uint64_t serial;
  };
  static thread_local Slot slot{};
  const BlockRunner& runner = current_runner();
  if (slot.runner != &runner || slot.serial != runner.block_serial()) {
    std::memset(static_cast<void*>(&slot.value), 0xff, sizeof(T));
    slot.runner = &runner;
    slot.serial = runner.block_serial();
  }
  return slot.value;
}

/** What setting a file's function constants returns: "" or the first error (generated code spells no std::). */
using ConstantError = std::string;

/** `current` when it already holds an error, else `next`. */
inline ConstantError first_error(const ConstantError& current, const ConstantError& next) {
  return current.empty() ? next : current;
}

/** One kernel of a rewritten .metal file. */
struct KernelInfo {
  /** The host name (the MTLFunction name the host asks for). */
  const char* name;
  /** The .metal file it comes from. */
  const char* file;
  /** Copies the dispatch's function constants into the file's constants; returns an error or "". */
  ConstantError (*set_constants)(const ArgumentTable& table);
  /** Runs in every GPU thread: fetches the parameters from the table and calls the kernel. */
  void (*body)(const ArgumentTable& table);
};

/** Kernels by host name (filled by static registrars in each rewritten file). */
class KernelRegistry {
 public:
  static KernelRegistry& instance() {
    static KernelRegistry registry;
    return registry;
  }
  void add(const KernelInfo* kernel) {
    std::lock_guard<std::mutex> lock(mutex_);
    kernels_[kernel->name] = kernel;
  }
  /** The kernel, or nullptr (Metal: newFunctionWithName returns nil). */
  const KernelInfo* find(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = kernels_.find(name);
    return found == kernels_.end() ? nullptr : found->second;
  }
  /** Every registered host name, sorted. */
  std::string names() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::string text;
    for (const auto& [name, kernel] : kernels_) text += (text.empty() ? "" : ", ") + name;
    return text;
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::string, const KernelInfo*> kernels_;
};

/** Registers a file's kernels at load time. */
struct KernelRegistrar {
  KernelRegistrar(const KernelInfo* kernels, std::size_t count) {
    for (std::size_t i = 0; i < count; i++) KernelRegistry::instance().add(&kernels[i]);
  }
};

/** Serialises dispatches: function constants are per-file globals, set for one dispatch at a time. */
inline std::mutex& dispatch_mutex() {
  static std::mutex mutex;
  return mutex;
}

/**
 * dispatchThreadgroups:threadsPerThreadgroup: — runs `kernel` over `threadgroups` groups of
 * `threads_per_threadgroup` threads with `table`'s bindings; blocks until done.
 */
inline LaunchResult dispatch(const KernelInfo& kernel, ArgumentTable table, Dim3 threadgroups,
                             Dim3 threads_per_threadgroup) {
  std::size_t shared = 0;
  for (int index = 0; index < kMaxBindings; index++) {
    table.threadgroup_offsets[index] = shared;
    shared += (table.threadgroup_bytes[index] + 15) / 16 * 16;
  }
  std::lock_guard<std::mutex> lock(dispatch_mutex());
  const std::string constant_error = kernel.set_constants(table);
  if (!constant_error.empty())
    return LaunchResult{false, std::string("kernel '") + kernel.name + "': " + constant_error};
  struct Context {
    const KernelInfo* kernel;
    const ArgumentTable* table;
  } context{&kernel, &table};
  LaunchShape shape{threadgroups, threads_per_threadgroup, shared, kernel.name};
  return Engine::instance().launch(
      shape,
      [](void* raw) {
        auto* context = static_cast<Context*>(raw);
        try {
          context->kernel->body(*context->table);
        } catch (const KernelFault& fault) {
          // Name the kernel and the thread in faults raised by the bindings and constants.
          const std::string text = fault.what();
          if (text.rfind("kernel '", 0) == 0) throw;
          throw KernelFault(std::string("kernel '") + context->kernel->name + "': thread " +
                            format_dim(thread_index()) + " of threadgroup " + format_dim(block_index()) + ": " + text);
        }
      },
      &context);
}

}  // namespace gpu_sim::metal
