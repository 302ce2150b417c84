import { describe, expect, it } from 'vitest';
import {
  bf16BitsToF32,
  f16BitsToF32,
  f32ToBf16Bits,
  f32ToF16Bits,
  f64ToBf16Bits,
  f64ToF16Bits,
  decodeF16,
  encodeF16,
  encodeBf16,
  decodeBf16,
} from '@kiln/core';
import { philox4x32, philoxNormal, philoxUniform } from '@kiln/core';
import { encodeHostValues } from '@kiln/core';
import { roundToBf16Exactly, roundToF16Exactly } from '../src/reference/encoding.js';

describe('f16 conversion', () => {
  it('encodes exact values, limits and specials', () => {
    expect(f32ToF16Bits(1)).toBe(0x3c00);
    expect(f32ToF16Bits(-2)).toBe(0xc000);
    expect(f32ToF16Bits(65504)).toBe(0x7bff);
    expect(f32ToF16Bits(65520)).toBe(0x7c00); // rounds up to Inf
    expect(f32ToF16Bits(65519)).toBe(0x7bff);
    expect(f32ToF16Bits(Infinity)).toBe(0x7c00);
    expect(f32ToF16Bits(-Infinity)).toBe(0xfc00);
    expect(Number.isNaN(f16BitsToF32(f32ToF16Bits(NaN)))).toBe(true);
    expect(f32ToF16Bits(2 ** -24)).toBe(0x0001); // smallest subnormal
    expect(f32ToF16Bits(2 ** -25)).toBe(0x0000); // tie to even → 0
    expect(f32ToF16Bits(3 * 2 ** -25)).toBe(0x0002); // tie to even → 2
    expect(f32ToF16Bits(-0)).toBe(0x8000);
  });

  it('rounds to nearest even at mantissa ties', () => {
    // 1 + 2^-11 is halfway between 1 and 1 + 2^-10 → even (1).
    expect(f32ToF16Bits(1 + 2 ** -11)).toBe(0x3c00);
    // 1 + 3·2^-11 is halfway between 1+2^-10 (odd) and 1+2^-9 (even) → 1+2^-9.
    expect(f32ToF16Bits(1 + 3 * 2 ** -11)).toBe(0x3c02);
  });

  it('round-trips every finite f16 exactly', () => {
    const bits = new Uint16Array(65536).map((_, i) => i);
    const values = new Float32Array(65536);
    decodeF16(bits, values);
    const again = new Uint16Array(65536);
    encodeF16(values, again);
    for (let i = 0; i < 65536; i++) {
      const exponent = (i >> 10) & 0x1f;
      if (exponent === 31 && (i & 0x3ff) !== 0) continue; // NaN payloads may change
      expect(again[i]).toBe(i);
    }
  });
});

describe('bf16 conversion', () => {
  it('rounds to nearest even and keeps specials', () => {
    expect(f32ToBf16Bits(1)).toBe(0x3f80);
    expect(bf16BitsToF32(f32ToBf16Bits(1 + 2 ** -8))).toBe(1); // tie → even
    expect(bf16BitsToF32(f32ToBf16Bits(1 + 3 * 2 ** -8))).toBe(1 + 2 ** -6);
    expect(f32ToBf16Bits(Infinity)).toBe(0x7f80);
    expect(Number.isNaN(bf16BitsToF32(f32ToBf16Bits(NaN)))).toBe(true);
    const source = new Float32Array([3.14159, -1e-40, 1e38, NaN]);
    const encoded = new Uint16Array(4);
    encodeBf16(source, encoded);
    const decoded = new Float32Array(4);
    decodeBf16(encoded, decoded);
    expect(decoded[0]).toBeCloseTo(3.140625, 6);
    expect(Number.isNaN(decoded[3])).toBe(true);
  });
});

