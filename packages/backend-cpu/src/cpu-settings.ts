/**
 * How a CPU backend instance runs its kernels, from its options and the environment:
 *  - KILN_CPU_SIMD: '0' runs the plain TypeScript kernels (the fallback, no 4 GiB heap limit);
 *    default '1' runs the WebAssembly SIMD kernels when the runtime validates SIMD128.
 *  - KILN_CPU_RELAXED_SIMD: '0' keeps relaxed SIMD off (multiply then add instead of FMA);
 *    default: on when the runtime has it (Node 20 after enabling V8's flag, see wasm/features.ts).
 *  - KILN_CPU_THREADS: threads for large kernels (default: the machine's physical cores).
 *  - KILN_CPU_V8_FLAGS: '0' never changes this process's V8 flags (relaxed SIMD's
 *    --experimental-wasm-relaxed-simd, and --no-liftoff while the kernel module compiles);
 *    default '1' sets them, for the whole process (every module it compiles afterwards sees them).
 * Options passed to createCpuBackend win over the environment.
 */
import fs from 'node:fs';
import os from 'node:os';
import { InvalidArgumentError } from '@kiln/core';
import { detectWasmFeatures } from './wasm/features.js';

/** The resolved execution settings. */
export interface CpuKernelSettings {
  /** 'wasm-simd' or 'typescript'. */
  path: 'wasm-simd' | 'typescript';
  /** Fused multiply-add through relaxed SIMD (wasm-simd only). */
  relaxedSimd: boolean;
  /** Threads large kernels use (1 on the TypeScript path). */
  threads: number;
  /** Whether the backend may change this process's V8 flags. */
  v8Flags: boolean;
  /** One line for `capabilities.implementation` and `kiln info`. */
  description: string;
}

/** Options that choose the path (a subset of CpuBackendOptions). */
export interface CpuSettingsOptions {
  /** false: the plain TypeScript kernels; default from KILN_CPU_SIMD (on). */
  simd?: boolean;
  /** false: no relaxed SIMD even when available; default from KILN_CPU_RELAXED_SIMD (on). */
  relaxedSimd?: boolean;
  /** Threads for large kernels; default from KILN_CPU_THREADS, else the physical cores. */
  threads?: number;
  /** false: never change this process's V8 flags; default from KILN_CPU_V8_FLAGS (on). */
  v8Flags?: boolean;
}

function flag(name: string, value: string | undefined): boolean | undefined {
  if (value === undefined || value === '') return undefined;
  if (value === '0' || value.toLowerCase() === 'false' || value.toLowerCase() === 'off') return false;
  if (value === '1' || value.toLowerCase() === 'true' || value.toLowerCase() === 'on') return true;
  throw new InvalidArgumentError(`${name} must be 0 or 1, got '${value}'`, {
    hint: `Set ${name}=0 to turn it off, or unset it for the default.`,
  });
}

/** Physical cores available to this process (hyper-thread siblings counted once). */
export function physicalCoreCount(): number {
  const logical = typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
  try {
    const siblings = new Set<string>();
    for (const entry of fs.readdirSync('/sys/devices/system/cpu')) {
      if (!/^cpu\d+$/.test(entry)) continue;
      const list = fs.readFileSync(`/sys/devices/system/cpu/${entry}/topology/thread_siblings_list`, 'utf8').trim();
      siblings.add(list);
    }
    if (siblings.size > 0) return Math.max(1, Math.min(siblings.size, logical));
  } catch {
    // No sysfs (macOS, Windows, some containers): every logical CPU counts.
  }
  return Math.max(1, logical);
}

function threadCount(option: number | undefined): number {
  if (option !== undefined) {
    if (!Number.isInteger(option) || option < 1 || option > 256) {
      throw new InvalidArgumentError(`cpu backend: threads must be an integer from 1 to 256, got ${String(option)}`, {
        hint: 'Pass e.g. { threads: 2 }, or leave it out for one per physical core.',
      });
    }
    return option;
  }
  const text = process.env.KILN_CPU_THREADS;
  if (text === undefined || text === '') return physicalCoreCount();
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1 || value > 256) {
    throw new InvalidArgumentError(`KILN_CPU_THREADS must be an integer from 1 to 256, got '${text}'`, {
      hint: 'Set e.g. KILN_CPU_THREADS=2, or unset it for one thread per physical core.',
    });
  }
  return value;
}

function relaxedSimdAbsence(source: string): string {
  if (source === 'disabled') return 'off: KILN_CPU_RELAXED_SIMD=0';
  if (source === 'refused')
    return "needs V8's --experimental-wasm-relaxed-simd, which v8Flags: false (KILN_CPU_V8_FLAGS=0) leaves off";
  return 'unavailable';
}

/** Resolves how kernels run for one backend instance. */
export function resolveCpuSettings(options: CpuSettingsOptions = {}): CpuKernelSettings {
  const wantSimd = options.simd ?? flag('KILN_CPU_SIMD', process.env.KILN_CPU_SIMD) ?? true;
  const threads = threadCount(options.threads);
  if (!wantSimd) {
    return {
      path: 'typescript',
      relaxedSimd: false,
      threads: 1,
      v8Flags: false,
      description: 'plain TypeScript kernels, 1 thread (KILN_CPU_SIMD=0)',
    };
  }
  const allowRelaxed = options.relaxedSimd ?? flag('KILN_CPU_RELAXED_SIMD', process.env.KILN_CPU_RELAXED_SIMD) ?? true;
  const v8Flags = options.v8Flags ?? flag('KILN_CPU_V8_FLAGS', process.env.KILN_CPU_V8_FLAGS) ?? true;
  const features = detectWasmFeatures(allowRelaxed, v8Flags);
  if (!features.simd) {
    return {
      path: 'typescript',
      relaxedSimd: false,
      threads: 1,
      v8Flags,
      description: 'plain TypeScript kernels, 1 thread (this runtime does not validate WebAssembly SIMD128)',
    };
  }
  const fma = features.relaxedSimd
    ? `relaxed-SIMD FMA${features.relaxedSimdSource === 'flag' ? " (kiln turned on V8's --experimental-wasm-relaxed-simd for this process)" : ''}`
    : `no FMA (relaxed SIMD ${relaxedSimdAbsence(features.relaxedSimdSource)})`;
  return {
    path: 'wasm-simd',
    relaxedSimd: features.relaxedSimd,
    threads,
    v8Flags,
    description: `WebAssembly SIMD128 kernels, ${fma}, ${threads} thread${threads === 1 ? '' : 's'}`,
  };
}
