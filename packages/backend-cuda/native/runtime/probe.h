// runtime/probe.h — what the machine offers, without creating a CUDA context: driver and
// runtime versions, and each device's name, compute capability and memory. Never throws.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace kiln {

/** One device as the probe sees it. */
struct ProbeDevice {
  std::string name;
  int major = 0;
  int minor = 0;
  std::size_t total_bytes = 0;
  int multiprocessors = 0;
};

/** The probe's verdict. */
struct ProbeReport {
  /** 'ok', 'no-driver', 'driver-too-old', 'no-device' or 'error'. */
  std::string status;
  /** cudaDriverGetVersion (e.g. 13000 for CUDA 13.0; 0 without a driver). */
  int driver_version = 0;
  /** Version of the CUDA runtime linked into the addon. */
  int runtime_version = 0;
  /** The CUDA error behind a non-ok status (0 when none). */
  int error_code = 0;
  /** Its name. */
  std::string error_name;
  /** Its text. */
  std::string error_text;
  /** Devices (empty unless ok). */
  std::vector<ProbeDevice> devices;
};

/** Probes the CUDA driver and devices. */
ProbeReport probe_devices();

}  // namespace kiln
