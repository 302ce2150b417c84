// plan/dispatch.h — what the host executes for one kernel call: a list of dispatches, each naming
// the kernel (its MSL host name), its function constants, the grid (threadgroups × threads per
// threadgroup) and the buffers and argument bytes bound at each [[buffer(n)]] index. The Metal
// host (device/metal_device.mm) turns a Dispatch into pipeline lookup + setBuffer/setBytes +
// dispatchThreadgroups; the simulator (device/sim_device.cpp) runs the same Dispatch on gpu_sim,
// so both execute exactly the plan computed by plan/dispatch_plan.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/buffers.h"

namespace kiln::metal {

/** Threadgroups per grid or threads per threadgroup. */
struct Size3 {
  std::uint32_t x = 1;
  std::uint32_t y = 1;
  std::uint32_t z = 1;
};

/** The MSL type of a function constant value. */
enum class ConstantKind { kBool, kInt };

/** One function constant of a pipeline. */
struct ConstantValue {
  /** [[function_constant(index)]]. */
  int index;
  /** Its name in the .metal file (for logs). */
  const char* name;
  /** bool or int. */
  ConstantKind kind;
  /** The value (0/1 for bool). */
  std::int32_t value;
};

/** What is bound at one [[buffer(index)]]: a range of a buffer, the stream's error record, or argument bytes. */
struct Binding {
  /** [[buffer(index)]]. */
  int index = 0;
  /** The kernel parameter's role, for logs ("x", "out", "args"). */
  const char* role = "";
  /** A buffer binding (setBuffer:offset:atIndex:), or nullptr. */
  BufferRecord* buffer = nullptr;
  /** Byte offset into the buffer. */
  std::size_t offset_bytes = 0;
  /** True: bind the backend's device error record (index-checking kernels). */
  bool error_record = false;
  /** Argument bytes (setBytes:length:atIndex:) when neither a buffer nor the error record. */
  std::vector<unsigned char> bytes;
  /** The argument struct's name, for logs. */
  const char* bytes_type = "";
};

/** One kernel dispatch (dispatchThreadgroups:threadsPerThreadgroup:). */
struct Dispatch {
  /** MSL host name, e.g. "unary_f32". */
  std::string kernel;
  /** Function constants (the pipeline cache key together with the kernel). */
  std::vector<ConstantValue> constants;
  /** Threadgroups in the grid. */
  Size3 threadgroups;
  /** Threads per threadgroup. */
  Size3 threads;
  /** Buffers and argument bytes, in [[buffer(n)]] order. */
  std::vector<Binding> bindings;
  /** What the call was, for messages: "unary exp f32 [1000]". */
  std::string what;
};

/** The dispatches of one kernel call, in order (empty for empty tensors). */
using Plan = std::vector<Dispatch>;

/** "unary_f32 {kUnaryOp=3}" — the pipeline cache key. */
std::string pipeline_key(const Dispatch& dispatch);

}  // namespace kiln::metal
