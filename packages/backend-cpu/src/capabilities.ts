/** What the CPU backend runs natively: every kernel in f32, f16 and bf16; i32 where the semantics allow it. */
import os from 'node:os';
import { I32_KERNELS, type Capabilities, type DeviceInfo, type DType, type KernelName } from '@kiln/core';

/** Kernels defined on i32 data (docs/kernel-semantics.md, "i32"). */
const I32_KERNEL_SET: ReadonlySet<KernelName> = new Set<KernelName>(I32_KERNELS);

/** The host CPU as a kiln device. */
export function cpuDeviceInfo(): DeviceInfo {
  const cpus = os.cpus();
  const model = cpus[0]?.model.trim() || os.arch();
  return {
    id: 'cpu',
    name: `${model} (${cpus.length} cores)`,
    memoryTotalBytes: os.totalmem(),
    memoryFreeBytes: os.freemem(),
    unifiedMemory: true,
  };
}

/** The capabilities of one CPU backend instance; `implementation` says which kernel path runs. */
export function cpuCapabilities(device: DeviceInfo, implementation?: string): Capabilities {
  return {
    implementation,
    device,
    supports(kernel: KernelName, dtype: DType): boolean {
      return dtype === 'i32' ? I32_KERNEL_SET.has(kernel) : dtype === 'f32' || dtype === 'f16' || dtype === 'bf16';
    },
    flashAttention: true,
    // Fixed loop orders everywhere; row partitions depend on the worker count only.
    deterministic: true,
    determinism: 'bit-identical reruns with the same thread count',
  };
}
