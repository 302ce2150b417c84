// device/sim_device.cpp — the GPU of the simulator build: kiln's .metal kernels, rewritten and
// compiled as C++ through @kiln/gpu-sim's Metal dialect, run on the CPU.
//
// Model: device memory is host memory (each allocation followed by a 64-byte red zone whose bytes
// must never change: a kernel writing past a buffer fails its command buffer, naming the kernel);
// buffers are reference counted like MTLBuffers (a committed batch keeps its buffers alive); a
// queue thread executes committed batches in order, one dispatch at a time through
// gpu_sim::metal::dispatch, and calls each batch's completion handler from that thread — the
// same asynchrony the Metal host sees, so the shared batching, fencing and error code is
// exercised. A kernel fault (divergent barrier, unbound buffer, missing function constant) fails
// the batch with the engine's message, as a GPU error would.
#include "sim_device.h"

#include <gpu_sim/metal/kernel_abi.hpp>

#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "../host/device.h"
#include "kiln/native_error.h"

namespace kiln::metal {
namespace sim {

constexpr std::size_t kRedZoneBytes = 64;
constexpr unsigned char kRedZoneByte = 0xa5;

struct Machine {
  std::mutex mutex;
  SimulatorConfig config;
  std::size_t used_bytes = 0;
};

static Machine& machine() {
  static Machine state;
  return state;
}

/** One simulated MTLBuffer. */
struct Allocation {
  unsigned char* memory;
  std::size_t bytes;
  int references;
};

void configure(const SimulatorConfig& config) {
  std::lock_guard<std::mutex> lock(machine().mutex);
  machine().config = config;
}

SimulatorConfig config() {
  std::lock_guard<std::mutex> lock(machine().mutex);
  return machine().config;
}

void set_workers(unsigned workers) {
  gpu_sim::EngineSettings settings = gpu_sim::Engine::instance().settings();
  settings.workers = workers;
  gpu_sim::Engine::instance().configure(settings);
}

const char* fiber_implementation() { return gpu_sim::kFiberImplementation; }

}  // namespace sim

namespace {

std::string take_injected_error() {
  std::lock_guard<std::mutex> lock(sim::machine().mutex);
  std::string error = sim::machine().config.inject_command_buffer_error;
  sim::machine().config.inject_command_buffer_error.clear();
  return error;
}

DeviceFacts simulated_facts(const sim::SimulatorConfig& config) {
  DeviceFacts facts;
  facts.name = config.name;
  facts.unified_memory = true;
  facts.recommended_working_set_bytes = config.recommended_working_set_bytes;
  facts.max_buffer_bytes = config.memory_bytes;
  facts.family = config.family;
  facts.simdgroup_matrix = config.simdgroup_matrix;
  facts.bf16 = true;
  facts.bfloat_type = config.family.rfind("apple", 0) == 0 && std::atoi(config.os_version.c_str()) >= 14;
  facts.os_version = config.os_version;
  return facts;
}

void release_allocation(sim::Allocation* allocation) {
  bool last = false;
  {
    std::lock_guard<std::mutex> lock(sim::machine().mutex);
    last = --allocation->references == 0;
    if (last) sim::machine().used_bytes -= allocation->bytes;
  }
  if (last) {
    std::free(allocation->memory);
    delete allocation;
  }
}

void retain_allocation(sim::Allocation* allocation) {
  std::lock_guard<std::mutex> lock(sim::machine().mutex);
  allocation->references++;
}

/** One encoded dispatch. */
struct SimDispatch {
  const gpu_sim::metal::KernelInfo* kernel = nullptr;
  gpu_sim::metal::ArgumentTable table;
  gpu_sim::Dim3 threadgroups;
  gpu_sim::Dim3 threads;
  std::string what;
  std::vector<std::vector<unsigned char>> bytes;
  std::vector<std::pair<int, sim::Allocation*>> buffers;
};

class SimBatch final : public CommandBatch {
 public:
  ~SimBatch() override {
    for (SimDispatch& dispatch : dispatches) {
      for (auto& [index, allocation] : dispatch.buffers) release_allocation(allocation);
    }
  }

