import { describe, expect, it } from 'vitest';
import { formatCount } from '../src/index.js';

describe('formatCount', () => {
  it('puts the noun in the number the count takes', () => {
    expect(formatCount(1, 'file')).toBe('1 file');
    expect([0, 2, 13].map((count) => formatCount(count, 'file'))).toEqual(['0 files', '2 files', '13 files']);
    expect(formatCount(1, 'index', 'indices')).toBe('1 index');
    expect(formatCount(4, 'index', 'indices')).toBe('4 indices');
  });
});
