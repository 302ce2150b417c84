// `kiln info` and `kiln doctor` with @kiln/backend-cuda installed (an optional dependency of the
// CLI) but unusable here — no NVIDIA driver, a driver too old for CUDA 13 (error 35, r580+), or an
// addon that is not built: info lists the cuda backend with the probe's reason, doctor turns it
// into a diagnosis and a fix, and neither fails because the CPU still works. On a machine where
// the CUDA backend is available, the unavailable-path checks are skipped with that reason.
import { beforeAll, describe, expect, it } from 'vitest';
import type { KernelBackend } from '@kiln/core';
import { backendFix, cublasAdvice } from '../src/backend-fixes.js';
import { attentionLine } from '../src/commands/info.js';
import { findNvidiaGpu } from '../src/nvidia-hardware.js';
import { requireBuild, runKiln } from './kiln-process.js';

beforeAll(requireBuild);

/** The probe reasons of the CUDA backend (docs/backend-cuda.md, Troubleshooting). */
const CUDA_REASON =
  /^(unavailable: )?(No NVIDIA driver was found|The NVIDIA driver supports CUDA|The NVIDIA driver is installed but reports no CUDA device|CUDA addon not built or not loadable)/;

interface InfoBackend {
  name: string;
  available: boolean;
  reason: string | null;
  priority: number | null;
}

describe('kiln info and doctor with the CUDA backend installed but unavailable', () => {
  it("info lists cuda (priority 300) with the probe's reason, and still selects the CPU", async (context) => {
    const run = await runKiln(['info', '--json']);
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as { selected: string; backends: InfoBackend[] };
    const cuda = report.backends.find((backend) => backend.name === 'cuda');
    expect(cuda, "the cuda plugin is discovered from the CLI's optional dependency").toBeDefined();
    if (cuda!.available) context.skip('a CUDA GPU is available here');
    expect(cuda).toMatchObject({ available: false, priority: 300 });
    expect(cuda!.reason).toMatch(CUDA_REASON);
    expect(report.selected).toBe('cpu');
    const text = await runKiln(['info']);
    expect(text.stdout).toMatch(
      /^ {2}✗ cuda \(priority 300\): (unavailable: )?(No NVIDIA driver|The NVIDIA driver|CUDA addon not built)/m,
    );
    if (/CUDA error 35/.test(cuda!.reason!)) expect(text.stdout).toMatch(/r580 or newer/);
  });

  it('doctor gives the CUDA diagnosis and its fix, and stays healthy on the CPU', async (context) => {
    const run = await runKiln(['doctor', '--json']);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    const { healthy, checks } = JSON.parse(run.stdout) as {
      healthy: boolean;
      checks: Array<{ status: string; title: string; fix?: string; critical?: boolean }>;
    };
    const cuda = checks.find((check) => check.title.startsWith("backend 'cuda'"));
    expect(cuda).toBeDefined();
    if (cuda!.status === 'ok') context.skip('a CUDA GPU is available here');
    expect(healthy).toBe(true);
    expect(cuda!.critical).not.toBe(true);
    const text = await runKiln(['doctor']);
    if (cuda!.status === 'not-applicable') {
      // No NVIDIA GPU on this machine (the CI machines): nothing to fix, no driver advice.
      expect(findNvidiaGpu()).toBeUndefined();
      expect(cuda!.title).toBe(
        "backend 'cuda' does not apply here: no NVIDIA GPU (none in /proc/driver/nvidia, /dev/nvidia*, or on the PCI bus)",
      );
      expect(cuda!.fix).toBeUndefined();
      expect(text.stdout).toMatch(/^– backend 'cuda' does not apply here: no NVIDIA GPU/m);
      expect(text.stdout).not.toMatch(/r580/);
      return;
    }
    expect(cuda).toMatchObject({ status: 'fail' });
    expect(cuda!.title).toMatch(
      /^backend 'cuda' is unavailable: (no NVIDIA driver|the NVIDIA driver supports CUDA|no CUDA device|its native addon is not installed or not built)/,
    );
    expect(cuda!.fix).toMatch(/r580 or newer|nvidia-smi|kiln-build-cuda/);
    expect(text.stdout).toMatch(/^✗ backend 'cuda' is unavailable: .+\n {4}fix: .+/m);
  });
});

describe('the fixes doctor derives from CUDA probe reasons', () => {
  it('maps every documented reason to a diagnosis and a fix', () => {
    expect(
      backendFix(
        'cuda',
        'No NVIDIA driver was found (libcuda.so.1 could not be loaded; CUDA error 35 cudaErrorInsufficientDriver). Install …',
      ),
    ).toEqual({
      diagnosis: 'no NVIDIA driver (CUDA error 35)',
      fix: expect.stringMatching(/^Install the NVIDIA driver r580 or newer .*--gpus all/),
    });
    const old = backendFix(
      'cuda',
      "The NVIDIA driver supports CUDA 12.4, but kiln's CUDA backend is built with CUDA 13.0, which needs driver r580 or newer (CUDA error 35 …).",
    );
    expect(old).toEqual({
      diagnosis: 'the NVIDIA driver supports CUDA 12.4, kiln needs CUDA 13 (CUDA error 35)',
      fix: expect.stringMatching(/^Update the NVIDIA driver to r580/),
    });
    expect(
      backendFix(
        'cuda',
        'The NVIDIA driver is installed but reports no CUDA device (CUDA error 100 cudaErrorNoDevice).',
      ).fix,
    ).toMatch(/CUDA_VISIBLE_DEVICES/);
    const unbuilt = backendFix(
      'cuda',
      'CUDA addon not built or not loadable. The CUDA addon of @kiln/backend-cuda could not be loaded on linux-x64 (glibc): …',
    );
    expect(unbuilt.diagnosis).toBe('its native addon is not installed or not built');
    expect(unbuilt.fix).toMatch(/@kiln\/backend-cuda-linux-x64.*npx kiln-build-cuda.*could not be loaded/);
    expect(backendFix('example', 'Needs an Example GPU. Use another backend.')).toEqual({
      diagnosis: 'Needs an Example GPU',
      fix: 'Needs an Example GPU. Use another backend.',
    });
  });

  it("info's attention line adds the backend's own word on its kernels (the CUDA backend's attentionPath)", () => {
    const flash = { attention: () => {}, capabilities: { flashAttention: true } };
    const cuda = { ...flash, attentionPath: 'FlashAttention-2 (mma.sync tensor cores …)' };
    expect(attentionLine(cuda as unknown as KernelBackend)).toBe(
      'flash (native fused kernel, tiled online softmax): FlashAttention-2 (mma.sync tensor cores …)',
    );
    expect(attentionLine(flash as unknown as KernelBackend)).toBe('flash (native fused kernel, tiled online softmax)');
    expect(attentionLine({} as KernelBackend)).toBe('composed from primitives (no fused attention kernel)');
  });

  it("advises cuBLAS only when the CUDA backend fell back to kiln's kernels for lack of it", () => {
    expect(
      cublasAdvice(
        'kiln kernels: f32 register-tiled SIMT, f16/bf16 WMMA tensor cores; cuBLAS was not loaded: not found',
      ),
    ).toMatch(/KILN_CUBLAS_PATH/);
    expect(cublasAdvice("kiln kernels: …; kiln's kernels were requested (matmul: 'kiln')")).toBeUndefined();
    expect(
      cublasAdvice('cuBLAS 13.1.0 (/lib/libcublas.so.13): f32 (TF32 off), f16/bf16 with f32 accumulation'),
    ).toBeUndefined();
  });
});
