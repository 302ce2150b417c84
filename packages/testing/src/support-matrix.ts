/** What a backend runs natively, what core falls back for, and what the docs rule out, per (kernel, dtype). */
import { DTYPES, type DType } from '@kiln/core';
import { FUSED_KERNELS, PRIMITIVE_KERNELS, type KernelBackend, type KernelName } from '@kiln/core';
import { isNative, KERNEL_DTYPES } from './conformance/kernel-dtypes.js';

/** 'native': the backend runs it; 'fallback': core composes it or runs it in f32; 'unsupported': the docs do not allow the dtype. */
export type SupportStatus = 'native' | 'fallback' | 'unsupported';

/** One cell of the support matrix. */
export interface SupportMatrixRow {
  /** The kernel. */
  kernel: KernelName;
  /** The dtype. */
  dtype: DType;
  /** How it runs on the backend. */
  status: SupportStatus;
}

/** Every (kernel, dtype) pair with its status on `backend` (primitives first, then fused kernels). */
export function supportMatrix(
  backend: Pick<KernelBackend, 'capabilities'> & Partial<KernelBackend>,
): SupportMatrixRow[] {
  const rows: SupportMatrixRow[] = [];
  for (const kernel of [...PRIMITIVE_KERNELS, ...FUSED_KERNELS]) {
    for (const dtype of DTYPES) {
      const status: SupportStatus = !KERNEL_DTYPES[kernel].includes(dtype)
        ? 'unsupported'
        : isNative(backend, kernel, dtype)
          ? 'native'
          : 'fallback';
      rows.push({ kernel, dtype, status });
    }
  }
  return rows;
}

const CELL: Readonly<Record<SupportStatus, string>> = { native: 'native', fallback: 'fallback', unsupported: '-' };

/** A plain-text table, one line per kernel and one column per dtype ('-' = not allowed by the docs). */
export function formatSupportMatrix(rows: readonly SupportMatrixRow[]): string {
  const kernels = [...new Set(rows.map((row) => row.kernel))];
  const dtypes = DTYPES.filter((dtype) => rows.some((row) => row.dtype === dtype));
  const cell = (kernel: KernelName, dtype: DType) => {
    const row = rows.find((candidate) => candidate.kernel === kernel && candidate.dtype === dtype);
    return row ? CELL[row.status] : '';
  };
  const table = [
    ['kernel', ...dtypes],
    ...kernels.map((kernel) => [kernel, ...dtypes.map((dtype) => cell(kernel, dtype))]),
  ];
  const widths = table[0].map((_, column) => Math.max(...table.map((line) => line[column].length)));
  const format = (line: string[]) =>
    line
      .map((text, column) => text.padEnd(widths[column]))
      .join(' | ')
      .trimEnd();
  const separator = widths.map((width) => '-'.repeat(width)).join('-|-');
  return [format(table[0]), separator, ...table.slice(1).map(format)].join('\n');
}
