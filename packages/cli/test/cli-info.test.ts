import { beforeAll, describe, expect, it } from 'vitest';
import { requireBuild, runKiln } from './kiln-process.js';

beforeAll(requireBuild);

describe('kiln info', () => {
  it('prints the stable JSON shape, with cpu available and selected', async () => {
    const run = await runKiln(['info', '--json']);
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as Record<string, unknown>;
    expect(Object.keys(report)).toEqual(['platform', 'selected', 'backends']);
    expect(report.platform).toEqual({ os: process.platform, arch: process.arch, node: process.versions.node });
    expect(report.selected).toBe('cpu');
    const backends = report.backends as Array<Record<string, unknown>>;
    for (const backend of backends)
      expect(Object.keys(backend)).toEqual(['name', 'available', 'reason', 'priority', 'devices']);
    const cpu = backends.find((backend) => backend.name === 'cpu');
    expect(cpu).toMatchObject({ available: true, priority: 100 });
    expect(cpu?.reason).toMatch(/^chosen/);
    expect((cpu?.devices as Array<{ id: string }> | undefined)?.[0]?.id).toBe('cpu');
  });

  it('prints the chosen backend, device, memory, dtypes and attention for people', async () => {
    const run = await runKiln(['info']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/✓ cpu \(priority 100\): chosen/);
    expect(run.stdout).toMatch(/^backend: cpu on .+ \(cpu\) — chosen/m);
    expect(run.stdout).toMatch(/memory: +\S+ \S+ (total|RAM)/);
    expect(run.stdout).toMatch(/dtypes: +f32/);
    expect(run.stdout).toMatch(/attention: +flash/);
    expect(run.stdout).toMatch(/kernels: +WebAssembly SIMD128 kernels, (relaxed-SIMD FMA|no FMA).*, \d+ threads?$/m);
    const plain = await runKiln(['info'], { env: { KILN_CPU_SIMD: '0' } });
    expect(plain.stdout).toMatch(/kernels: +plain TypeScript kernels, 1 thread \(KILN_CPU_SIMD=0\)$/m);
  });

  it('exits 2 for a device no installed backend provides, naming every backend tried', async () => {
    const run = await runKiln(['info', '--device', 'nope']);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^error: Backend 'nope' requested by --device \("nope"\) is not installed/);
    expect(run.stderr).toMatch(/- nope: not installed/);
    expect(run.stderr).toMatch(/- cpu: /);
    expect(run.stderr).toContain('hint:');
    expect(run.stderr).not.toMatch(/\n\s+at /);
    const viaEnvironment = await runKiln(['info', '--json'], { env: { KILN_DEVICE: 'nope' } });
    expect(viaEnvironment.code).toBe(2);
  });
});

describe('usage errors and doctor', () => {
  it('exits 2 for unknown options and commands, bad numbers and a missing command', async () => {
    const runs = await Promise.all([
      runKiln(['info', '--bogus']),
      runKiln(['frobnicate']),
      runKiln(['train', '--steps', 'many']),
      runKiln([]),
    ]);
    for (const run of runs) expect(run.code, run.stderr).toBe(2);
    expect(runs[0].stderr).toContain("unknown option '--bogus'");
    expect(runs[2].stderr).toMatch(/--steps.*many/);
  });

  it('prints the version and exits 0', async () => {
    const run = await runKiln(['--version']);
    expect(run.code).toBe(0);
    expect(run.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it('doctor checks the machine and exits 0 when the default path works', async () => {
    const run = await runKiln(['doctor']);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^✓ Node\.js /m);
    expect(run.stdout).toMatch(/^✓ default backend 'cpu' resolves and computes correctly/m);
    expect(run.stdout).toMatch(/^✓ temp directory .* is writable/m);
    expect(run.stdout).toMatch(/nvcc/);
    const json = JSON.parse((await runKiln(['doctor', '--json'])).stdout) as { healthy: boolean; checks: unknown[] };
    expect(json.healthy).toBe(true);
    expect(json.checks.length).toBeGreaterThan(4);
  });
});