describe('float64 → f16/bf16 (one rounding)', () => {
  it('rounds once where going through f32 would round twice', () => {
    // The nearest f32 of each is a half tie that would go to even; the number itself is above it.
    expect(f64ToF16Bits(1 + 2 ** -11 + 2 ** -30)).toBe(0x3c01);
    expect(f64ToF16Bits(-(1 + 2 ** -11 + 2 ** -30))).toBe(0xbc01);
    expect(f64ToBf16Bits(1 + 2 ** -8 + 2 ** -30)).toBe(0x3f81);
    // 65519.999 is below the f16 overflow threshold 65520, which is its nearest f32.
    expect(f64ToF16Bits(65519.999)).toBe(0x7bff);
    expect(f64ToBf16Bits(3.5e38)).toBe(0x7f80);
    expect(f64ToBf16Bits(-1e-300)).toBe(0x8000);
    expect(f64ToF16Bits(Number.NaN) & 0x7c00).toBe(0x7c00);
  });

  it("agrees with the reference backend's exact rounding on random float64 values at every scale", () => {
    const mismatches: string[] = [];
    const scratch = new Float64Array(1);
    const words = new Uint32Array(scratch.buffer);
    let state = 0x9e3779b9;
    const next = () => {
      state ^= state << 13;
      state ^= state >>> 17;
      state ^= state << 5;
      return state >>> 0;
    };
    for (let i = 0; i < 20000; i++) {
      // Random significand bits and an exponent spread across both formats' ranges (and past them).
      words[0] = next();
      words[1] = (next() & 0xfffff) | ((1023 + (next() % 300) - 150) << 20) | (i % 2 ? 0x80000000 : 0);
      const value = scratch[0];
      if (f16BitsToF32(f64ToF16Bits(value)) !== roundToF16Exactly(value)) mismatches.push(`f16 ${value}`);
      if (bf16BitsToF32(f64ToBf16Bits(value)) !== roundToBf16Exactly(value)) mismatches.push(`bf16 ${value}`);
    }
    expect(mismatches.slice(0, 5)).toEqual([]);
  });

  it('is what the bulk encoders do for anything but a Float32Array', () => {
    const halves = new Uint16Array(2);
    encodeF16([1 + 2 ** -11 + 2 ** -30, 1.5], halves);
    expect([...halves]).toEqual([0x3c01, 0x3e00]);
    encodeBf16([1 + 2 ** -8 + 2 ** -30, 1.5], halves);
    expect([...halves]).toEqual([0x3f81, 0x3fc0]);
  });
});

describe('encodeHostValues', () => {
  it('rounds halves once and converts i32 like cast (toward zero, NaN → 0, saturating)', () => {
    expect([...new Uint16Array(encodeHostValues([1 + 2 ** -11 + 2 ** -30], 'f16').buffer)]).toEqual([0x3c01]);
    expect([...new Uint16Array(encodeHostValues([1 + 2 ** -8 + 2 ** -30], 'bf16').buffer)]).toEqual([0x3f81]);
    const ints = new Int32Array(
      encodeHostValues([1.9, -1.9, Number.NaN, 3e9, -3e9, -2147483648.5, Infinity, -Infinity], 'i32').buffer,
    );
    expect([...ints]).toEqual([1, -1, 0, 2147483647, -2147483648, -2147483648, 2147483647, -2147483648]);
  });
});

describe('Philox4x32-10', () => {
  it('matches the Random123 known-answer vectors', () => {
    const out = new Uint32Array(4);
    philox4x32([0, 0, 0, 0], [0, 0], out);
    expect([...out].map((word) => word.toString(16).padStart(8, '0'))).toEqual([
      '6627e8d5',
      'e169c58d',
      'bc57ac4c',
      '9b00dbd8',
    ]);
    philox4x32([0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff], [0xffffffff, 0xffffffff], out);
    expect([...out].map((word) => word.toString(16).padStart(8, '0'))).toEqual([
      '408f276d',
      '41c83b0e',
      'a20bc7c6',
      '6d5451fd',
    ]);
    philox4x32([0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344], [0xa4093822, 0x299f31d0], out);
    expect([...out].map((word) => word.toString(16).padStart(8, '0'))).toEqual([
      'd16cfe09',
      '94fdcceb',
      '5001e420',
      '24126ea1',
    ]);
  });

  it('is counter-based: any window of the stream equals the same slice of the whole', () => {
    const whole = new Float32Array(37);
    philoxUniform(whole, 42, 0);
    const window = new Float32Array(10);
    philoxUniform(window, 42, 13);
    expect([...window]).toEqual([...whole.subarray(13, 23)]);
    const normals = new Float32Array(20);
    philoxNormal(normals, 7, 0);
    const later = new Float32Array(5);
    philoxNormal(later, 7, 15);
    expect([...later]).toEqual([...normals.subarray(15)]);
  });

  it('gives plausible uniform and normal statistics', () => {
    const uniform = new Float32Array(20000);
    philoxUniform(uniform, 1, 0, -1, 1);
    const mean = uniform.reduce((a, b) => a + b, 0) / uniform.length;
    expect(Math.abs(mean)).toBeLessThan(0.03);
    expect(Math.min(...uniform)).toBeGreaterThanOrEqual(-1);
    expect(Math.max(...uniform)).toBeLessThan(1);
    const normal = new Float32Array(20000);
    philoxNormal(normal, 2, 0, 0, 2);
    const normalMean = normal.reduce((a, b) => a + b, 0) / normal.length;
    const variance = normal.reduce((a, b) => a + (b - normalMean) ** 2, 0) / normal.length;
    expect(Math.abs(normalMean)).toBeLessThan(0.06);
    expect(Math.sqrt(variance)).toBeGreaterThan(1.9);
    expect(Math.sqrt(variance)).toBeLessThan(2.1);
    expect(new Set(uniform).size).toBeGreaterThan(19000);
  });
});
