import { describe, expect, it } from 'vitest';
import { fastExp } from '../src/kernels/fast-exp.js';

describe('fastExp', () => {
  it('is within 1e-8 relative error of Math.exp across [−87, 88] and exact outside it', () => {
    let worst = 0;
    for (let x = -87; x <= 88; x += 0.0137) worst = Math.max(worst, Math.abs(fastExp(x) / Math.exp(x) - 1));
    for (const x of [0, -0, 1e-12, -1e-12, 0.5 * Math.LN2, -0.5 * Math.LN2, 88, -87])
      worst = Math.max(worst, Math.abs(fastExp(x) / Math.exp(x) - 1));
    expect(worst).toBeLessThan(1e-8);
    expect(fastExp(0)).toBe(1);
    for (const x of [-Infinity, Infinity, NaN, -1000, 1000, -100, 100]) expect(fastExp(x)).toBe(Math.exp(x));
  });
});