  void encode(const Dispatch& dispatch, const std::vector<ResolvedBinding>& bindings) override {
    const gpu_sim::metal::KernelInfo* kernel = gpu_sim::metal::KernelRegistry::instance().find(dispatch.kernel);
    if (kernel == nullptr) {
      throw_device("no Metal function named '" + dispatch.kernel + "' in the kernel library (" + dispatch.what + ")",
                   "This is a bug in kiln's Metal backend: the dispatch plan names a kernel no .metal file defines.");
    }
    if (dispatch.threads.x * dispatch.threads.y * dispatch.threads.z > 1024) {
      throw_device("pipeline " + pipeline_key(dispatch) + " cannot run " +
                   std::to_string(dispatch.threads.x * dispatch.threads.y * dispatch.threads.z) +
                   " threads per threadgroup (the limit is 1024)");
    }
    SimDispatch encoded;
    encoded.kernel = kernel;
    encoded.threadgroups = gpu_sim::Dim3{dispatch.threadgroups.x, dispatch.threadgroups.y, dispatch.threadgroups.z};
    encoded.threads = gpu_sim::Dim3{dispatch.threads.x, dispatch.threads.y, dispatch.threads.z};
    encoded.what = dispatch.what;
    for (const ConstantValue& constant : dispatch.constants) {
      if (constant.kind == ConstantKind::kBool)
        encoded.table.set_constant(constant.index, gpu_sim::metal::ConstantType::kBool, constant.value != 0);
      else
        encoded.table.set_constant(constant.index, gpu_sim::metal::ConstantType::kInt,
                                   static_cast<int>(constant.value));
    }
    encoded.bytes.reserve(bindings.size());
    for (const ResolvedBinding& binding : bindings) {
      if (binding.bytes != nullptr) {
        encoded.bytes.push_back(*binding.bytes);
        encoded.table.buffers[binding.index] = encoded.bytes.back().data();
        encoded.table.buffer_bytes[binding.index] = encoded.bytes.back().size();
        continue;
      }
      auto* allocation = static_cast<sim::Allocation*>(binding.buffer->handle);
      retain_allocation(allocation);
      encoded.buffers.emplace_back(binding.index, allocation);
      encoded.table.buffers[binding.index] = allocation->memory + binding.offset_bytes;
      encoded.table.buffer_bytes[binding.index] = allocation->bytes - binding.offset_bytes;
    }
    dispatches.push_back(std::move(encoded));
  }

  /** Runs every dispatch in order; stops at the first failure. */
  BatchStatus execute() {
    BatchStatus status;
    for (SimDispatch& dispatch : dispatches) {
      const gpu_sim::LaunchResult result =
          gpu_sim::metal::dispatch(*dispatch.kernel, dispatch.table, dispatch.threadgroups, dispatch.threads);
      if (!result.ok) {
        status.ok = false;
        status.message = "kernel " + std::string(dispatch.kernel->name) + " (" + dispatch.what +
                         ") faulted in the simulator: " + result.message;
        return status;
      }
      for (const auto& [index, allocation] : dispatch.buffers) {
        for (std::size_t i = 0; i < sim::kRedZoneBytes; i++) {
          if (allocation->memory[allocation->bytes + i] != sim::kRedZoneByte) {
            status.ok = false;
            status.message = "kernel " + std::string(dispatch.kernel->name) + " (" + dispatch.what +
                             ") wrote past the end of the " + std::to_string(allocation->bytes) +
                             "-byte buffer bound at [[buffer(" + std::to_string(index) + ")]]";
            std::memset(allocation->memory + allocation->bytes, sim::kRedZoneByte, sim::kRedZoneBytes);
            return status;
          }
        }
      }
    }
    return status;
  }

  std::vector<SimDispatch> dispatches;
};

class SimDevice final : public Device {
 public:
  explicit SimDevice(const DeviceFacts& facts) : facts_(facts), queue_thread_([this] { run_queue(); }) {}

  ~SimDevice() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    ready_.notify_all();
    queue_thread_.join();
  }

  const DeviceFacts& facts() const override { return facts_; }

