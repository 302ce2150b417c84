// host/addon.cpp — the module's exports: probe(), buildInfo(), opNames() and the Backend class
// (@kiln/native-host's, on a MetalKernelDevice), and
// (simulator build only) configureSimulator(). Their TypeScript type: src/native/addon-types.ts.
#include <napi.h>

#include "device.h"
#include "kiln/arguments.h"
#include "metal_kernel_device.h"

#if defined(KILN_METAL_SIMULATOR)
#include "../device/sim_device.h"
#endif

namespace kiln {
const char* const kBackendName = "metal";
}  // namespace kiln

namespace kiln::metal {
namespace {

Napi::Value Probe(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ProbeReport report;
  try {
    report = probe_devices();
  } catch (const std::exception& error) {
    report.status = "error";
    report.message = error.what();
  }
  Napi::Object result = Napi::Object::New(env);
  result.Set("status", report.status);
  result.Set("message", report.message);
  Napi::Array devices = Napi::Array::New(env, report.devices.size());
  for (std::size_t i = 0; i < report.devices.size(); i++) {
    Napi::Object entry = facts_object(env, report.devices[i]);
    entry.Set("index", static_cast<double>(i));
    devices.Set(static_cast<std::uint32_t>(i), entry);
  }
  result.Set("devices", devices);
  return result;
}

Napi::Value BuildInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object result = Napi::Object::New(env);
  result.Set("simulator", is_simulator());
  result.Set("build", build_name());
  result.Set("languageVersion", "3.0");
#if defined(KILN_METAL_SIMULATOR)
  result.Set("fiberImplementation", sim::fiber_implementation());
#endif
  return result;
}

#if defined(KILN_METAL_SIMULATOR)
// Test-only: reshapes the simulated machine (GPUs, OS version, family, memory), sets the engine's
// worker threads, and makes the next command buffer fail (to test the error paths).
void apply_simulator_options(const OptionReader& options) {
  sim::SimulatorConfig config = sim::config();
  options.integer("deviceCount", 0, 64, config.device_count);
  options.text("osVersion", config.os_version);
  options.text("name", config.name);
  options.text("family", config.family);
  options.boolean("simdgroupMatrix", config.simdgroup_matrix);
  options.integer("memoryBytes", 0, kMaxSafeInteger, config.memory_bytes);
  options.integer("recommendedMaxWorkingSetSize", 0, kMaxSafeInteger, config.recommended_working_set_bytes);
  options.text("injectCommandBufferError", config.inject_command_buffer_error);
  sim::configure(config);
  unsigned workers = 0;
  options.integer("workers", 1, 64, workers);
  if (workers > 0) sim::set_workers(workers);
}
#endif

}  // namespace

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  std::vector<AddonFunction> functions = {{"probe", Probe}, {"buildInfo", BuildInfo}};
#if defined(KILN_METAL_SIMULATOR)
  functions.push_back({"configureSimulator", configure_simulator<apply_simulator_options>});
#endif
  const auto open = [env](const BackendOptions& options) -> std::unique_ptr<KernelDevice> {
    return std::make_unique<MetalKernelDevice>(env, options);
  };
  return register_backend(env, exports, BackendSpec{open, metal_extra_methods(), std::move(functions)});
}

}  // namespace kiln::metal

static Napi::Object InitKilnMetal(Napi::Env env, Napi::Object exports) { return kiln::metal::Init(env, exports); }

NODE_API_MODULE(kiln_metal, InitKilnMetal)
