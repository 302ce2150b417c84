// The release path of the per-platform package: stage-binary.mjs copies only a loadable,
// non-simulator arm64 Mach-O build of the same version.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { findPackageRoot, localBuildPath, simulatorBuildPath } from '../src/native/load-addon.js';

const script = fileURLToPath(new URL('../../backend-metal-darwin-arm64/scripts/stage-binary.mjs', import.meta.url));
const root = findPackageRoot();
const stage = (from: string) => {
  const to = mkdtempSync(join(tmpdir(), 'kiln-stage-'));
  return { to, result: spawnSync(process.execPath, [script, '--from', from, '--to', to], { encoding: 'utf8', timeout: 60_000 }) };
};

describe('backend-metal-darwin-arm64 stage-binary.mjs', () => {
  it('refuses a file that is not an arm64 Mach-O', () => {
    const fake = join(mkdtempSync(join(tmpdir(), 'kiln-fake-')), 'kiln_metal.node');
    writeFileSync(fake, 'not a Mach-O file at all');
    const { result } = stage(fake);
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/is not a 64-bit arm64 Mach-O file/);
  });

  it.skipIf(!existsSync(simulatorBuildPath(root)))('refuses the simulator build (here an ELF file, so already as not a Mach-O)', () => {
    const { result } = stage(simulatorBuildPath(root));
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/Mach-O|simulator build/);
  });

  it.skipIf(!existsSync(localBuildPath(root)))('stages the Metal build (skipped: the Metal addon builds on macOS only)', () => {
    const { to, result } = stage(localBuildPath(root));
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(existsSync(join(to, 'kiln_metal.node'))).toBe(true);
  });
});
