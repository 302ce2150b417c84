/**
 * kiln as an npm user gets it: the packed tarballs of core, testing, backend-cpu, trainer, cli and the
 * out-of-tree backend template installed with npm into a fresh project. `kiln info` discovers the
 * plugin, `KILN_DEVICE=example kiln train` trains on it, a checkpoint it wrote generates on the
 * CPU, broken plugins (another API version, a hanging probe) get clear messages, the README's
 * "Using it" sample runs as written, @kiln/core/native-backend throws core's own error classes under
 * require and import, @kiln/testing runs without vitest (and says to install it for
 * describeBackendConformance), the deprecated @kiln/core/testing re-exports it, and TypeScript users
 * of every module system get types.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { npmCommand, REPOSITORY, run, TEMPLATE_NAME, type CommandResult } from './setup/workspace.js';

const packed = inject('packed');
const INSTALLED = ['@kiln/core', '@kiln/testing', '@kiln/backend-cpu', '@kiln/trainer', '@kiln/cli', TEMPLATE_NAME];
let project: string;

/** Runs the installed `kiln` (through node, so it works the same on Windows). */
function kiln(args: string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 120_000): Promise<CommandResult> {
  return run(process.execPath, [join(project, 'node_modules', '@kiln', 'cli', 'bin', 'kiln.js'), ...args], {
    cwd: project,
    env: { KILN_DEVICE: '', KILN_BACKENDS: '', NO_COLOR: '1', ...env },
    timeoutMs,
  });
}

/** Writes node_modules/kiln-backend-<name> with the given plugin source (an ESM default export). */
function installFakePlugin(name: string, pluginSource: string): void {
  const directory = join(project, 'node_modules', `kiln-backend-${name}`);
  mkdirSync(directory, { recursive: true });
  writeFileSync(
    join(directory, 'package.json'),
    JSON.stringify({ name: `kiln-backend-${name}`, version: '1.0.0', type: 'module', exports: './index.js' }),
  );
  writeFileSync(join(directory, 'index.js'), pluginSource);
}

function removeFakePlugin(name: string): void {
  rmSync(join(project, 'node_modules', `kiln-backend-${name}`), { recursive: true, force: true });
}

beforeAll(async () => {
  project = mkdtempSync(join(tmpdir(), 'kiln-npm-project-'));
  writeFileSync(
    join(project, 'package.json'),
    JSON.stringify({ name: 'kiln-user-project', version: '1.0.0', private: true, type: 'module' }, null, 2),
  );
  const tarballs = INSTALLED.map((name) => {
    const tarball = packed.tarballs[name];
    if (tarball === undefined) throw new Error(`${name} was not packed: ${packed.notPacked[name] ?? 'unknown reason'}`);
    return tarball;
  });
  // Third-party dependencies (yaml, zod, commander, cli-progress) come from the registry or npm's cache.
  const install = await run(npmCommand(), ['install', '--no-audit', '--no-fund', '--loglevel=error', ...tarballs], {
    cwd: project,
    timeoutMs: 240_000,
  });
  if (install.code !== 0)
    throw new Error(`npm install failed (exit ${String(install.code)}):\n${install.stdout}\n${install.stderr}`);
});

afterAll(() => {
  if (project !== undefined) rmSync(project, { recursive: true, force: true });
});

