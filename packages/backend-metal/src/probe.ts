/**
 * probe(): whether the Metal backend can run here, and if not, one sentence that says what to do.
 * Never throws. Off macOS it answers without loading anything; on macOS the reasons are: addon
 * not built/not loadable, no Metal GPU, macOS older than 13, a GPU without Metal 3, or an error;
 * else the GPUs with name, unified memory, recommendedMaxWorkingSetSize and family (→ bf16).
 */
import type { DeviceInfo, ProbeResult } from '@kiln/core';
import type { MetalAddon, NativeDevice, NativeProbe } from './native/addon-types.js';
import { cachedMetalAddon, type LoadedAddon } from './native/load-addon.js';

/** The first words of probe()'s reason on Linux and Windows. */
export const METAL_ONLY_ON_MACOS = 'Metal is only available on macOS (Apple silicon or AMD GPUs)';

/** Oldest macOS the backend supports (Metal 3, MSL 3.0). */
export const MINIMUM_MACOS = '13 (Ventura)';

/** kiln's DeviceInfo of a Metal GPU, with the Metal facts kiln info/doctor print. */
export interface MetalDeviceInfo extends DeviceInfo {
  /** Newest GPU family: 'apple9' (M3/M4), 'apple8' (M2), 'apple7' (M1), 'mac2' (AMD/Intel), … */
  gpuFamily: string;
  /** recommendedMaxWorkingSetSize in bytes (also memoryTotalBytes). */
  recommendedMaxWorkingSetSize: number;
  /** bf16 tensors supported (kiln's kernels convert bf16 in integer arithmetic: every Metal 3 GPU). */
  bf16: boolean;
  /** MSL 3.1's bfloat type is available (Apple GPU, macOS 14+); kiln's bf16 kernels do not need it. */
  bfloatType: boolean;
  /** 8×8 simdgroup matrices (Apple7 / M1 and newer): the tiled matmul path. */
  simdgroupMatrix: boolean;
  /** macOS version. */
  osVersion: string;
}

/** kiln's DeviceInfo of a native device. */
export function toDeviceInfo(device: NativeDevice, index = device.index ?? 0): MetalDeviceInfo {
  return {
    id: `metal:${index}`,
    name: device.name,
    memoryTotalBytes: device.recommendedMaxWorkingSetSize,
    unifiedMemory: device.unifiedMemory,
    maxBufferBytes: device.maxBufferLength,
    gpuFamily: device.family,
    recommendedMaxWorkingSetSize: device.recommendedMaxWorkingSetSize,
    bf16: device.bf16,
    bfloatType: device.bfloatType,
    simdgroupMatrix: device.simdgroupMatrix,
    osVersion: device.osVersion,
  };
}

/** The sentence for a native probe that is not ok. */
export function unavailableReason(report: NativeProbe): string {
  switch (report.status) {
    case 'no-device':
      return (
        'No Metal GPU was found (MTLCopyAllDevices returned none). Metal needs a Mac with Apple silicon or an AMD GPU; ' +
        'virtual machines and CI runners often expose none — use KILN_DEVICE=cpu there.'
      );
    case 'os-too-old':
      return (
        `${report.message || 'This macOS'} is too old: kiln's Metal backend needs macOS ${MINIMUM_MACOS} or newer (Metal 3). ` +
        'Update macOS, or use KILN_DEVICE=cpu.'
      );
    case 'unsupported-gpu':
      return (
        `The GPU '${report.message}' does not support Metal 3, which kiln's kernels need (Apple silicon, AMD Vega/5000/6000-series, ` +
        'Intel UHD 630/Iris Plus). Use KILN_DEVICE=cpu.'
      );
    default:
      return `Metal reported an error while listing GPUs: ${report.message}. Restarting the Mac usually fixes a wedged GPU driver; otherwise use KILN_DEVICE=cpu.`;
  }
}

/** The probe of an already loaded addon. */
export function probeAddon(addon: MetalAddon): ProbeResult {
  let report: NativeProbe;
  try {
    report = addon.probe();
  } catch (error) {
    return {
      available: false,
      reason: `The Metal addon's probe failed: ${error instanceof Error ? error.message : String(error)}`,
      devices: [],
    };
  }
  if (report.status === 'ok')
    return { available: true, devices: report.devices.map((device, index) => toDeviceInfo(device, index)) };
  return { available: false, reason: unavailableReason(report), devices: [] };
}

/** probe() of the metal plugin: off macOS says so; on macOS loads the addon (once) and asks it. */
export function probeMetal(
  load: () => LoadedAddon = cachedMetalAddon,
  platform: string = process.platform,
  arch: string = process.arch,
): ProbeResult {
  if (platform !== 'darwin') {
    return {
      available: false,
      reason: `${METAL_ONLY_ON_MACOS}; this machine runs ${platform}-${arch}. Use KILN_DEVICE=cpu, or KILN_DEVICE=cuda with an NVIDIA GPU.`,
      devices: [],
    };
  }
  let loaded: LoadedAddon;
  try {
    loaded = load();
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    const hint = (error as { hint?: string } | undefined)?.hint;
    return {
      available: false,
      reason: `Metal addon not built or not loadable. ${detail}${hint ? ` ${hint}` : ''}`,
      devices: [],
    };
  }
  return probeAddon(loaded.addon);
}
