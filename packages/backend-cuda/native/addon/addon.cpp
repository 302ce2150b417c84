// addon/addon.cpp — the module's exports: probe(), buildInfo(), opNames() and the Backend class
// (@kiln/native-host's, on a CudaDevice),
// and (simulator build only) configureSimulator() and takeBankConflicts(). Their TypeScript type:
// src/native/addon-types.ts.
#include <napi.h>

#include "../device/cuda_device.h"
#include "../runtime/probe.h"
#include "kiln/arguments.h"

#if defined(KILN_CUDA_SIMULATOR)
#include <gpu_sim/cuda/bank_conflicts.hpp>

#include "../kernels/matmul.cuh"
#endif

#ifndef KILN_CUDA_ARCHITECTURES
#define KILN_CUDA_ARCHITECTURES "simulated"
#endif

namespace kiln {

const char* const kBackendName = "cuda";

namespace {

Napi::Value Probe(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const ProbeReport report = probe_devices();
  Napi::Object result = Napi::Object::New(env);
  result.Set("status", report.status);
  result.Set("driverVersion", report.driver_version);
  result.Set("runtimeVersion", report.runtime_version);
  result.Set("errorCode", report.error_code);
  result.Set("errorName", report.error_name);
  result.Set("errorText", report.error_text);
  Napi::Array devices = Napi::Array::New(env, report.devices.size());
  for (std::size_t i = 0; i < report.devices.size(); i++) {
    const ProbeDevice& device = report.devices[i];
    Napi::Object entry = Napi::Object::New(env);
    entry.Set("index", static_cast<double>(i));
    entry.Set("name", device.name);
    entry.Set("major", device.major);
    entry.Set("minor", device.minor);
    entry.Set("totalBytes", static_cast<double>(device.total_bytes));
    entry.Set("multiprocessors", device.multiprocessors);
    devices.Set(static_cast<uint32_t>(i), entry);
  }
  result.Set("devices", devices);
  return result;
}

Napi::Value BuildInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object result = Napi::Object::New(env);
  result.Set("simulator", vendor::kSimulator);
  result.Set("build", vendor::kBuildName);
  int runtime_version = 0;
  cudaRuntimeGetVersion(&runtime_version);
  result.Set("runtimeVersion", runtime_version);
  result.Set("architectures", KILN_CUDA_ARCHITECTURES);
#if defined(KILN_CUDA_SIMULATOR)
  result.Set("fiberImplementation", gpu_sim::kFiberImplementation);
#endif
  return result;
}

#if defined(KILN_CUDA_SIMULATOR)
// Test-only: makes the simulated machine look like one without a driver, with an old driver,
// without devices, with little memory or another compute capability; sets the engine's worker
// threads; makes the next launch or synchronisation fail (to test the error paths).
void apply_simulator_options(const OptionReader& options) {
  gpu_sim::cuda::SimulatedDeviceConfig config = gpu_sim::cuda::device_config();
  options.integer("driverVersion", 0, 99999, config.driver_version);
  options.integer("deviceCount", 0, 64, config.device_count);
  options.integer("memoryBytes", 0, kMaxSafeInteger, config.memory_bytes);
  options.integer("multiprocessors", 1, 1024, config.multiprocessors);
  options.integer("computeCapabilityMajor", 1, 99, config.compute_capability_major);
  options.integer("computeCapabilityMinor", 0, 9, config.compute_capability_minor);
  options.integer("maxGridY", 1, 65535, config.max_grid_y);
  gpu_sim::cuda::configure_device(config);
  // The kernel choices cached per device follow the compute capability: ask the device again.
  forget_device_kernel_answers();
  std::string launch_fault;
  std::string synchronize_fault;
  options.text("injectLaunchFault", launch_fault);
  options.text("injectSynchronizeFault", synchronize_fault);
  if (!launch_fault.empty()) gpu_sim::cuda::inject_launch_fault(launch_fault);
  if (!synchronize_fault.empty()) gpu_sim::cuda::inject_synchronize_fault(synchronize_fault);
  gpu_sim::EngineSettings settings = gpu_sim::Engine::instance().settings();
  options.integer("workers", 1, 64, settings.workers);
  if (options.has("workers")) gpu_sim::Engine::instance().configure(settings);
}

// Test-only: the ldmatrix shared-memory bank conflicts the simulator counted since the last call
// (gpu_sim/cuda/bank_conflicts.hpp), then zeroed. Kernels still queued are not counted yet.
Napi::Value TakeBankConflicts(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const gpu_sim::ptx::BankConflicts taken = gpu_sim::ptx::take_bank_conflicts();
  Napi::Object result = Napi::Object::New(env);
  result.Set("instructions", static_cast<double>(taken.instructions));
  result.Set("extraPasses", static_cast<double>(taken.extra_passes));
  result.Set("first", taken.first);
  return result;
}
#endif

}  // namespace

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  const auto open = [](const BackendOptions& options) -> std::unique_ptr<KernelDevice> {
    return std::make_unique<CudaDevice>(options);
  };
#if defined(KILN_CUDA_SIMULATOR)
  return register_backend(env, exports,
                          BackendSpec{open,
                                      cuda_extra_methods(),
                                      {{"probe", Probe},
                                       {"buildInfo", BuildInfo},
                                       {"configureSimulator", configure_simulator<apply_simulator_options>},
                                       {"takeBankConflicts", TakeBankConflicts}}});
#else
  return register_backend(env, exports,
                          BackendSpec{open, cuda_extra_methods(), {{"probe", Probe}, {"buildInfo", BuildInfo}}});
#endif
}

}  // namespace kiln

static Napi::Object InitKilnCuda(Napi::Env env, Napi::Object exports) { return kiln::Init(env, exports); }

NODE_API_MODULE(kiln_cuda, InitKilnCuda)
