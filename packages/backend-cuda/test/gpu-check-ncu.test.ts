// gpu-check's 'ncu' part without a GPU: the parser over real Nsight Compute output recorded on an
// H200 (test/fixtures/ncu-report-h200.txt: the Hopper attention forward at D 128 with its warp
// stall samples, then the wgmma matmul at 4096³), and the report section it makes.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ncuSection, parseNcuReport } from '../scripts/gpu-check/ncu.mjs';

const text = readFileSync(new URL('./fixtures/ncu-report-h200.txt', import.meta.url), 'utf8');

describe("gpu-check's ncu part", () => {
  it('reads each kernel: name, launch shape, duration, throughput, busiest pipe and stall shares', () => {
    const [attention, matmul] = parseNcuReport(text);
    expect(attention).toMatchObject({
      kernel: 'attention_forward_wgmma_kernel<bf16, 128>',
      grid: [2048, 1, 1],
      block: [384, 1, 1],
      microseconds: 727.36,
      smThroughput: 28.63,
    });
    // Warp samples, largest first: the instruction cache ("no_instructions") led on the H200.
    expect(attention!.stalls.slice(0, 3).map(({ reason }) => reason)).toEqual(['no_instructions', 'wait', 'selected']);
    expect(attention!.stalls[0]!.share).toBeCloseTo(18112 / 78800, 3);
    expect(attention!.stalls.reduce((sum, { share }) => sum + share, 0)).toBeCloseTo(1, 6);
    expect(matmul).toMatchObject({
      kernel: 'matmul_wgmma_kernel<bf16, 0, 0>',
      grid: [132, 1, 1],
      microseconds: 222.34,
      issueBusy: 29.8,
      pipeline: { name: 'Shared', percent: 72.8 },
    });
  });

  it('makes one row a kernel, and says why when nothing was profiled', () => {
    const section = ncuSection({ status: 0 }, parseNcuReport(text));
    expect(section.rows).toHaveLength(3);
    expect(section.rows[1]!.slice(0, 4)).toEqual([
      'attention_forward_wgmma_kernel<bf16, 128>',
      '2048×384',
      '727.4',
      '28.6',
    ]);
    expect(section.rows[1]![6]).toMatch(/^no_instructions 23%, wait 20%, selected 15%, long_scoreboard 10%$/);
    expect(ncuSection({ status: 1, timedOut: true }, []).rows[1]![0]).toBe(
      'no kernel profiled (ncu exit 1, stopped at the time limit)',
    );
    expect(ncuSection({ skipped: 'ncu was not found' }, []).rows[1]![0]).toBe('ncu was not found');
  });
});
