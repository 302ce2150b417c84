// How the CPU backend picks its kernel path and thread count from options and environment.
import { InvalidArgumentError } from '@kiln/core';
import { afterEach, describe, expect, it } from 'vitest';
import { physicalCoreCount, resolveCpuSettings } from '../src/cpu-settings.js';
import { createCpuBackend } from '../src/index.js';

const saved = { ...process.env };
afterEach(() => {
  for (const name of ['KILN_CPU_SIMD', 'KILN_CPU_THREADS', 'KILN_CPU_RELAXED_SIMD']) {
    if (saved[name] === undefined) delete process.env[name];
    else process.env[name] = saved[name];
  }
});

describe('resolveCpuSettings', () => {
  it('defaults to wasm simd with one thread per physical core, and says so in capabilities', () => {
    delete process.env.KILN_CPU_SIMD;
    delete process.env.KILN_CPU_THREADS;
    const settings = resolveCpuSettings();
    expect(settings.path).toBe('wasm-simd');
    expect(settings.threads).toBe(physicalCoreCount());
    expect(createCpuBackend().capabilities.implementation).toMatch(/^WebAssembly SIMD128 kernels/);
  });

  it('KILN_CPU_SIMD=0 selects the TypeScript kernels on one thread; an option wins over the environment', () => {
    process.env.KILN_CPU_SIMD = '0';
    expect(resolveCpuSettings()).toMatchObject({ path: 'typescript', threads: 1 });
    expect(createCpuBackend().capabilities.implementation).toMatch(/plain TypeScript kernels/);
    expect(resolveCpuSettings({ simd: true }).path).toBe('wasm-simd');
  });

  it('KILN_CPU_THREADS and KILN_CPU_RELAXED_SIMD are read, and bad values are typed errors', () => {
    process.env.KILN_CPU_THREADS = '3';
    expect(resolveCpuSettings().threads).toBe(3);
    expect(resolveCpuSettings({ threads: 1 }).threads).toBe(1);
    process.env.KILN_CPU_RELAXED_SIMD = '0';
    expect(resolveCpuSettings()).toMatchObject({ relaxedSimd: false });
    expect(resolveCpuSettings().description).toMatch(/no FMA/);
    process.env.KILN_CPU_THREADS = 'many';
    expect(() => resolveCpuSettings()).toThrow(InvalidArgumentError);
    expect(() => resolveCpuSettings()).toThrow(/KILN_CPU_THREADS must be an integer/);
    delete process.env.KILN_CPU_THREADS;
    expect(() => resolveCpuSettings({ threads: 0 })).toThrow(InvalidArgumentError);
    process.env.KILN_CPU_SIMD = 'maybe';
    expect(() => resolveCpuSettings()).toThrow(/KILN_CPU_SIMD must be 0 or 1/);
  });
});
