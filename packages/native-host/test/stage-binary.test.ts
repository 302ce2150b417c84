// The release path of each GPU backend's per-platform package: its stage-binary.mjs copies only a
// loadable, non-simulator build of the right binary format (x86-64 ELF for CUDA, arm64 Mach-O for
// Metal), and refuses anything else.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import * as cuda from '../../backend-cuda/src/native/load-addon.js';
import * as metal from '../../backend-metal/src/native/load-addon.js';

const PACKAGES = [
  {
    name: 'cuda',
    platformPackage: 'backend-cuda-linux-x64',
    root: cuda.findPackageRoot(fileURLToPath(new URL('../../backend-cuda/src/', import.meta.url))),
    paths: cuda,
    notBinary: /is not a 64-bit little-endian x86-64 ELF shared object/,
    simulator: /simulator build/,
    builtWhere: 'the CUDA addon is not built here, no nvcc',
  },
  {
    name: 'metal',
    platformPackage: 'backend-metal-darwin-arm64',
    root: metal.findPackageRoot(fileURLToPath(new URL('../../backend-metal/src/', import.meta.url))),
    paths: metal,
    notBinary: /is not a 64-bit arm64 Mach-O file/,
    // Here the simulator build is an ELF file, so it is already refused as not a Mach-O.
    simulator: /Mach-O|simulator build/,
    builtWhere: 'the Metal addon builds on macOS only',
  },
];

describe.each(PACKAGES)('$platformPackage stage-binary.mjs', (target) => {
  const script = fileURLToPath(new URL(`../../${target.platformPackage}/scripts/stage-binary.mjs`, import.meta.url));
  const stage = (from: string) => {
    const to = mkdtempSync(join(tmpdir(), 'kiln-stage-'));
    return {
      to,
      result: spawnSync(process.execPath, [script, '--from', from, '--to', to], { encoding: 'utf8', timeout: 60_000 }),
    };
  };

  it('refuses a file of another binary format', () => {
    const fake = join(mkdtempSync(join(tmpdir(), 'kiln-fake-')), `kiln_${target.name}.node`);
    writeFileSync(fake, 'not a shared object at all');
    const { result } = stage(fake);
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(target.notBinary);
  });

  it.skipIf(!existsSync(target.paths.simulatorBuildPath(target.root)))('refuses the simulator build', () => {
    const { result } = stage(target.paths.simulatorBuildPath(target.root));
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(target.simulator);
  });

  it.skipIf(!existsSync(target.paths.localBuildPath(target.root)))(
    `stages the ${target.name} build (skipped: ${target.builtWhere})`,
    () => {
      const { to, result } = stage(target.paths.localBuildPath(target.root));
      expect(result.stderr).toBe('');
      expect(result.status).toBe(0);
      expect(existsSync(join(to, `kiln_${target.name}.node`))).toBe(true);
      if (target.name === 'cuda')
        expect(result.stdout).toMatch(/staged .* \(CUDA 13000, 80-real,86-real,89-real,90a-real,90-virtual\)/);
    },
  );
});
