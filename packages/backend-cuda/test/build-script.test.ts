// The build step without nvcc: it must skip the CUDA addon cleanly (exit 0) and say why and
// what to do; the report it leaves is what the loader quotes in "not built".
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const script = fileURLToPath(new URL('../scripts/build-native.mjs', import.meta.url));

/** PATH without any directory holding nvcc. */
function pathWithoutNvcc(): string {
  const spawned = spawnSync('sh', ['-c', 'command -v nvcc'], { encoding: 'utf8' });
  const nvccDirectory = spawned.status === 0 ? dirname(spawned.stdout.trim()) : undefined;
  return (process.env.PATH ?? '')
    .split(delimiter)
    .filter((directory) => directory !== nvccDirectory && !directory.includes('cuda'))
    .join(delimiter);
}

describe('scripts/build-native.mjs', () => {
  it('skips the CUDA addon with a clear message and exit 0 when nvcc is not on PATH', () => {
    const out = mkdtempSync(join(tmpdir(), 'kiln-cuda-build-'));
    const environment: NodeJS.ProcessEnv = { ...process.env, PATH: pathWithoutNvcc(), KILN_CUDA_BUILD: 'cuda' };
    delete environment.CUDACXX;
    delete environment.CUDA_HOME;
    delete environment.CUDA_PATH;
    const result = spawnSync(process.execPath, [script, '--out', out], {
      encoding: 'utf8',
      env: environment,
      timeout: 60_000,
    });
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/skipping the CUDA addon: nvcc was not found \(checked PATH\)/);
    expect(result.stdout).toMatch(/Install the CUDA 13 toolkit and run `npx kiln-build-cuda`/);
    const report = JSON.parse(readFileSync(join(out, 'native-build.json'), 'utf8')) as {
      cuda: { status: string; reason: string };
    };
    expect(report.cuda.status).toBe('skipped');
    expect(report.cuda.reason).toMatch(/^nvcc was not found/);
  });
});
