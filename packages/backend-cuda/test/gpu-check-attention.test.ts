// scripts/gpu-check-attention.mjs without a GPU: its error measures, and the whole flow (kiln on
// the simulator at a tiny shape, files for the torch script, comparison against the reference,
// speed ratio, which forward kernel family ran) with a stand-in for PyTorch (fixtures/fake-torch.mjs), a wrong reference, and a
// missing Python. scripts/attention-vs-torch.py itself is at least compiled and asked for --help.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
// @ts-expect-error -- a plain .mjs script without type declarations
import { attentionFlops, checkAttention, errorStats, judge, toFloat32 } from '../scripts/gpu-check-attention.mjs';
import { createSimulatedCudaBackend } from '../src/simulator.js';
import { simulatorSkipReason } from './simulator-status.js';

const fakeTorch = fileURLToPath(new URL('./fixtures/fake-torch.mjs', import.meta.url));
const torchScript = fileURLToPath(new URL('../scripts/attention-vs-torch.py', import.meta.url));
const python = spawnSync('python3', ['--version'], { encoding: 'utf8' });
const pythonMissing = python.error !== undefined || python.status !== 0;
const torchInstalled =
  !pythonMissing && spawnSync('python3', ['-c', 'import torch'], { encoding: 'utf8' }).status === 0;
const skipReason = simulatorSkipReason();

describe('gpu-check attention helpers', () => {
  it('measures errors: max abs, relative L2, non-finite mismatches (equal infinities match)', () => {
    const stats = errorStats(Float32Array.of(1, 2, -Infinity, 4, Number.NaN), Float32Array.of(1, 2.5, -Infinity, 4, 0));
    expect(stats.maxAbs).toBeCloseTo(0.5);
    expect(stats.relativeL2).toBeCloseTo(0.5 / Math.sqrt(1 + 2.5 ** 2 + 16), 6);
    expect(stats.nonFinite).toBe(1);
    expect(() => errorStats(new Float32Array(2), new Float32Array(3))).toThrow(RangeError);
  });

  it('judges kiln against torch (2× + 1e-3), lse on its own (1e-4), and fails any non-finite mismatch', () => {
    const torch = { maxAbs: 0, relativeL2: 3e-3, nonFinite: 0 };
    expect(judge({ maxAbs: 0, relativeL2: 6.9e-3, nonFinite: 0 }, torch)).toBe(true);
    expect(judge({ maxAbs: 0, relativeL2: 7.1e-3, nonFinite: 0 }, torch)).toBe(false);
    expect(judge({ maxAbs: 0, relativeL2: 1e-6, nonFinite: 1 }, torch)).toBe(false);
    expect(judge({ maxAbs: 0, relativeL2: 5e-5, nonFinite: 0 }, undefined)).toBe(true);
    expect(judge({ maxAbs: 0, relativeL2: 5e-4, nonFinite: 0 }, undefined)).toBe(false);
  });

  it('decodes raw bf16 and f32 and counts FLOPs as FlashAttention does', () => {
    expect([...toFloat32(new Uint8Array(Uint16Array.of(0x3f80, 0xc040).buffer), 'bf16')]).toEqual([1, -3]);
    expect([...toFloat32(new Uint8Array(Float32Array.of(0.5, 7).buffer), 'f32')]).toEqual([0.5, 7]);
    const flops = attentionFlops({ batch: 8, headsQ: 16, lengthQ: 2048, lengthK: 2048, headDim: 128, causal: true });
    expect(flops.forward).toBe(2 * 8 * 16 * 2048 * 2048 * 128);
    expect(flops.forwardBackward).toBe(3.5 * flops.forward);
  });
});

