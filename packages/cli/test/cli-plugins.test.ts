/**
 * Broken third-party plugins must never break kiln: a probe that never settles (with and without
 * a handle that keeps the event loop alive) and a plugin built against another KernelBackend API
 * version, installed in a project's node_modules as a user would have them.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  removeTemporaryDirectories,
  requireBuild,
  runKiln,
  temporaryDirectory,
  writeTinyConfig,
  writeTrainingText,
} from './kiln-process.js';

beforeAll(requireBuild);
afterAll(removeTemporaryDirectories);

/** A project directory whose node_modules holds kiln-backend-<name> packages with the given plugin sources. */
function projectWith(plugins: Record<string, string>): string {
  const project = temporaryDirectory('plugins');
  for (const [name, source] of Object.entries(plugins)) {
    const directory = join(project, 'node_modules', `kiln-backend-${name}`);
    mkdirSync(directory, { recursive: true });
    writeFileSync(
      join(directory, 'package.json'),
      JSON.stringify({ name: `kiln-backend-${name}`, version: '1.0.0', type: 'module', exports: './index.js' }),
    );
    writeFileSync(join(directory, 'index.js'), source);
  }
  return project;
}

const plugin = (name: string, probe: string, apiVersion = 1) =>
  `export default { name: '${name}', apiVersion: ${apiVersion}, priority: 400, probe() { ${probe} }, create() { throw new Error('create must not be called'); } };\n`;

// Never settles, and a timer keeps the event loop alive forever (like a driver thread would).
const HANGING_WITH_HANDLE = plugin('hang', 'setInterval(() => {}, 1000); return new Promise(() => {});');
// Never settles and holds nothing: the event loop empties while kiln awaits it.
const HANGING = plugin('hang', 'return new Promise(() => {});');

describe('a plugin whose probe() never settles', () => {
  it('is reported by kiln info as unavailable, with the timeout as its reason', async () => {
    const cwd = projectWith({ hang: HANGING });
    const run = await runKiln(['info', '--json'], { cwd, env: { KILN_PROBE_TIMEOUT_MS: '300' }, killAfterMs: 60_000 });
    expect(run.signal).toBeNull();
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as {
      selected: string;
      backends: Array<{ name: string; available: boolean; reason: string }>;
    };
    expect(report.selected).toBe('cpu');
    const hang = report.backends.find((backend) => backend.name === 'hang');
    expect(hang).toMatchObject({
      available: false,
      reason: expect.stringMatching(/probe\(\) did not answer within 300 ms/),
    });
  });

  it('does not keep kiln info alive when it also holds a handle open (default timeout)', async () => {
    const cwd = projectWith({ hang: HANGING_WITH_HANDLE });
    const started = Date.now();
    const run = await runKiln(['info'], { cwd, killAfterMs: 60_000 });
    expect(run.signal, 'kiln info hung and was killed').toBeNull();
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/✗ hang \(priority 400\): unavailable: its probe\(\) did not answer within 5000 ms/);
    expect(run.stdout).toMatch(/^backend: cpu/m);
    expect(Date.now() - started).toBeLessThan(45_000);
  });

  it('never delays an explicitly requested backend: kiln train --device cpu runs without waiting for it', async () => {
    const cwd = projectWith({ hang: HANGING_WITH_HANDLE });
    const dataPath = writeTrainingText(cwd);
    const config = writeTinyConfig(cwd, { dataPath, outputDir: join(cwd, 'run'), steps: 2, interval: 0 });
    // A probe timeout far beyond the kill timer: the run only finishes if the hung probe is never awaited.
    const run = await runKiln(['train', '--config', config, '--device', 'cpu'], {
      cwd,
      env: { KILN_PROBE_TIMEOUT_MS: '600000' },
      killAfterMs: 90_000,
    });
    expect(run.signal, 'kiln train hung and was killed').toBeNull();
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout + run.stderr).toMatch(/backend: cpu/);
  });

  it('never delays kiln info --device cpu --json, which reports the plugin as not probed', async () => {
    const cwd = projectWith({ hang: HANGING_WITH_HANDLE });
    // Far beyond the kill timer: info finishes only if the hung probe is never awaited.
    const run = await runKiln(['info', '--device', 'cpu', '--json'], {
      cwd,
      env: { KILN_PROBE_TIMEOUT_MS: '600000' },
      killAfterMs: 60_000,
    });
    expect(run.signal, 'kiln info hung and was killed').toBeNull();
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as {
      selected: string;
      backends: Array<{ name: string; available: boolean; reason: string }>;
    };
    expect(report.selected).toBe('cpu');
    expect(report.backends.find((backend) => backend.name === 'hang')).toMatchObject({
      available: false,
      reason: expect.stringMatching(/^not probed: 'cpu' was requested/),
    });
  });

  it('rejects a bad KILN_PROBE_TIMEOUT_MS with the variable, the value and a fix', async () => {
    const run = await runKiln(['info'], { env: { KILN_PROBE_TIMEOUT_MS: 'soon' }, killAfterMs: 60_000 });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/KILN_PROBE_TIMEOUT_MS must be a number of milliseconds.*"soon"/);
  });
});

describe('a plugin built against another KernelBackend API version', () => {
  it('is named with both versions and the package to upgrade when requested with --device', async () => {
    const cwd = projectWith({ old: plugin('old', 'return { available: true, devices: [] };', 0) });
    const run = await runKiln(['train', '--device', 'old', '--steps', '1'], { cwd, killAfterMs: 60_000 });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /^error: Backend 'old' requested by --device \("old"\) is installed but cannot be used: kiln-backend-old \(.*\) was built against KernelBackend API version 0, but this @kiln\/core implements version 1/,
    );
    expect(run.stderr).toMatch(/hint: Upgrade kiln-backend-old to a release built for KernelBackend API version 1/);
    expect(run.stderr).not.toMatch(/not installed|install kiln-backend-old/);
    // kiln info says the same thing about it.
    const info = await runKiln(['info'], { cwd, killAfterMs: 60_000 });
    expect(info.stdout).toMatch(
      /kiln-backend-old: Backend 'old' was built against KernelBackend API version 0, but this @kiln\/core implements version 1/,
    );
  });

  it('is named the same way when requested through KILN_DEVICE', async () => {
    const cwd = projectWith({ future: plugin('future', 'return { available: true, devices: [] };', 99) });
    const run = await runKiln(['info'], { cwd, env: { KILN_DEVICE: 'future' }, killAfterMs: 60_000 });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /Backend 'future' requested by KILN_DEVICE \("future"\) is installed but cannot be used: .*API version 99, but this @kiln\/core implements version 1/,
    );
    expect(run.stderr).toMatch(
      /hint: Upgrade @kiln\/core .* to a release that implements KernelBackend API version 99/,
    );
  });
});
