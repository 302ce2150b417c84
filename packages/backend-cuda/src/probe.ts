/**
 * probe(): whether the CUDA backend can run here, and if not, one sentence that says what to do.
 * Never throws. Reasons: addon not built/not loadable, no NVIDIA driver, a driver too old for
 * CUDA 13 (error 35: needs r580+), no device, or another CUDA error; else the devices.
 */
import type { DeviceInfo, ProbeResult } from '@kiln/core';
import type { CudaAddon, NativeDevice, NativeProbe } from './native/addon-types.js';
import { cachedCudaAddon, type LoadedAddon } from './native/load-addon.js';

/** Driver branch the CUDA 13 runtime needs. */
export const REQUIRED_DRIVER = 'r580';

/** kiln's DeviceInfo of a native device. */
export function toDeviceInfo(device: NativeDevice): DeviceInfo {
  return {
    id: `cuda:${device.index}`,
    name: device.name,
    memoryTotalBytes: device.totalBytes,
    unifiedMemory: false,
    computeCapability: `${device.major}.${device.minor}`,
  };
}

/** "13.0" of a CUDA version number such as 13000. */
export function formatCudaVersion(version: number): string {
  return `${Math.floor(version / 1000)}.${Math.floor((version % 1000) / 10)}`;
}

/** The sentence for a native probe that is not ok. */
export function unavailableReason(report: NativeProbe): string {
  const runtime = formatCudaVersion(report.runtimeVersion || 13000);
  switch (report.status) {
    case 'no-driver':
      return (
        `No NVIDIA driver was found (libcuda.so.1 could not be loaded; CUDA error ${report.errorCode} ${report.errorName}). ` +
        `Install the NVIDIA driver ${REQUIRED_DRIVER} or newer — kiln's CUDA backend is built with CUDA ${runtime} — or use another backend (KILN_DEVICE=cpu).`
      );
    case 'driver-too-old':
      return (
        `The NVIDIA driver supports CUDA ${formatCudaVersion(report.driverVersion)}, but kiln's CUDA backend is built with CUDA ${runtime}, ` +
        `which needs driver ${REQUIRED_DRIVER} or newer (CUDA error ${report.errorCode} ${report.errorName}: ${report.errorText}). Update the NVIDIA driver.`
      );
    case 'no-device':
      return (
        `The NVIDIA driver is installed but reports no CUDA device (CUDA error ${report.errorCode || 100} ${report.errorName || 'cudaErrorNoDevice'}). ` +
        'Check `nvidia-smi` and CUDA_VISIBLE_DEVICES.'
      );
    default:
      return (
        `CUDA reported error ${report.errorCode} (${report.errorName}: ${report.errorText}) while listing devices. Check \`nvidia-smi\`; ` +
        'reinstalling the NVIDIA driver usually fixes a broken installation.'
      );
  }
}

/** The probe of an already loaded addon. */
export function probeAddon(addon: CudaAddon): ProbeResult {
  let report: NativeProbe;
  try {
    report = addon.probe();
  } catch (error) {
    return {
      available: false,
      reason: `The CUDA addon's probe failed: ${error instanceof Error ? error.message : String(error)}`,
      devices: [],
    };
  }
  if (report.status === 'ok') return { available: true, devices: report.devices.map(toDeviceInfo) };
  return { available: false, reason: unavailableReason(report), devices: [] };
}

/** probe() of the cuda plugin: loads the addon (once) and asks it. */
export function probeCuda(load: () => LoadedAddon = cachedCudaAddon): ProbeResult {
  let loaded: LoadedAddon;
  try {
    loaded = load();
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    return { available: false, reason: `CUDA addon not built or not loadable. ${detail}`, devices: [] };
  }
  return probeAddon(loaded.addon);
}