  bool allocate(std::size_t bytes, DeviceBuffer* buffer) override {
    {
      std::lock_guard<std::mutex> lock(sim::machine().mutex);
      if (sim::machine().used_bytes + bytes > sim::machine().config.memory_bytes) return false;
      sim::machine().used_bytes += bytes;
    }
    auto* memory = static_cast<unsigned char*>(std::aligned_alloc(256, (bytes + sim::kRedZoneBytes + 255) / 256 * 256));
    if (memory == nullptr) {
      std::lock_guard<std::mutex> lock(sim::machine().mutex);
      sim::machine().used_bytes -= bytes;
      return false;
    }
    // Fresh GPU memory holds garbage: NaN bytes make a read before the first write visible.
    std::memset(memory, 0xff, bytes);
    std::memset(memory + bytes, sim::kRedZoneByte, sim::kRedZoneBytes);
    auto* allocation = new sim::Allocation{memory, bytes, 1};
    buffer->handle = allocation;
    buffer->contents = memory;
    buffer->bytes = bytes;
    return true;
  }

  void retain(const DeviceBuffer& buffer) override { retain_allocation(static_cast<sim::Allocation*>(buffer.handle)); }

  void release(const DeviceBuffer& buffer) override {
    release_allocation(static_cast<sim::Allocation*>(buffer.handle));
  }

  /** Bytes of simulated GPU memory in use by this process (every simulated device shares it). */
  std::uint64_t allocated_bytes() const override {
    std::lock_guard<std::mutex> lock(sim::machine().mutex);
    return sim::machine().used_bytes;
  }

  std::unique_ptr<CommandBatch> begin_batch() override { return std::make_unique<SimBatch>(); }

  void commit(std::unique_ptr<CommandBatch> batch, std::function<void(const BatchStatus&)> done) override {
    std::unique_ptr<SimBatch> owned(static_cast<SimBatch*>(batch.release()));
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(Entry{std::move(owned), std::move(done), take_injected_error()});
    }
    ready_.notify_all();
  }

 private:
  struct Entry {
    std::unique_ptr<SimBatch> batch;
    std::function<void(const BatchStatus&)> done;
    std::string injected;
  };

  void run_queue() {
    for (;;) {
      Entry entry;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        entry = std::move(queue_.front());
        queue_.pop_front();
      }
      BatchStatus status;
      if (entry.injected == "out-of-memory") {
        status = BatchStatus{false, true,
                             "Insufficient Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory) (simulated)"};
      } else if (entry.injected == "timeout") {
        status = BatchStatus{false, false,
                             "Caused GPU Timeout Error (00000002:kIOGPUCommandBufferCallbackErrorTimeout) (simulated)"};
      } else if (!entry.injected.empty()) {
        status = BatchStatus{
            false, false,
            "Caused GPU Address Fault Error (0000000b:kIOGPUCommandBufferCallbackErrorPageFault) (simulated)"};
      } else {
        status = entry.batch->execute();
      }
      entry.batch.reset();
      entry.done(status);
    }
  }

  DeviceFacts facts_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Entry> queue_;
  bool stopping_ = false;
  std::thread queue_thread_;
};

}  // namespace

ProbeReport probe_devices() {
  const sim::SimulatorConfig config = sim::config();
  ProbeReport report;
  const int major = std::atoi(config.os_version.c_str());
  if (major < 13) {
    report.status = "os-too-old";
    report.message = "macOS " + config.os_version;
    return report;
  }
  if (config.device_count <= 0) {
    report.status = "no-device";
    return report;
  }
  if (config.family == "mac1") {
    report.status = "unsupported-gpu";
    report.message = config.name;
    return report;
  }
  for (int i = 0; i < config.device_count; i++) report.devices.push_back(simulated_facts(config));
  report.status = "ok";
  return report;
}

std::unique_ptr<Device> open_device(int index) {
  const ProbeReport report = probe_devices();
  if (report.status != "ok")
    throw_device("no usable Metal device (probe: " + report.status + ")",
                 "Run `kiln doctor` or check probe() of @kiln/backend-metal.");
  if (index < 0 || index >= static_cast<int>(report.devices.size())) {
    throw_invalid("device index " + std::to_string(index) + " is out of range: this machine has " +
                      std::to_string(report.devices.size()) + " Metal device(s)",
                  "Pass deviceIndex between 0 and " + std::to_string(report.devices.size() - 1) + ".");
  }
  return std::make_unique<SimDevice>(report.devices[static_cast<std::size_t>(index)]);
}

const char* build_name() { return "Metal simulator"; }

bool is_simulator() { return true; }

}  // namespace kiln::metal