describe('a fresh npm project with kiln and kiln-backend-example installed', () => {
  it('kiln info --json discovers the out-of-tree backend and keeps the CPU as default (priority 50 < 100)', async () => {
    const result = await kiln(['info', '--json']);
    expect(result.code, result.stderr).toBe(0);
    const report = JSON.parse(result.stdout) as {
      selected: string;
      backends: Array<{ name: string; available: boolean; priority: number; devices: Array<{ id: string }> }>;
    };
    expect(report.selected).toBe('cpu');
    const example = report.backends.find((backend) => backend.name === 'example');
    expect(example).toMatchObject({ available: true, priority: 50 });
    expect(example?.devices.map((device) => device.id)).toEqual(['example:0']);
  });

  it('KILN_DEVICE=example kiln train trains on it, and its checkpoint generates on --device cpu', async () => {
    const data = join(project, 'data.txt');
    writeFileSync(data, 'export function add(a: number, b: number): number {\n  return a + b;\n}\n'.repeat(40));
    const config = join(project, 'tiny.yaml');
    // A small model keeps five steps of plain-TypeScript kernels to a few seconds.
    writeFileSync(
      config,
      [
        'model: { contextLength: 16, dModel: 16, nLayer: 1, nHead: 2 }',
        'schedule: { batchSize: 4, microBatchSize: 4, evalInterval: 5, evalBatches: 1, logInterval: 1 }',
        'checkpoint: { interval: 5 }',
        '',
      ].join('\n'),
    );
    const output = join(project, 'run');
    const trained = await kiln(['train', '--config', config, '--data', data, '--steps', '5', '--output', output], {
      KILN_DEVICE: 'example',
    });
    expect(trained.code, trained.stdout + trained.stderr).toBe(0);
    const printed = trained.stdout + trained.stderr;
    expect(printed).toMatch(
      /^backend: example on kiln example device \(plain TypeScript\) \(example:0\) — chosen: requested by KILN_DEVICE/m,
    );
    expect(printed).toMatch(/step 5\/5 mean loss \d/);
    const metrics = readFileSync(join(output, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { step: number; loss: number });
    expect(metrics.at(-1)?.step).toBe(5);
    expect(Number.isFinite(metrics.at(-1)?.loss)).toBe(true);
    expect(readdirSync(join(output, 'checkpoints'))).toContain('step-00000005');

    const generated = await kiln([
      'generate',
      '--checkpoint',
      output,
      '--device',
      'cpu',
      '--max-tokens',
      '12',
      '--prompt',
      'export ',
      '--seed',
      '1',
    ]);
    expect(generated.code, generated.stderr).toBe(0);
    expect(generated.stderr).toMatch(/backend: cpu/);
    expect(generated.stdout.startsWith('export ')).toBe(true);
    expect(generated.stdout.length).toBeGreaterThan('export '.length);
  });

  it('names a plugin built against another API version: both versions and the package to upgrade', async () => {
    installFakePlugin(
      'old',
      "export default { name: 'old', apiVersion: 0, priority: 10, probe: () => ({ available: true, devices: [] }), create() { throw new Error('unreachable'); } };\n",
    );
    try {
      const result = await kiln(['info', '--device', 'old']);
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(
        /Backend 'old' requested by --device \("old"\) is installed but cannot be used: kiln-backend-old \(.*\) was built against KernelBackend API version 0, but this @kiln\/core implements version 1/,
      );
      expect(result.stderr).toMatch(
        /hint: Upgrade kiln-backend-old to a release built for KernelBackend API version 1/,
      );
    } finally {
      removeFakePlugin('old');
    }
  });

  it('reports a plugin whose probe never settles (holding a handle open) as unavailable, and still exits', async () => {
    installFakePlugin(
      'hang',
      "export default { name: 'hang', apiVersion: 1, priority: 400, probe() { setInterval(() => {}, 1000); return new Promise(() => {}); }, create() { throw new Error('unreachable'); } };\n",
    );
    try {
      const info = await kiln(['info'], { KILN_PROBE_TIMEOUT_MS: '500' }, 60_000);
      expect(info.signal, 'kiln info hung').toBeNull();
      expect(info.code, info.stderr).toBe(0);
      expect(info.stdout).toMatch(/✗ hang \(priority 400\): unavailable: its probe\(\) did not answer within 500 ms/);
      expect(info.stdout).toMatch(/✓ example \(priority 50\)/);
      // An explicit device never waits for the hung probe, even with a timeout far beyond the test's.
      const generated = await kiln(
        ['generate', '--checkpoint', join(project, 'run'), '--device', 'cpu', '--max-tokens', '4', '--quiet'],
        { KILN_PROBE_TIMEOUT_MS: '600000' },
        60_000,
      );
      expect(generated.signal, 'kiln generate --device cpu waited for the hung probe').toBeNull();
      expect(generated.code, generated.stderr).toBe(0);
    } finally {
      removeFakePlugin('hang');
    }
  });

  it('runs the README\'s "Using it" sample as written (ESM)', async () => {
    const readme = readFileSync(join(REPOSITORY, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('## Using it'));
    const sample = /```(?:js|ts)\n([\s\S]*?)```/.exec(section)?.[1];
    expect(sample, 'README has a "Using it" code sample').toBeDefined();
    writeFileSync(join(project, 'using-it.mjs'), sample!);
    const result = await run(process.execPath, ['using-it.mjs'], { cwd: project, env: { KILN_DEVICE: '' } });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/chosen/);
  });

  it('loads @kiln/core/native-backend from require and import, throwing the same error classes as @kiln/core', async () => {
    const check = (load: string) =>
      `${load}\ntry {\n  nativeBackend.nativeArgumentChecks('rocm').checkInteger(-1, 'alloc: byteLength');\n} catch (error) {\n  console.log(error instanceof core.InvalidArgumentError, error.message);\n}\n`;
    writeFileSync(
      join(project, 'native-backend.cjs'),
      check("const core = require('@kiln/core');\nconst nativeBackend = require('@kiln/core/native-backend');"),
    );
    writeFileSync(
      join(project, 'native-backend.mjs'),
      check("import * as core from '@kiln/core';\nimport * as nativeBackend from '@kiln/core/native-backend';"),
    );
    for (const file of ['native-backend.cjs', 'native-backend.mjs']) {
      const result = await run(process.execPath, [file], { cwd: project });
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout.trim(), file).toBe('true rocm backend: alloc: byteLength must be an integer ≥ 0, got -1');
    }
  });

  it('runs @kiln/testing without vitest, says to install it for describeBackendConformance, and re-exports it from @kiln/core/testing with a warning', async () => {
    writeFileSync(
      join(project, 'kit.mjs'),
      [
        "import * as kit from '@kiln/testing';",
        "import * as deprecated from '@kiln/core/testing';",
        "const report = await kit.runConformance(kit.createReferenceBackend(), { kernels: ['fill'] });",
        'console.log(report.failed, report.passed > 0, deprecated.runConformance === kit.runConformance);',
        "try { kit.describeBackendConformance('x', { create: () => kit.createReferenceBackend() }); } catch (error) { console.log(error.name, error.message.split('\\n').join(' | ')); }",
      ].join('\n'),
    );
    const result = await run(process.execPath, ['kit.mjs'], { cwd: project });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout.trim().split('\n')).toEqual([
      '0 true true',
      'MissingDependencyError describeBackendConformance needs vitest, which is not installed |   hint: install vitest (npm i -D vitest) and run the test file with it, or call runConformance(backend) for a report without vitest',
    ]);
    expect(result.stderr).toContain(
      'DeprecationWarning: @kiln/core/testing is deprecated and goes away in kiln 0.3: import the conformance kit from @kiln/testing (npm i -D @kiln/testing)',
    );
  });

  it('gives TypeScript users types under every module system (CommonJS require, ESM, node10, bundler)', async () => {
    const typescript = join(REPOSITORY, 'node_modules', 'typescript', 'bin', 'tsc');
    const compile = async (name: string, options: Record<string, string>, source: string) => {
      const directory = join(project, `ts-${name}`);
      mkdirSync(directory, { recursive: true });
      const extension = options.module === 'node16' && name.startsWith('cjs') ? 'cts' : 'ts';
      writeFileSync(join(directory, `index.${extension}`), source);
      const flags = Object.entries(options).flatMap(([key, value]) => [`--${key}`, value]);
      // skipLibCheck: kiln's declarations are checked by its own build; resolution errors (TS1471…) still show in the user's file.
      const result = await run(
        process.execPath,
        [
          typescript,
          '--noEmit',
          '--strict',
          '--skipLibCheck',
          '--types',
          'node',
          '--typeRoots',
          join(REPOSITORY, 'node_modules', '@types'),
          ...flags,
          join(directory, `index.${extension}`),
        ],
        { cwd: project },
      );
      return `${result.stdout}${result.stderr}`.trim();
    };
    const cjs =
      "import kiln = require('@kiln/core');\nimport testing = require('@kiln/testing');\nimport nativeBackend = require('@kiln/core/native-backend');\nconst version: number = kiln.KERNEL_API_VERSION;\nconst rows: testing.SupportMatrixRow[] = testing.supportMatrix(testing.createReferenceBackend());\nconst checks: nativeBackend.NativeArgumentChecks = nativeBackend.nativeArgumentChecks('rocm');\nexport = { version, rows, checks };\n";
    const esm =
      "import { KERNEL_API_VERSION, type KernelBackend } from '@kiln/core';\nimport { supportMatrix } from '@kiln/testing';\nimport { NativeKernelBackend } from '@kiln/core/native-backend';\nimport plugin from 'kiln-backend-example';\nimport { runCli } from '@kiln/cli';\nimport { train } from '@kiln/trainer';\nexport const checks: [number, KernelBackend['name'] | undefined, unknown, unknown, unknown] = [KERNEL_API_VERSION, undefined, supportMatrix, plugin.probe, [runCli, train, NativeKernelBackend]];\n";
    expect(await compile('cjs-node16', { module: 'node16', moduleResolution: 'node16' }, cjs)).toBe('');
    expect(
      await compile('esm-node16', { module: 'node16', moduleResolution: 'node16' }, esm.replace(/^/, '// module\n')),
    ).toBe('');
    expect(
      await compile(
        'node10',
        { module: 'commonjs', moduleResolution: 'node10', target: 'es2022', ignoreDeprecations: '5.0' },
        "import * as kiln from '@kiln/core';\nimport * as testing from '@kiln/core/testing';\nimport * as nativeBackend from '@kiln/core/native-backend';\nexport const apiVersion: number = kiln.KERNEL_API_VERSION;\nexport const table: string = testing.formatSupportMatrix([]);\nexport const shape: string = nativeBackend.formatShape([2, 3]);\n",
      ),
    ).toBe('');
    expect(await compile('bundler', { module: 'esnext', moduleResolution: 'bundler', target: 'es2022' }, esm)).toBe('');
  });
});
