// Builds the engine's C++ self-test (with the assembly context switch and with the portable
// ucontext one) and checks every line it prints: barriers, shared memory per block, warp
// collectives, atomics across workers, determinism, and divergence aborting with the kernel
// name and file:line instead of hanging.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { compileProgram, findCompiler, packageRoot } from './compile.js';
import { onPath } from './tools.js';

const run = promisify(execFile);
const compiler = findCompiler();

const EXPECTED_CHECKS = [
  'barrier rotates shared memory (1 worker)',
  'barrier rotates shared memory per block (2 workers in parallel)',
  'shuffles, votes, reductions and __syncthreads_count',
  'block reduction (shuffles + shared memory + atomicAdd)',
  'atomicAdd (int, float, __half) from 2 workers',
  'dynamic shared memory (extern __shared__)',
  'same results on every run with parallel workers (no atomics)',
  'thread exiting before a barrier aborts with kernel name and file:line',
  'threads at two different barriers abort naming both lines',
  'shuffle with an exited lane in the mask aborts',
  "shuffle mask without the caller's lane aborts",
  'shuffle waiting for a lane parked at a barrier is reported as a deadlock',
  'more than 1024 threads per block is cudaErrorInvalidConfiguration',
  'the simulated device reports compute capability 9.0 by default',
  'cudaGetDeviceProperties reports the configured compute capability (8.6)',
  'an 8.6 device has 100 KiB of shared memory per multiprocessor, 99 KiB per block',
  'a block asking an 8.6 device for 100 KiB of shared memory is cudaErrorInvalidConfiguration',
  'a 9.0 device has 228 KiB of shared memory per multiprocessor, 227 KiB per block',
];

const VARIANTS = [
  { name: 'assembly context switch', output: 'engine-self-test', defines: [] as string[], fiber: /assembly/ },
  {
    name: 'ucontext context switch',
    output: 'engine-self-test-ucontext',
    defines: ['GPU_SIM_FIBER_UCONTEXT'],
    fiber: /ucontext/,
  },
];

describe.skipIf(compiler === undefined)(
  'gpu-sim engine self-test (needs a C++20 compiler: none found on PATH or in $CXX)',
  () => {
    const binaries = new Map<string, string>();
    beforeAll(async () => {
      const built = await Promise.all(
        VARIANTS.map((variant) =>
          compileProgram(compiler!, 'test/engine-self-test.cpp', variant.output, variant.defines),
        ),
      );
      VARIANTS.forEach((variant, index) => binaries.set(variant.name, built[index]));
    });

    for (const variant of VARIANTS) {
      it(`passes every check with the ${variant.name}`, async () => {
        const { stdout } = await run(binaries.get(variant.name)!, [], { timeout: 60_000 });
        expect(stdout).toMatch(variant.fiber);
        for (const name of EXPECTED_CHECKS) expect(stdout).toContain(`ok ${name}\n`);
        expect(stdout).not.toContain('FAIL');
        expect(stdout).toContain('0 failures');
      });
    }

    it('names the kernel, the thread and the barrier line in a divergence message', async () => {
      const { stdout } = await run(binaries.get(VARIANTS[0].name)!, [], { timeout: 60_000 });
      expect(stdout).toMatch(
        /kernel 'early_exit_kernel': thread \(5,0,0\) of block \(0,0,0\) exits while \d+ threads of its block wait at __syncthreads\(\) at engine-self-test\.cpp:\d+/,
      );
    });
  },
);

const WMMA_CHECKS = [
  'f16 product, a row-major, b row-major, stored row-major',
  'f16 product, a col-major, b col-major, stored col-major',
  'bf16 product, a row-major, b col-major',
  'bf16 product, a col-major, b row-major',
  'a pointer that is not 256-bit aligned aborts the launch',
  'lanes passing different pointers abort the launch',
  'a lane that skips mma_sync aborts naming the kernel and file:line',
  "reading another lane's stored element needs __syncwarp (without it the old value shows)",
];

describe.skipIf(compiler === undefined)(
  'gpu-sim warp matrix (wmma) emulation self-test (needs a C++20 compiler: none found on PATH or in $CXX)',
  () => {
    it('multiplies tiles exactly in every layout and reports misuse the device would not', async () => {
      const binary = await compileProgram(compiler!, 'test/wmma-self-test.cpp', 'wmma-self-test');
      const { stdout } = await run(binary, [], { timeout: 60_000 });
      for (const name of WMMA_CHECKS) expect(stdout).toContain(`ok ${name}\n`);
      expect(stdout).not.toContain('FAIL');
      expect(stdout).toContain('0 failures');
      expect(stdout).toMatch(
        /kernel 'misaligned_kernel': .*wmma::load_matrix_sync at wmma-self-test\.cpp:\d+ .*256-bit/,
      );
    });
  },
);

