// The release path of the per-platform package: stage-binary.mjs copies only a loadable,
// non-simulator x86-64 build of the same version.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { findPackageRoot, localBuildPath, simulatorBuildPath } from '../src/native/load-addon.js';

const script = fileURLToPath(new URL('../../backend-cuda-linux-x64/scripts/stage-binary.mjs', import.meta.url));
const root = findPackageRoot();
const stage = (from: string) => {
  const to = mkdtempSync(join(tmpdir(), 'kiln-stage-'));
  return { to, result: spawnSync(process.execPath, [script, '--from', from, '--to', to], { encoding: 'utf8', timeout: 60_000 }) };
};

describe('backend-cuda-linux-x64 stage-binary.mjs', () => {
  it('refuses a file that is not an x86-64 shared object', () => {
    const fake = join(mkdtempSync(join(tmpdir(), 'kiln-fake-')), 'kiln_cuda.node');
    writeFileSync(fake, 'not an ELF file at all');
    const { result } = stage(fake);
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/is not a 64-bit little-endian x86-64 ELF shared object/);
  });

  it.skipIf(!existsSync(simulatorBuildPath(root)))('refuses the simulator build', () => {
    const { result } = stage(simulatorBuildPath(root));
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/simulator build/);
  });

  it.skipIf(!existsSync(localBuildPath(root)))('stages the CUDA build (skipped: the CUDA addon is not built here, no nvcc)', () => {
    const { to, result } = stage(localBuildPath(root));
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(existsSync(join(to, 'kiln_cuda.node'))).toBe(true);
    expect(result.stdout).toMatch(/staged .* \(CUDA 13000, 80-real,86-real,89-real,90\)/);
  });
});
