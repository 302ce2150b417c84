// The Metal dialect: the rewrite step (attributes, threadgroup variables, function constants,
// generated bindings, line numbers kept) and the shim, through a self-test .metal file run on the
// engine (SIMD-group functions with early-returning lanes, threadgroup memory, simdgroup
// matrices, atomics, function constants, builtins, divergence naming the .metal line), and
// C++-only constructs that must not compile.
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { MetalRewriteError, metalShimDirectory, rewriteMetalDirectory, rewriteMetalSource } from '../index.js';
import { findCompiler, packageRoot } from './compile.js';

const run = promisify(execFile);
const compiler = findCompiler();
const buildDirectory = join(packageRoot, 'build', 'metal');
const flags = [
  '-std=c++20',
  '-O1',
  '-Wall',
  '-Wextra',
  '-Werror',
  '-ffp-contract=off',
  '-pthread',
  `-I${join(packageRoot, 'include')}`,
  `-I${metalShimDirectory}`,
];

describe('metal-rewrite', () => {
  const source = [
    '#include <metal_stdlib>',
    'using namespace metal;',
    'constant bool kFlag [[function_constant(3)]];',
    'kernel void k(device float* out [[buffer(0)]], uint id [[thread_position_in_grid]]) {',
    '  threadgroup float a[4][8];  threadgroup int b;',
    '  threadgroup float* pointer = &a[0][0];',
    '  out[id] = kFlag ? 1.0f : a[0][id] + *pointer + float(b); // [[not an attribute]]',
    '}',
  ].join('\n');
  const { code, kernels, functionConstants } = rewriteMetalSource(source, { path: '/x/k.metal' });

  it('keeps every line where it was and points #line at the original', () => {
    const lines = code.split('\n');
    expect(lines[0]).toBe('#line 1 "/x/k.metal"');
    expect(lines[4]).toBe(
      'kernel void k(device float* out /*[[buffer(0)]]*/, uint id /*[[thread_position_in_grid]]*/) {',
    );
    expect(lines[5]).toBe('  auto& a = GPU_SIM_THREADGROUP(float[4][8]);  auto& b = GPU_SIM_THREADGROUP(int);');
    expect(lines[6]).toBe('  threadgroup float* pointer = &a[0][0];');
    expect(lines[7]).toContain('// [[not an attribute]]');
    expect(lines[3]).toBe('GPU_SIM_FUNCTION_CONSTANT(bool, kFlag, 3);');
  });

  it('appends bindings for every kernel and reports kernels and function constants', () => {
    expect(kernels).toEqual(['k']);
    expect(functionConstants).toEqual(['kFlag']);
    expect(code).toContain(
      'k(table.argument<device float*>(0, "out"), ::gpu_sim::metal::builtin<uint>(::gpu_sim::metal::Builtin::kThreadPositionInGrid));',
    );
    expect(code).toContain('{"k", "k.metal", &kiln_sim_set_constants, &kiln_sim_body_k}');
  });

  it('refuses parameters it cannot bind, naming file, line and parameter', () => {
    expect(() =>
      rewriteMetalSource('kernel void f(\n device float* x [[buffer(0)]], float4 p [[position]]) {}', {
        path: 'f.metal',
      }),
    ).toThrow(
      new MetalRewriteError(
        "f.metal:1: kernel 'f': parameter 'p' has the attribute [[position]], which the simulator cannot supply",
      ),
    );
    expect(() => rewriteMetalSource('kernel void f(device float* x) {}', { path: 'f.metal' })).toThrow(
      /parameter 'x' has no \[\[buffer\(n\)\]\]/,
    );
    expect(() =>
      rewriteMetalSource('template [[host_name("g_f32")]] kernel decltype(g<float>) g<float>;', { path: 'f.metal' }),
    ).toThrow(/'g_f32' instantiates 'g', which is not a template kernel of this file/);
  });
});