const PTX_CHECKS = [
  'bf16 mma.sync m16n8k16 with fragments from the PTX ISA formulas',
  'f16 mma.sync m16n8k16 with fragments from the PTX ISA formulas',
  'ldmatrix x4 register layout',
  'ldmatrix x4.trans register layout',
  'ldmatrix x2 register layout',
  'ldmatrix x2.trans register layout',
  'ldmatrix x1 register layout',
  'ldmatrix x1.trans register layout',
  'ldmatrix rows 16 bytes apart count no bank conflict',
  'ldmatrix x4 (A row-major) and x2.trans (B [k][n]) feed mma.sync to the exact product',
  'ldmatrix x4 over rows 32 bytes apart counts 1 conflicting instruction, 4 extra passes',
  'cp.async groups arrive at their wait_group (poison before, zero fill past src-size after)',
  'reading a stage before its cp.async arrived aborts naming the kernel, the read and the copy',
  'a lane that skips mma.sync aborts naming the kernel and file:line',
  'an ldmatrix row address that is not 16-byte aligned aborts the launch',
  'a cp.async source that is not cp-size aligned aborts the launch',
  'cp.async.cg with 8 bytes aborts the launch',
  'cvt.rna.tf32.f32 rounds to nearest, ties away from zero, to 10 mantissa bits',
  'tf32 mma.sync m16n8k8 with fragments from the PTX ISA formulas',
];

describe.skipIf(compiler === undefined)(
  'gpu-sim sm_80 PTX (mma.sync, ldmatrix, cp.async) emulation self-test (needs a C++20 compiler: none found on PATH or in $CXX)',
  () => {
    it('follows the PTX ISA fragment layouts and reports misuse the device would not', async () => {
      const binary = await compileProgram(compiler!, 'test/ptx-self-test.cpp', 'ptx-self-test');
      const { stdout } = await run(binary, [], { timeout: 60_000 });
      for (const name of PTX_CHECKS) expect(stdout).toContain(`ok ${name}\n`);
      expect(stdout).not.toContain('FAIL');
      expect(stdout).toContain('0 failures');
      expect(stdout).toMatch(
        /kernel 'early_read_kernel': .*ldmatrix at ptx-self-test\.cpp:\d+: lane 0 reads .*cp\.async issued at ptx-self-test\.cpp:\d+/,
      );
    });
  },
);

const HOPPER_CHECKS = [
  'TMA 2D box without swizzle lands densely, out-of-bounds elements zero, poison before the phase',
  'TMA 2D box with the 32B swizzle lands at the Swizzle<1,4,3> addresses',
  'TMA 2D box with the 64B swizzle lands at the Swizzle<2,4,3> addresses',
  'TMA 2D box with the 128B swizzle lands at the Swizzle<3,4,3> addresses',
  ...['no', '32B', '64B', '128B'].flatMap((mode) => [
    `bf16 wgmma m64n32k16 with K-major A and N-major B, ${mode} swizzle, 3 pipelined groups, matches the scalar product`,
    `f16 wgmma m64n32k16 with M-major A and K-major B, ${mode} swizzle, 3 pipelined groups, matches the scalar product`,
  ]),
  'a tensor map whose row stride is not a multiple of 16 bytes is refused',
  'a box wider than its swizzle span is refused',
  "a barrier phase that never completes aborts naming the kernel and the wait's file:line",
  'a wgmma reading a stage before its copy arrived aborts naming the kernel, the wgmma and the copy',
  'a warp that skips a warpgroup-collective wgmma aborts naming the kernel and file:line',
  'bf16 wgmma m64n32k16 with A from registers (fragment layout) and K-major B, 3 groups, matches the scalar product',
  'f16 wgmma m64n32k16 with A from registers and N-major B, 3 groups, matches the scalar product',
  "changing a register-A wgmma's registers before its wait_group aborts naming the kernel and file:line",
  'a stage released (mbarrier.arrive) before the wgmma reading it completed, and refilled by the woken producer, aborts naming the wgmma and the copy',
  'a bulk store of shared bytes written with no fence.proxy.async is reported',
  'a wgmma reads a TMA-loaded tile patched by a generic store after fence.proxy.async',
  'a wgmma reading a tile patched by a generic store with no fence.proxy.async aborts naming the byte',
];

