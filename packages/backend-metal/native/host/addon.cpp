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
Napi::Value ConfigureSimulator(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    if (info.Length() < 1 || !info[0].IsObject()) throw_invalid("configureSimulator needs an options object");
    const Napi::Object options = info[0].As<Napi::Object>();
    sim::SimulatorConfig config = sim::config();
    const auto has = [&](const char* name) { return !options.Get(name).IsUndefined(); };
    if (has("deviceCount")) config.device_count = static_cast<int>(read_integer(options.Get("deviceCount"), "deviceCount", 0, 64));
    if (has("osVersion")) config.os_version = options.Get("osVersion").ToString().Utf8Value();
    if (has("name")) config.name = options.Get("name").ToString().Utf8Value();
    if (has("family")) config.family = options.Get("family").ToString().Utf8Value();
    if (has("simdgroupMatrix")) config.simdgroup_matrix = read_boolean(options.Get("simdgroupMatrix"), "simdgroupMatrix");
    if (has("memoryBytes")) config.memory_bytes = static_cast<std::size_t>(read_integer(options.Get("memoryBytes"), "memoryBytes", 0, 9007199254740991.0));
    if (has("recommendedMaxWorkingSetSize")) {
      config.recommended_working_set_bytes =
          static_cast<std::size_t>(read_integer(options.Get("recommendedMaxWorkingSetSize"), "recommendedMaxWorkingSetSize", 0, 9007199254740991.0));
    }
    if (has("injectCommandBufferError")) config.inject_command_buffer_error = options.Get("injectCommandBufferError").ToString().Utf8Value();
    sim::configure(config);
    if (has("workers")) sim::set_workers(static_cast<unsigned>(read_integer(options.Get("workers"), "workers", 1, 64)));
    return info.Env().Undefined();
  });
}
#endif

}  // namespace

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  std::vector<AddonFunction> functions = {{"probe", Probe}, {"buildInfo", BuildInfo}};
#if defined(KILN_METAL_SIMULATOR)
  functions.push_back({"configureSimulator", ConfigureSimulator});
#endif
  const auto open = [env](const BackendOptions& options) -> std::unique_ptr<KernelDevice> { return std::make_unique<MetalKernelDevice>(env, options); };
  return register_backend(env, exports, BackendSpec{open, metal_extra_methods(), std::move(functions)});
}

}  // namespace kiln::metal

static Napi::Object InitKilnMetal(Napi::Env env, Napi::Object exports) { return kiln::metal::Init(env, exports); }

NODE_API_MODULE(kiln_metal, InitKilnMetal)
