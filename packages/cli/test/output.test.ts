import { describe, expect, it } from 'vitest';
import { TokenTextStream, promptTokens } from '../src/output/byte-stream.js';
import {
  bitsPerByte,
  formatBytes,
  formatDuration,
  formatFixed,
  formatInteger,
  formatRate,
  formatTable,
} from '../src/output/format.js';

describe('formatting', () => {
  it('formats integers, rates, fixed numbers and durations', () => {
    expect(formatInteger(12345.4)).toBe('12,345');
    expect(formatRate(0.00029)).toBe('2.9e-4');
    expect(formatRate(0.001)).toBe('1e-3');
    expect(formatRate(0)).toBe('0');
    expect(formatFixed(2.41249)).toBe('2.412');
    expect(formatFixed(Number.NaN)).toBe('nan');
    expect(formatFixed(Number.POSITIVE_INFINITY)).toBe('inf');
    expect(formatDuration(45)).toBe('45s');
    expect(formatDuration(62)).toBe('1m02s');
    expect(formatDuration(2 * 3600 + 5 * 60)).toBe('2h05m');
    expect(formatDuration(Number.NaN)).toBe('?');
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(1536)).toBe('1.5 KiB');
    expect(bitsPerByte(Math.LN2)).toBeCloseTo(1, 12);
  });

  it('aligns tables: left columns padded right, numbers padded left', () => {
    const table = formatTable(
      ['model', 'ms'],
      [
        ['tiny', '1.5'],
        ['medium', '120.25'],
      ],
    );
    expect(table.split('\n')).toEqual(['model       ms', '------  ------', 'tiny       1.5', 'medium  120.25']);
  });
});

describe('TokenTextStream', () => {
  it('holds back multi-byte UTF-8 characters split across tokens', () => {
    const text = 'aé€😀b';
    const bytes = [...new TextEncoder().encode(text)];
    const stream = new TokenTextStream(256);
    const pieces = bytes.map((id) => stream.push(id));
    expect(pieces.join('') + stream.flush()).toBe(text);
    // 'é' is two bytes: its first byte prints nothing, its second prints the character.
    expect(pieces.slice(1, 3)).toEqual(['', 'é']);
    expect(pieces.slice(3, 6)).toEqual(['', '', '€']);
  });

  it('turns invalid bytes into replacement characters and never throws', () => {
    const stream = new TokenTextStream(256);
    const text = [0xff, 0x41, 0xe2, 0x82].map((id) => stream.push(id)).join('') + stream.flush();
    expect(text).toBe('\uFFFDA\uFFFD');
  });

  it('prints token ids for vocabularies larger than bytes', () => {
    const stream = new TokenTextStream(1000);
    expect([5, 900, 12].map((id) => stream.push(id)).join('')).toBe('5 900 12');
    expect(promptTokens('1, 2 3', 1000)).toEqual([1, 2, 3]);
    expect(promptTokens('hé', 256)).toEqual([0x68, 0xc3, 0xa9]);
  });
});
