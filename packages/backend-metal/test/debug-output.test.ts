// KILN_DEBUG=kernels prints every dispatch (kernel, function constants, grid, threadgroup, each
// binding's size, offset and storage mode) and every commit to stderr; KILN_METAL_SYNC=1 commits
// one dispatch per command buffer. Checked in a child process, on the simulator addon.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { findPackageRoot, simulatorBuildPath } from '../src/native/load-addon.js';
import { simulatorSkipReason } from './simulator-status.js';

const skipReason = simulatorSkipReason();
const script = fileURLToPath(new URL('./fixtures/debug-log.mjs', import.meta.url));

function run(environment: Record<string, string>, extra: string[] = []) {
  return spawnSync(process.execPath, [script, simulatorBuildPath(findPackageRoot()), ...extra], {
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, ...environment },
  });
}

describe.skipIf(skipReason !== undefined)(`KILN_DEBUG=kernels${skipReason ? ` (${skipReason})` : ''}`, () => {
  it('logs each dispatch with kernel, constants, grid, threadgroup and buffers, and each commit', () => {
    const child = run({ KILN_DEBUG: 'kernels' });
    expect(child.status).toBe(0);
    // The fixture negates exp(2) 70 times.
    const value = Math.exp(2) * (-1) ** 70;
    expect(JSON.parse(child.stdout)[0]).toBeCloseTo(value, 4);
    const lines = child.stderr.trim().split('\n');
    expect(lines[0]).toBe(
      '[kiln:metal] dispatch #1 fill_u32 grid=1x1x1 threadgroup=256x1x1 buffers[0:out 512B@0 shared, 1:args KilnFillArgs 16B bytes] (fill f32 [4])',
    );
    expect(lines[1]).toBe(
      '[kiln:metal] dispatch #2 unary_f32 constants{kUnaryOp=3} grid=1x1x1 threadgroup=256x1x1 buffers[0:x 512B@0 shared, 1:out 512B@0 shared, 2:args KilnCountArgs 16B bytes] (unary exp f32 [4])',
    );
    // 72 dispatches: a command buffer is committed after 64, the rest at synchronize.
    expect(lines.filter((line) => line.includes(' dispatch #'))).toHaveLength(72);
    expect(lines.indexOf('[kiln:metal] commit command buffer 1')).toBe(64);
    expect(lines.indexOf('[kiln:metal] commit command buffer 2')).toBe(73);
    expect(lines).toHaveLength(74);
  });

  it('is silent without KILN_DEBUG, and KILN_METAL_SYNC=1 commits one dispatch per command buffer', () => {
    expect(run({ KILN_DEBUG: '' }).stderr).toBe('');
    const child = run({ KILN_DEBUG: 'kernels', KILN_METAL_SYNC: '1' });
    expect(child.status).toBe(0);
    const lines = child.stderr.trim().split('\n');
    expect(lines.filter((line) => line.startsWith('[kiln:metal] commit command buffer'))).toHaveLength(72);
    expect(lines[1]).toBe('[kiln:metal] commit command buffer 1');
  });

  it('logs the fused kernels through the same plan: row kernels with their threadgroup size, rope with its scratch tables', () => {
    const child = run({ KILN_DEBUG: 'kernels' }, ['fused']);
    expect(child.status).toBe(0);
    const lines = child.stderr.trim().split('\n');
    expect(lines).toContain(
      '[kiln:metal] dispatch #73 softmax_rows_f32 constants{kSoftmaxKind=0} grid=2x1x1 threadgroup=32x1x1 buffers[0:x 512B@0 shared, 1:out 512B@0 shared, 2:args KilnRowsArgs 16B bytes] (softmax f32 [2, 2] as [2, 2])',
    );
    expect(lines.find((line) => line.includes(' rope_f32 '))).toMatch(
      /^\[kiln:metal\] dispatch #74 rope_f32 grid=1x1x1 threadgroup=256x1x1 buffers\[0:x 512B@0 shared, 1:cos \d+B@0 shared, 2:sin \d+B@8 shared, 3:out 512B@0 shared, 4:args KilnRopeArgs 16B bytes\] \(rope f32 \[1, 1, 2, 2\]\)$/,
    );
  });
});
