import { describe, expect, it } from 'vitest';
import type { KernelBackend } from '@kiln/core';
import { createReferenceBackend, gradcheck, runConformance } from '../src/index.js';

// f(a, b) = Σ sin(a_i) · b_i²  →  ∂f/∂a_i = cos(a_i) · b_i², ∂f/∂b_i = 2 sin(a_i) · b_i
const loss = ([a, b]: Float64Array[]) => a.reduce((total, value, i) => total + Math.sin(value) * b[i] ** 2, 0);
const inputs = () => [Float64Array.from([0.3, -1.2, 2.5, 0.7]), Float64Array.from([1.5, -0.4, 0.9, 2.0])];
const gradients = ([a, b]: Float64Array[]) => [
  a.map((value, i) => Math.cos(value) * b[i] ** 2),
  a.map((value, i) => 2 * Math.sin(value) * b[i]),
];

describe('gradcheck', () => {
  it('accepts the correct analytic gradient', () => {
    const values = inputs();
    const result = gradcheck(loss, values, gradients(values));
    expect(result.passed).toBe(true);
    expect(result.checkedCount).toBe(8);
    expect(result.maxAbsoluteError).toBeLessThan(1e-8);
  });

  it('rejects a gradient wrong in one element and names that element', () => {
    const values = inputs();
    const [gradA, gradB] = gradients(values);
    gradB[2] *= -1;
    const result = gradcheck(loss, values, [gradA, gradB]);
    expect(result.passed).toBe(false);
    expect(result.failedCount).toBe(1);
    expect(result.worst).toMatchObject({ input: 1, index: 2 });
    expect(result.worst!.numeric).toBeCloseTo(2 * Math.sin(2.5) * 0.9, 6);
    expect(result.message).toContain('input 1[2]');
  });

  it('rejects a gradient that is off by a small relative error above the tolerance, not below it', () => {
    const values = inputs();
    const [gradA, gradB] = gradients(values);
    const tolerance = { absolute: 0, relative: 1e-4 };
    expect(gradcheck(loss, values, [gradA.map((value) => value * (1 + 1e-3)), gradB], { tolerance }).passed).toBe(
      false,
    );
    expect(gradcheck(loss, values, [gradA.map((value) => value * (1 + 1e-6)), gradB], { tolerance }).passed).toBe(true);
  });

  it('restores the inputs it perturbs', () => {
    const values = inputs();
    const copies = values.map((input) => Float64Array.from(input));
    gradcheck(loss, values, gradients(values));
    expect(values).toEqual(copies);
  });

  it('throws when gradients and inputs do not pair up', () => {
    const values = inputs();
    expect(() => gradcheck(loss, values, [gradients(values)[0]])).toThrow(RangeError);
    expect(() => gradcheck(loss, values, [new Float64Array(3), new Float64Array(4)])).toThrow(
      /gradient 0 has 3 elements/,
    );
  });
});

describe('gradient-check cases of the conformance kit', () => {
  // dUp should be dy · silu(gate); this one forgets the sigmoid (dy · gate).
  function withWrongSwigluBackward(name: string): KernelBackend {
    const base = createReferenceBackend({ name });
    return {
      ...base,
      swigluBackward(gate, up, dy, dGate, dUp) {
        base.swigluBackward!(gate, up, dy, dGate, dUp);
        base.binary(
          'mul',
          { ...dy, strides: contiguous(dy.shape), offset: 0 },
          { ...gate, strides: contiguous(gate.shape), offset: 0 },
          dUp,
        );
      },
    };
  }

  function contiguous(shape: readonly number[]): number[] {
    return shape.map((_, axis) => shape.slice(axis + 1).reduce((product, size) => product * size, 1));
  }

  it('catch a wrong backward even when the reference backend shares the same bug', async () => {
    const report = await runConformance(withWrongSwigluBackward('wrong'), {
      kernels: ['swigluBackward'],
      reference: withWrongSwigluBackward('equally-wrong-reference'),
    });
    const failed = report.results.filter((result) => result.status === 'failed');
    expect(failed.map((result) => result.id)).toEqual(['swigluBackward f32 [gradcheck 4×5]']);
    expect(failed[0].message).toContain('gradient check failed');
    expect(report.passed).toBeGreaterThan(10);
  });

  it('pass every backward kernel of the reference backend', async () => {
    const report = await runConformance(createReferenceBackend(), {
      kernels: [
        'softmaxBackward',
        'rmsNormBackward',
        'rope',
        'swigluBackward',
        'attentionBackward',
        'crossEntropyBackward',
      ],
    });
    const gradientCases = report.results.filter((result) => result.id.includes('gradcheck'));
    expect(gradientCases.map((result) => result.status)).toEqual(new Array(7).fill('passed'));
  });
});
