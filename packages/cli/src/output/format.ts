/** Number, size and duration formatting shared by the commands. */

/** 12345.6 → '12,346'. */
export function formatInteger(value: number): string {
  return Math.round(value).toLocaleString('en-US');
}

/** Fixed decimals; non-finite values as 'nan' / 'inf'. */
export function formatFixed(value: number, digits = 3): string {
  if (Number.isNaN(value)) return 'nan';
  if (!Number.isFinite(value)) return value > 0 ? 'inf' : '-inf';
  return value.toFixed(digits);
}

/** A learning rate in short scientific form: 0.00029 → '2.9e-4'. */
export function formatRate(value: number): string {
  if (value === 0) return '0';
  const [mantissa, exponent] = value.toExponential(1).split('e');
  return `${mantissa.replace(/\.0$/, '')}e${Number(exponent)}`;
}

/** Seconds as '45s', '1m02s' or '2h05m'. */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '?';
  const whole = Math.round(seconds);
  if (whole < 60) return `${whole}s`;
  if (whole < 3600) return `${Math.floor(whole / 60)}m${String(whole % 60).padStart(2, '0')}s`;
  return `${Math.floor(whole / 3600)}h${String(Math.floor((whole % 3600) / 60)).padStart(2, '0')}m`;
}

/** Bytes as '512 B', '1.5 KiB', '3.2 GiB'. */
export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${units[unit]}`;
}

/** Aligned text table: a header row, a rule, then the rows (the first `leftColumns` left-aligned, the rest right). */
export function formatTable(header: string[], rows: string[][], leftColumns = 1): string {
  const widths = header.map((cell, column) => Math.max(cell.length, ...rows.map((row) => (row[column] ?? '').length)));
  const line = (cells: string[]): string =>
    cells
      .map((cell, column) => (column < leftColumns ? cell.padEnd(widths[column]) : cell.padStart(widths[column])))
      .join('  ')
      .trimEnd();
  return [line(header), widths.map((width) => '-'.repeat(width)).join('  '), ...rows.map(line)].join('\n');
}

/** Natural log loss per byte in bits per byte. */
export function bitsPerByte(natsPerByte: number): number {
  return natsPerByte / Math.LN2;
}