describe.skipIf(skipReason !== undefined)(
  `gpu-check attention flow on the simulator${skipReason ? ` (${skipReason})` : ''}`,
  () => {
    const run = async (pythonCommand: string[]) => {
      const backend = createSimulatedCudaBackend();
      const before = backend.memory();
      const lines: string[] = [];
      try {
        const section = await checkAttention(backend, {
          simulator: true,
          pythonCommand,
          log: (line: string) => lines.push(line),
        });
        expect(backend.memory().bufferCount).toBe(before.bufferCount);
        return { section, lines };
      } finally {
        backend.dispose();
      }
    };

    it('passes against a perfect stand-in for torch, with determinism, a speed ratio and the error table', async () => {
      const { section, lines } = await run([process.execPath, fakeTorch]);
      expect(section.failed).toBe(0);
      expect(section.determinism.identical).toBe(true);
      expect(Object.keys(section.correctness)).toEqual(['out', 'lse', 'dq', 'dk', 'dv']);
      for (const entry of Object.values(section.correctness) as { passed: boolean; kiln: { relativeL2: number } }[]) {
        expect(entry.passed).toBe(true);
        expect(entry.kiln.relativeL2).toBeLessThan(1e-2);
      }
      expect(section.speed.forward).toBeGreaterThan(0);
      expect(lines.join('\n')).toMatch(/forward\+backward .* ms/);
      // The simulated device runs sm_90a code, so the bf16 D=64 forward is the wgmma kernel, and the report says so.
      expect(section.kernel).toBe('wgmma');
      expect(section.backwardKernel).toBe('wgmma');
      // …and names the kernels, from the launches' descriptions (the kernel timer).
      expect(section.kernelNames).toEqual({
        forward: 'attention_forward_wgmma_kernel<bf16,64>',
        backward: 'attention_backward_wgmma_kernel<bf16,64,kv> + attention_backward_wgmma_kernel<bf16,64,q>',
      });
      expect(lines.join('\n')).toMatch(
        /forward kernel: wgmma \+ TMA \(sm_90a\) \[attention_forward_wgmma_kernel<bf16,64>\], backward kernel: wgmma \+ TMA \(sm_90a\) \[attention_backward_wgmma_kernel<bf16,64,kv> \+ attention_backward_wgmma_kernel<bf16,64,q>\]/,
      );
      // The CUDA backend reads tokens-major too: its forward + backward is timed next to heads-major.
      expect(section.kiln.tokensMajorForwardBackwardMs).toBeGreaterThan(0);
      expect(lines.join('\n')).toMatch(/fwd\+bwd tokens-major .* ms .* of heads-major speed/);
    });

    it('fails when kiln disagrees with the reference', async () => {
      const { section } = await run([process.execPath, fakeTorch, '--perturb']);
      expect(section.correctness.out.passed).toBe(false);
      expect(section.failed).toBe(1);
    });

    it('reports why torch did not run (no such program) without failing', async () => {
      const { section, lines } = await run(['kiln-no-such-python-3']);
      expect(section.torch.error).toMatch(/could not be started/);
      expect(section.failed).toBe(0);
      expect(lines.join('\n')).toMatch(/not run/);
    });
  },
);

describe.skipIf(pythonMissing)(`attention-vs-torch.py${pythonMissing ? ' (python3 is not installed)' : ''}`, () => {
  it('compiles and answers --help without PyTorch', () => {
    // compile() checks the syntax without writing a __pycache__ next to the script.
    expect(
      spawnSync('python3', ['-c', 'import sys; compile(open(sys.argv[1]).read(), sys.argv[1], "exec")', torchScript], {
        encoding: 'utf8',
      }).status,
    ).toBe(0);
    const help = spawnSync('python3', [torchScript, '--help'], { encoding: 'utf8' });
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/--skip-reference/);
  });

  it.skipIf(torchInstalled || skipReason !== undefined)(
    'reports a missing PyTorch as the reason torch did not run',
    async () => {
      const backend = createSimulatedCudaBackend();
      try {
        const section = await checkAttention(backend, { simulator: true, log: () => {} });
        expect(section.torch.error).toMatch(/PyTorch is not available/);
        expect(section.failed).toBe(0);
      } finally {
        backend.dispose();
      }
    },
  );
});