describe.skipIf(compiler === undefined)(
  'gpu-sim sm_90 (mbarrier, TMA, wgmma) emulation self-test (needs a C++20 compiler: none found on PATH or in $CXX)',
  () => {
    it('follows the PTX ISA swizzles and descriptor layouts and reports misuse the device would not', async () => {
      const binary = await compileProgram(compiler!, 'test/hopper-self-test.cpp', 'hopper-self-test');
      const { stdout } = await run(binary, [], { timeout: 60_000 });
      for (const name of HOPPER_CHECKS) expect(stdout).toContain(`ok ${name}\n`);
      expect(stdout).not.toContain('FAIL');
      expect(stdout).toContain('0 failures');
      expect(stdout).toMatch(
        /kernel 'stuck_phase_kernel': .*32 threads wait in mbarrier\.try_wait\.parity at hopper-self-test\.cpp:\d+/,
      );
    });
  },
);

const SYNC_CHECKS = [
  'two warpgroups alternate strictly through bar.sync / bar.arrive (ping-pong turns)',
  'setmaxnreg dec 40 / inc 232 × 2 passes its checks beside the ping-pong turns',
  'a bar.arrive that releases a waiting warp is a scheduling point: the released warp runs before every lane of the releasing one',
  'a producer/consumer hand-off reuses barriers 4 and 5 over three phases',
  'bar.sync without a count waits for the whole block',
  'a thread count that is not a multiple of 32 aborts naming the kernel and file:line',
  'a barrier id past 15 aborts',
  'a count larger than the block aborts: the barrier could never complete',
  'bar.arrive without a thread count aborts',
  'arrivals with different counts on one phase abort naming both sites',
  'a bar.sync that can never complete aborts naming the kernel, the wait and the arrivals',
  'a block ending with an unmatched bar.arrive aborts naming the arrive',
  'lanes of one warp at different barrier instructions abort naming both',
  'setmaxnreg outside 24 … 256 or not a multiple of 8 aborts',
  'threads of a warpgroup passing different setmaxnreg counts abort',
  'a setmaxnreg.dec that raises the count aborts',
  'a setmaxnreg.inc the register file cannot grant aborts',
  'a warp that skips the warpgroup-collective setmaxnreg aborts naming the kernel and file:line',
];

describe.skipIf(compiler === undefined)(
  'gpu-sim named barriers (bar.sync / bar.arrive) and setmaxnreg self-test (needs a C++20 compiler: none found on PATH or in $CXX)',
  () => {
    it('orders warpgroups as the PTX ISA defines and reports misuse with the kernel and file:line', async () => {
      const binary = await compileProgram(compiler!, 'test/sync-self-test.cpp', 'sync-self-test');
      const { stdout } = await run(binary, [], { timeout: 60_000 });
      for (const name of SYNC_CHECKS) expect(stdout).toContain(`ok ${name}\n`);
      expect(stdout).not.toContain('FAIL');
      expect(stdout).toContain('0 failures');
      expect(stdout).toMatch(
        /kernel 'never_completes_kernel': .*128 threads wait in bar\.sync 2, 256 at sync-self-test\.cpp:\d+/,
      );
    });
  },
);

// The aarch64 switch cannot run on the x86-64 CI machines; where a cross compiler and qemu-user
// are installed (apt: g++-aarch64-linux-gnu qemu-user), the same self-test runs under emulation.
const crossCompiler = onPath('aarch64-linux-gnu-g++');
const emulator = onPath('qemu-aarch64');
describe.skipIf(crossCompiler === undefined || emulator === undefined)(
  'gpu-sim engine self-test on aarch64 under qemu-user (needs aarch64-linux-gnu-g++ and qemu-aarch64)',
  () => {
    it('passes every check with the aarch64 assembly context switch', async () => {
      const binary = `${packageRoot}/build/engine-self-test-aarch64`;
      await run(
        crossCompiler!,
        [
          '-std=c++20',
          '-O2',
          '-Wall',
          '-Wextra',
          '-Werror',
          '-ffp-contract=off',
          '-static',
          '-pthread',
          `-I${packageRoot}/include`,
          `${packageRoot}/test/engine-self-test.cpp`,
          '-o',
          binary,
        ],
        { maxBuffer: 16 << 20 },
      );
      const { stdout } = await run(emulator!, [binary], { timeout: 120_000 });
      expect(stdout).toMatch(/aarch64 assembly/);
      for (const name of EXPECTED_CHECKS) expect(stdout).toContain(`ok ${name}\n`);
      expect(stdout).toContain('0 failures');
    });
  },
);
