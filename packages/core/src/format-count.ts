/** Counts in messages: "1 file", "2 files" — never "1 files" or "file(s)". */

/** `count` and the noun in the number it takes: formatCount(1, 'file') is '1 file', formatCount(3, 'device') '3 devices'. */
export function formatCount(count: number, singular: string, plural = `${singular}s`): string {
  return `${count} ${count === 1 ? singular : plural}`;
}
