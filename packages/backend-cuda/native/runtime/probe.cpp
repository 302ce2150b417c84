#include "probe.h"

#include "../vendors/vendor.h"

namespace kiln {

ProbeReport probe_devices() {
  ProbeReport report;
  cudaRuntimeGetVersion(&report.runtime_version);
  // 0 when no driver is installed (libcuda.so.1 cannot be loaded).
  if (cudaDriverGetVersion(&report.driver_version) != cudaSuccess) report.driver_version = 0;
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  cudaGetLastError();
  if (error != cudaSuccess) {
    report.error_code = static_cast<int>(error);
    report.error_name = cudaGetErrorName(error);
    report.error_text = cudaGetErrorString(error);
    if (error == cudaErrorInsufficientDriver)
      report.status = report.driver_version == 0 ? "no-driver" : "driver-too-old";
    else if (error == cudaErrorNoDevice)
      report.status = "no-device";
    else
      report.status = "error";
    return report;
  }
  if (count == 0) {
    report.status = "no-device";
    return report;
  }
  for (int device = 0; device < count; device++) {
    cudaDeviceProp properties{};
    const cudaError_t property_error = cudaGetDeviceProperties(&properties, device);
    if (property_error != cudaSuccess) {
      cudaGetLastError();
      report.status = "error";
      report.error_code = static_cast<int>(property_error);
      report.error_name = cudaGetErrorName(property_error);
      report.error_text = cudaGetErrorString(property_error);
      report.devices.clear();
      return report;
    }
    report.devices.push_back(ProbeDevice{properties.name, properties.major, properties.minor, properties.totalGlobalMem,
                                         properties.multiProcessorCount});
  }
  report.status = "ok";
  return report;
}

}  // namespace kiln
