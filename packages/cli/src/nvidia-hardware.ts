/**
 * Whether this machine has an NVIDIA GPU, whatever its driver: `kiln doctor` tells "no NVIDIA GPU"
 * (nothing to fix) from "a GPU without a working driver" (install or update it). Three places are
 * read (Linux): /proc/driver/nvidia/gpus (the driver's list), /dev/nvidia<N> (device nodes), and
 * the PCI bus (/sys/bus/pci/devices/<address>/class 0x03xxxx — a display controller — with vendor
 * 0x10de), the one that still sees a GPU whose driver is missing. The file system is injectable.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The few file-system reads the probe needs (tests pass a fake machine). */
export interface HardwareFiles {
  /** Entries of a directory; [] when it does not exist or cannot be read. */
  list(path: string): string[];
  /** A small text file's contents; undefined when it does not exist or cannot be read. */
  read(path: string): string | undefined;
}

/** PCI vendor id of NVIDIA. */
const NVIDIA_VENDOR = '0x10de';

/** The real machine's files. */
export const machineFiles: HardwareFiles = {
  list: (path) => {
    try {
      return existsSync(path) ? readdirSync(path) : [];
    } catch {
      return [];
    }
  },
  read: (path) => {
    try {
      return readFileSync(path, 'utf8');
    } catch {
      return undefined;
    }
  },
};

/** Where an NVIDIA GPU was seen ('/dev/nvidia0', 'PCI device 0000:01:00.0'), or undefined when none was. */
export function findNvidiaGpu(files: HardwareFiles = machineFiles): string | undefined {
  const listed = files.list('/proc/driver/nvidia/gpus');
  if (listed.length > 0) return `/proc/driver/nvidia/gpus/${listed[0]}`;
  const node = files.list('/dev').find((entry) => /^nvidia\d+$/.test(entry));
  if (node !== undefined) return `/dev/${node}`;
  const devices = '/sys/bus/pci/devices';
  for (const address of files.list(devices)) {
    const vendor = files
      .read(join(devices, address, 'vendor'))
      ?.trim()
      .toLowerCase();
    const deviceClass = files
      .read(join(devices, address, 'class'))
      ?.trim()
      .toLowerCase();
    if (vendor === NVIDIA_VENDOR && deviceClass?.startsWith('0x03') === true) return `PCI device ${address}`;
  }
  return undefined;
}
