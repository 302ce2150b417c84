// Builds the guard-pages self-test (gpu_sim/cuda/guard_pages.hpp) and runs it with
// GPU_SIM_GUARD_PAGES=1: in range, every check passes; a kernel reading past the end of an
// allocation stops the process with a message naming the kernel, block and thread.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { compileProgram, findCompiler } from './compile.js';

const compiler = findCompiler();
const guarded = { ...process.env, GPU_SIM_GUARD_PAGES: '1' };

describe.skipIf(compiler === undefined || process.platform === 'win32')(
  'gpu-sim guard pages self-test (needs a C++20 compiler on PATH or in $CXX, and mmap)',
  () => {
    it('kernels use whole guarded allocations; the red zone still catches a write just past the end', async () => {
      const binary = await compileProgram(compiler!, 'test/guard-pages-self-test.cpp', 'guard-pages-self-test');
      const result = spawnSync(binary, [], { env: guarded, encoding: 'utf8', timeout: 120_000 });
      expect(result.status, `${result.stdout}${result.stderr}`).toBe(0);
      expect(result.stdout).toContain('ok kernels read and write whole guarded allocations of 1 to 4097 floats\n');
      expect(result.stdout).toContain(
        'ok a write just past the end still damages the red zone, found at the synchronisation and at cudaFree\n',
      );
      expect(result.stdout).not.toContain('FAIL');
      expect(result.stdout.trim().endsWith('all ok')).toBe(true);
    }, 300_000);

    // 1024 floats take 4096 + 64 (red zone) bytes, rounded to 4352: the guard starts 64 floats past
    // the end. Those bytes take two 4096-byte pages and end at the second one's end: the first page
    // holds 3840 bytes (960 floats) of slack in front of the start, and the guard lies before it (on
    // 16 KiB pages, 12 KiB of slack: 3072 floats, so 8000 and 16000 are beyond it on either).
    const outside = [
      ...[64, 4096, 16000].map((count) => ({ mode: 'past-end', count, where: 'past the end' })),
      ...[8000, 16000].map((count) => ({ mode: 'before-start', count, where: 'before the start' })),
    ];
    for (const { mode, count, where } of outside)
      it(`a kernel reading ${count} floats ${where} of an allocation stops the process, naming kernel, block and thread`, async () => {
        const binary = await compileProgram(compiler!, 'test/guard-pages-self-test.cpp', 'guard-pages-self-test');
        const result = spawnSync(binary, [mode, String(count)], { env: guarded, encoding: 'utf8', timeout: 120_000 });
        expect(result.signal, `${result.stdout}${result.stderr}`).toBe('SIGABRT');
        expect(result.stderr).toMatch(
          /gpu-sim: kernel 'read_at_kernel': block \(0,0,0\) thread \(3,0,0\) accessed 0x[0-9a-f]+, outside device memory: with GPU_SIM_GUARD_PAGES set this is a read or write past the end of a device allocation \(beyond its red zone\) or before its start/,
        );
        expect(result.stdout).not.toContain('FAIL');
      }, 300_000);

    it('without the setting, allocations come from the heap and the in-range checks pass alike', async () => {
      const binary = await compileProgram(compiler!, 'test/guard-pages-self-test.cpp', 'guard-pages-self-test');
      const { GPU_SIM_GUARD_PAGES: _unset, ...plain } = process.env;
      const result = spawnSync(binary, [], { env: plain, encoding: 'utf8', timeout: 120_000 });
      expect(result.status, `${result.stdout}${result.stderr}`).toBe(0);
      expect(result.stdout.trim().endsWith('all ok')).toBe(true);
    }, 300_000);
  },
);
