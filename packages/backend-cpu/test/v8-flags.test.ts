// The CPU backend changes V8 flags for the whole process (relaxed SIMD on Node 20, --no-liftoff
// while its kernel module compiles) unless the host application refuses: v8Flags: false or
// KILN_CPU_V8_FLAGS=0. Each case runs in a fresh Node process, since V8 flags are per process.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ENTRY = fileURLToPath(new URL('../dist/index.js', import.meta.url));

/** A module using f32x4.relaxed_madd: it validates only where relaxed SIMD is on. */
const RELAXED_MODULE = [
  0x00,
  0x61,
  0x73,
  0x6d,
  0x01,
  0x00,
  0x00,
  0x00,
  0x01,
  0x04,
  0x01,
  0x60,
  0x00,
  0x00,
  0x03,
  0x02,
  0x01,
  0x00,
  0x0a,
  62,
  0x01,
  60,
  0x00,
  ...[0, 1, 2].flatMap(() => [0xfd, 0x0c, ...new Array<number>(16).fill(0)]),
  0xfd,
  0x85,
  0x02,
  0x1a,
  0x0b,
];

/** Creates a CPU backend in a fresh process (with `options`), multiplies on it, and reports what V8 accepts afterwards. */
function runIsolated(
  options: string,
  env: NodeJS.ProcessEnv = {},
): { before: boolean; after: boolean; v8Flags: boolean; implementation: string; product: number[] } {
  const script = `
    const relaxed = new Uint8Array(${JSON.stringify(RELAXED_MODULE)});
    const before = WebAssembly.validate(relaxed);
    const { createCpuBackend } = await import(${JSON.stringify(ENTRY)});
    const core = await import('@kiln/core');
    const backend = createCpuBackend(${options});
    core.setBackend(backend);
    const product = await core.matmul(core.tensor([[1, 2], [3, 4]]), core.tensor([[5, 6], [7, 8]])).data();
    console.log(JSON.stringify({ before, after: WebAssembly.validate(relaxed), v8Flags: backend.settings.v8Flags, implementation: backend.capabilities.implementation, product: [...product] }));
  `;
  const output = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: fileURLToPath(new URL('..', import.meta.url)),
    encoding: 'utf8',
    env: { ...process.env, KILN_CPU_V8_FLAGS: '', KILN_CPU_SIMD: '', KILN_CPU_RELAXED_SIMD: '', ...env },
  });
  return JSON.parse(output.trim().split('\n').pop() as string);
}

describe('the V8 flags the CPU backend sets', () => {
  it('are left alone when the host application refuses them (option or variable), and kernels still run', () => {
    for (const refused of [runIsolated('{ v8Flags: false }'), runIsolated('{}', { KILN_CPU_V8_FLAGS: '0' })]) {
      expect(refused.v8Flags).toBe(false);
      expect(refused.product).toEqual([19, 22, 43, 50]);
      expect(refused.after).toBe(refused.before);
      if (!refused.before) {
        expect(refused.implementation).toMatch(
          /no FMA \(relaxed SIMD needs V8's --experimental-wasm-relaxed-simd, which v8Flags: false \(KILN_CPU_V8_FLAGS=0\) leaves off\)/,
        );
      }
    }
  });

  it('are set for the whole process by default, and the description says kiln did it', () => {
    const allowed = runIsolated('{}');
    expect(allowed.v8Flags).toBe(true);
    expect(allowed.product).toEqual([19, 22, 43, 50]);
    if (allowed.before) return; // This runtime has relaxed SIMD on by default: there was no flag to set.
    expect(allowed.after).toBe(true);
    expect(allowed.implementation).toMatch(
      /relaxed-SIMD FMA \(kiln turned on V8's --experimental-wasm-relaxed-simd for this process\)/,
    );
  });
});
