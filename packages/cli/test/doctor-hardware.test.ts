/** `kiln doctor` tells "no NVIDIA GPU" (nothing to fix) from "a GPU without a working driver", on fake machines. */
import { describe, expect, it } from 'vitest';
import { unavailableBackendCheck, type DoctorEnvironment } from '../src/commands/doctor.js';
import { findNvidiaGpu, type HardwareFiles } from '../src/nvidia-hardware.js';

/** A machine whose files are `tree` (path → contents; a directory is listed from the paths below it). */
function fakeMachine(tree: Record<string, string>): HardwareFiles {
  return {
    list: (path) => [
      ...new Set(
        Object.keys(tree)
          .filter((key) => key.startsWith(`${path}/`))
          .map((key) => key.slice(path.length + 1).split('/')[0]),
      ),
    ],
    read: (path) => tree[path],
  };
}

const NO_DRIVER =
  'No NVIDIA driver was found (libcuda.so.1 could not be loaded; CUDA error 35 cudaErrorInsufficientDriver). Install the NVIDIA driver r580 or newer.';
const OLD_DRIVER =
  "The NVIDIA driver supports CUDA 12.4, but kiln's CUDA backend is built with CUDA 13.0, which needs driver r580 or newer (CUDA error 35 …).";

function linux(gpu: string | undefined): DoctorEnvironment {
  return { platform: 'linux', env: {}, nvidiaGpu: () => gpu };
}

describe('findNvidiaGpu', () => {
  it('finds a GPU in the driver list, as a device node, or on the PCI bus only (no driver)', () => {
    expect(findNvidiaGpu(fakeMachine({ '/proc/driver/nvidia/gpus/0000:01:00.0/information': 'Model: H100' }))).toBe(
      '/proc/driver/nvidia/gpus/0000:01:00.0',
    );
    expect(findNvidiaGpu(fakeMachine({ '/dev/nvidiactl': '', '/dev/nvidia0': '' }))).toBe('/dev/nvidia0');
    expect(
      findNvidiaGpu(
        fakeMachine({
          '/sys/bus/pci/devices/0000:00:02.0/vendor': '0x8086\n',
          '/sys/bus/pci/devices/0000:00:02.0/class': '0x030000\n',
          '/sys/bus/pci/devices/0000:01:00.0/vendor': '0x10de\n',
          '/sys/bus/pci/devices/0000:01:00.0/class': '0x030200\n',
        }),
      ),
    ).toBe('PCI device 0000:01:00.0');
  });

  it("finds none on a machine with only other vendors' GPUs or NVIDIA devices that are not display controllers", () => {
    expect(findNvidiaGpu(fakeMachine({}))).toBeUndefined();
    expect(
      findNvidiaGpu(
        fakeMachine({
          '/dev/nvidiactl': '',
          '/sys/bus/pci/devices/0000:00:02.0/vendor': '0x1002',
          '/sys/bus/pci/devices/0000:00:02.0/class': '0x030000',
          '/sys/bus/pci/devices/0000:02:00.0/vendor': '0x10de',
          '/sys/bus/pci/devices/0000:02:00.0/class': '0x020000',
        }),
      ),
    ).toBeUndefined();
  });
});

describe('the doctor check of an unavailable backend', () => {
  it('shows CUDA as not applicable without an NVIDIA GPU, and gives the driver fix with one', () => {
    expect(unavailableBackendCheck('cuda', NO_DRIVER, linux(undefined))).toEqual({
      status: 'not-applicable',
      title:
        "backend 'cuda' does not apply here: no NVIDIA GPU (none in /proc/driver/nvidia, /dev/nvidia*, or on the PCI bus)",
    });
    const withGpu = unavailableBackendCheck('cuda', NO_DRIVER, linux('PCI device 0000:01:00.0'));
    expect(withGpu.status).toBe('fail');
    expect(withGpu.title).toBe(
      "backend 'cuda' is unavailable: no NVIDIA driver (CUDA error 35), though this machine has an NVIDIA GPU (PCI device 0000:01:00.0)",
    );
    expect(withGpu.fix).toMatch(/^Install the NVIDIA driver r580 or newer/);
    expect(withGpu.fix).not.toMatch(/trains on the CPU/);
    const old = unavailableBackendCheck('cuda', OLD_DRIVER, linux('/dev/nvidia0'));
    expect(old.title).toMatch(
      /^backend 'cuda' is unavailable: the NVIDIA driver supports CUDA 12\.4, kiln needs CUDA 13/,
    );
    expect(old.fix).toMatch(/^Update the NVIDIA driver to r580/);
  });

  it('keeps an addon that is not built a failure whatever the hardware, and Metal off macOS not applicable', () => {
    const unbuilt = unavailableBackendCheck('cuda', 'CUDA addon not built or not loadable. …', linux(undefined));
    expect(unbuilt).toMatchObject({
      status: 'fail',
      title: "backend 'cuda' is unavailable: its native addon is not installed or not built",
    });
    expect(unavailableBackendCheck('metal', 'Metal is only available on macOS …', linux(undefined))).toEqual({
      status: 'not-applicable',
      title: "backend 'metal' does not apply here: Metal needs macOS (this machine runs linux)",
    });
    expect(
      unavailableBackendCheck('cuda', NO_DRIVER, { platform: 'darwin', env: {}, nvidiaGpu: () => undefined }).status,
    ).toBe('not-applicable');
  });
});
