/** One kernel of ncu's text report. */
export interface NcuKernel {
  kernel: string;
  grid: number[];
  block: number[];
  microseconds: number | null;
  smThroughput: number | null;
  issueBusy: number | null;
  pipeline: { name: string; percent: number } | null;
  stalls: Array<{ reason: string; share: number }>;
}
/** The kernels of ncu's text report. */
export function parseNcuReport(text: string): NcuKernel[];
/** The report section of the parsed kernels. */
export function ncuSection(
  result: { skipped?: string; status?: number | null; timedOut?: boolean },
  kernels: NcuKernel[],
): { title: string; rows: string[][] };
