// host/device.h — the GPU as kiln's shared host code sees it. Two implementations:
// device/metal_device.mm (MTLDevice, one MTLCommandQueue, shared-storage MTLBuffers, pipelines
// compiled from the embedded .metal sources) and device/sim_device.cpp (the same .metal kernels
// compiled as C++ through gpu-sim's Metal dialect, run on the CPU by a queue thread). Everything
// above this interface — argument checks, the dispatch plan, the buffer pool, batching, error
// records, KILN_DEBUG logging — is one source compiled into both addons.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "../plan/dispatch.h"
#include "kiln/buffer_pool.h"

namespace kiln::metal {

/** Facts about one GPU. */
struct DeviceFacts {
  /** MTLDevice.name, e.g. "Apple M3 Max". */
  std::string name;
  /** hasUnifiedMemory (Apple silicon: true). */
  bool unified_memory = true;
  /** recommendedMaxWorkingSetSize: the memory figure kiln reports and its default allocation limit. */
  std::uint64_t recommended_working_set_bytes = 0;
  /** maxBufferLength. */
  std::uint64_t max_buffer_bytes = 0;
  /** Newest GPU family supported: "apple9", "apple8", "apple7", "mac2", … */
  std::string family;
  /** 8×8 simdgroup matrices (Apple7+): the matmul kernel for m > 1. */
  bool simdgroup_matrix = false;
  /** bf16 storage and kernels (kiln's kernels convert bf16 in integer arithmetic: every Metal 3 GPU). */
  bool bf16 = true;
  /** MSL 3.1's `bfloat` type is available (an Apple GPU and macOS 14+): not needed by phase 1's kernels. */
  bool bfloat_type = false;
  /** macOS version, e.g. "14.5.0". */
  std::string os_version;
};

/** Outcome of a committed batch. */
struct BatchStatus {
  /** True when every kernel completed. */
  bool ok = true;
  /** The GPU ran out of memory executing it (becomes OutOfMemoryError). */
  bool out_of_memory = false;
  /** What failed, naming the kernel when the device knows it. */
  std::string message;
};

/** A resolved buffer binding (plan binding + the device buffer it names). */
struct ResolvedBinding {
  int index = 0;
  const DeviceBuffer* buffer = nullptr;
  std::size_t offset_bytes = 0;
  const std::vector<unsigned char>* bytes = nullptr;
};

/** One command buffer being encoded: dispatches in order. */
class CommandBatch {
 public:
  virtual ~CommandBatch() = default;
  /** Encodes a dispatch (pipeline from the cache; throws NativeError when the pipeline cannot be built). */
  virtual void encode(const Dispatch& dispatch, const std::vector<ResolvedBinding>& bindings) = 0;
};

/**
 * The GPU. Methods are called from the JS thread only; commit's callback runs on any thread.
 * allocate/release (kiln::PoolDevice): shared-storage buffers (a retained MTLBuffer or simulator
 * memory as `handle`, its CPU address as `contents`); release drops a reference, and work already
 * committed keeps the buffer alive until it completes.
 */
class Device : public PoolDevice {
 public:
  /** The GPU's facts. */
  virtual const DeviceFacts& facts() const = 0;
  /** Adds a reference to a buffer (a pending download keeps its buffer alive this way). */
  virtual void retain(const DeviceBuffer& buffer) = 0;
  /** A new command buffer. */
  virtual std::unique_ptr<CommandBatch> begin_batch() = 0;
  /** Commits a batch; `done` runs once, on a device thread, when it completed or failed. */
  virtual void commit(std::unique_ptr<CommandBatch> batch, std::function<void(const BatchStatus&)> done) = 0;
  /** Bytes the device holds for this process (MTLDevice.currentAllocatedSize). */
  virtual std::uint64_t allocated_bytes() const = 0;
};

/** The verdict of probe(). */
struct ProbeReport {
  /** "ok", "no-device", "os-too-old" (macOS < 13) or "unsupported-gpu" (no Metal 3). */
  std::string status;
  /** Explanation for a non-ok status. */
  std::string message;
  /** Usable GPUs (the system default first). */
  std::vector<DeviceFacts> devices;
};

/** Probes the machine's GPUs; never throws. */
ProbeReport probe_devices();

/** Opens GPU `index` of probe_devices() (throws NativeError). */
std::unique_ptr<Device> open_device(int index);

/** "Metal" or "Metal simulator". */
const char* build_name();

/** True in the simulator build. */
bool is_simulator();

}  // namespace kiln::metal
