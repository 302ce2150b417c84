import { describe, expect, it } from 'vitest';
import { runCli } from '../src/index.js';
import type { CliStreams } from '../src/output/terminal.js';

function streams(): CliStreams & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return {
    stdout: { write: (chunk) => ((out += chunk), true) },
    stderr: { write: (chunk) => ((err += chunk), true) },
    out: () => out,
    err: () => err,
  };
}

describe('runCli (in process)', () => {
  it('runs a command and resolves to its exit code', async () => {
    const io = streams();
    expect(await runCli(['info', '--json'], io)).toBe(0);
    const report = JSON.parse(io.out()) as { selected: string; backends: Array<{ name: string }> };
    expect(report.selected).toBe('cpu');
    expect(report.backends.map((backend) => backend.name)).toContain('cpu');
  });

  it('returns 2 for usage errors and 0 for help, writing to the given streams', async () => {
    const unknown = streams();
    expect(await runCli(['frobnicate'], unknown)).toBe(2);
    expect(unknown.err()).toContain("unknown command 'frobnicate'");
    const help = streams();
    expect(await runCli(['train', '--help'], help)).toBe(0);
    expect(help.out()).toContain('--resume');
    const conflicting = streams();
    expect(await runCli(['train', '--sequences', 'a.json', '--data', 'b.txt'], conflicting)).toBe(2);
    expect(conflicting.err()).toMatch(/^error: --sequences and --data were both given\n {2}hint: /);
  });
});