describe.skipIf(compiler === undefined)(
  'Metal dialect self-test (needs a C++20 compiler: none found on PATH or in $CXX)',
  () => {
    let binary = '';
    beforeAll(async () => {
      const { sources } = await rewriteMetalDirectory(join(packageRoot, 'test', 'metal'), buildDirectory);
      binary = join(buildDirectory, 'dialect-self-test');
      await run(
        compiler!,
        [...flags, ...sources, join(packageRoot, 'test', 'metal', 'dialect-self-test.cpp'), '-o', binary],
        { maxBuffer: 16 << 20 },
      );
    });

    it('runs every kernel of dialect-self-test.metal correctly and diagnoses the broken ones', async () => {
      const { stdout } = await run(binary, [], { timeout: 60_000 });
      for (const name of [
        'simd functions act on the active lanes of a simdgroup (early return)',
        'threadgroup arrays and threadgroup_barrier (2 threadgroups)',
        'threadgroup memory reads 0xFF before the first write, in every threadgroup',
        'simdgroup_float8x8 load, multiply_accumulate and store',
        'a simdgroup_load whose address depends on the lane fails',
        'atomic_int, atomic_float and compare-exchange',
        'reading a function constant the host did not set fails the dispatch',
        'a function constant of the wrong type fails',
        'function constants and template kernels instantiated with host_name (f32, f16; uint2 builtins)',
        'builtins: positions, indices, simdgroup index and width',
        'a barrier that returned threads never reach fails naming the kernel and the .metal line',
        'lanes calling different simd functions fail naming both',
        'an unbound buffer fails the dispatch',
        'an aligned float4 store runs',
        'a float4 store through an address that is not 16-byte aligned fails naming the kernel and the .metal line',
      ])
        expect(stdout).toContain(`ok ${name}\n`);
      expect(stdout).toContain('0 failures');
      expect(stdout).toMatch(
        /kernel 'divergent_barrier': .* wait at threadgroup_barrier at dialect-self-test\.metal:\d+/,
      );
      expect(stdout).toMatch(
        /simd_sum .* at dialect-self-test\.metal:\d+ while lanes 0x0000ffff .* simd_shuffle_down .* at dialect-self-test\.metal:\d+/,
      );
      expect(stdout).toMatch(
        /kernel 'vector_store': .* 16-byte store of float4 at dialect-self-test\.metal:\d+ through address 0x[0-9a-f]+, which is not 16-byte aligned/,
      );
    });

    const cppOnly: [string, string, RegExp][] = [
      ['std::', 'out[0] = std::sqrt(out[0]);', /attempt to use poisoned "std"/],
      ['double', 'double wide = out[0]; out[0] = float(wide);', /attempt to use poisoned "double"/],
      ['new', 'float* heap = new float[4]; out[0] = heap[0];', /attempt to use poisoned "new"/],
      ['exceptions', 'if (out[0] < 0.0f) throw 1;', /attempt to use poisoned "throw"/],
      ['writing constant memory', 'limits.count = 3;', /assignment of member .*count. in read-only object/],
      ['a vector swizzle', 'float4 v(1.0f); float2 w = v.xy; out[0] = w.x;', /has no member named .xy./],
    ];
    for (const [what, statement, error] of cppOnly) {
      it(`refuses a kernel using ${what}`, async () => {
        const path = join(buildDirectory, 'refused.metal');
        writeFileSync(
          path,
          [
            '#include <metal_stdlib>',
            'using namespace metal;',
            'struct Limits { uint count; };',
            'kernel void refused(device float* out [[buffer(0)]], constant Limits& limits [[buffer(1)]]) {',
            `  ${statement}`,
            '  out[1] = float(limits.count);',
            '}',
          ].join('\n'),
        );
        mkdirSync(buildDirectory, { recursive: true });
        const rewritten = join(buildDirectory, 'refused.metal.cpp');
        const { rewriteMetalSource: rewrite } = await import('../index.js');
        const { readFileSync } = await import('node:fs');
        writeFileSync(rewritten, rewrite(readFileSync(path, 'utf8'), { path }).code);
        const failure = await run(compiler!, [...flags, '-fsyntax-only', rewritten], { maxBuffer: 16 << 20 }).then(
          () => undefined,
          (error: { stderr: string }) => error,
        );
        expect(failure, `${what} compiled`).toBeDefined();
        expect(failure!.stderr).toMatch(error);
        expect(failure!.stderr).toContain('refused.metal:5');
      });
    }
  },
);
