import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { discoverBackends, type DiscoveryReport } from '../src/backend/discovery.js';
import {
  KERNEL_API_VERSION,
  type BackendCreateOptions,
  type BackendPlugin,
  type DeviceInfo,
  type KernelBackend,
  type ProbeResult,
} from '../src/backend/kernel-backend.js';
import {
  createBackend,
  DEFAULT_PROBE_TIMEOUT_MS,
  getBackendPlugin,
  listBackends,
  probeBackend,
  probeBackends,
  probeTimeoutMs,
  registerBackend,
  unregisterBackend,
} from '../src/backend/registry.js';
import { parseDeviceId, resolveBackend } from '../src/backend/resolve.js';
import {
  BackendApiVersionError,
  BackendContractError,
  BackendUnavailableError,
  InvalidArgumentError,
} from '../src/errors.js';

interface FakeOptions {
  available?: boolean;
  reason?: string;
  devices?: number;
  probeThrows?: string;
  createThrows?: string;
}

type FakePlugin = BackendPlugin & { created: BackendCreateOptions[] };

function fakePlugin(name: string, priority: number, options: FakeOptions = {}): FakePlugin {
  const devices: DeviceInfo[] = Array.from({ length: options.devices ?? 1 }, (_, index) => ({
    id: `${name}:${index}`,
    name: `${name} device ${index}`,
    unifiedMemory: false,
  }));
  const created: BackendCreateOptions[] = [];
  return {
    name,
    apiVersion: KERNEL_API_VERSION,
    priority,
    created,
    probe(): ProbeResult {
      if (options.probeThrows !== undefined) throw new Error(options.probeThrows);
      const available = options.available ?? true;
      return available ? { available, devices } : { available, reason: options.reason, devices: [] };
    },
    create(createOptions?: BackendCreateOptions): KernelBackend {
      created.push(createOptions ?? {});
      if (options.createThrows !== undefined) throw new Error(options.createThrows);
      const device = devices[createOptions?.deviceIndex ?? 0];
      return {
        name,
        apiVersion: KERNEL_API_VERSION,
        capabilities: { device, supports: () => true, flashAttention: false },
      } as unknown as KernelBackend;
    },
  };
}

async function errorOf(promise: Promise<unknown>): Promise<BackendUnavailableError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(BackendUnavailableError);
  return error as BackendUnavailableError;
}

function clearRegistry(): void {
  for (const plugin of listBackends()) unregisterBackend(plugin.name);
}

beforeEach(clearRegistry);

describe('registerBackend / listBackends / probeBackends', () => {
  it('lists plugins by priority, highest first', () => {
    registerBackend(fakePlugin('cpu', 100));
    registerBackend(fakePlugin('cuda', 300));
    registerBackend(fakePlugin('metal', 200));
    expect(listBackends().map((plugin) => plugin.name)).toEqual(['cuda', 'metal', 'cpu']);
  });

  it('validates the plugin shape', () => {
    expect(() => registerBackend(null as never)).toThrow(InvalidArgumentError);
    expect(() => registerBackend(fakePlugin('CUDA', 1))).toThrow(/lower-case identifier/);
    expect(() => registerBackend(fakePlugin('cuda:0', 1))).toThrow(InvalidArgumentError);
    expect(() => registerBackend(fakePlugin('cuda', Number.NaN))).toThrow(/priority/);
    expect(() => registerBackend({ ...fakePlugin('cuda', 1), probe: undefined } as never)).toThrow(/probe\(\)/);
    expect(() => registerBackend({ ...fakePlugin('cuda', 1), create: 'yes' } as never)).toThrow(/create\(\)/);
    expect(listBackends()).toEqual([]);
  });

  it('rejects another API version with both versions and a hint in the message', () => {
    const newer = { ...fakePlugin('rocm', 10), apiVersion: KERNEL_API_VERSION + 1 };
    let caught: unknown;
    try {
      registerBackend(newer);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(BackendApiVersionError);
    const message = (caught as Error).message;
    expect(message).toContain(`version ${KERNEL_API_VERSION + 1}`);
    expect(message).toContain(`version ${KERNEL_API_VERSION}`);
    expect((caught as BackendApiVersionError).hint).toMatch(/@kiln\/core/);
    const older = { ...fakePlugin('rocm', 10), apiVersion: 0 };
    expect(() => registerBackend(older)).toThrow(/Upgrade the 'rocm' backend package/);
    expect(getBackendPlugin('rocm')).toBeUndefined();
  });

  it('replaces a plugin registered under the same name; the same object is a no-op', () => {
    const first = fakePlugin('cpu', 100);
    registerBackend(first);
    registerBackend(first);
    expect(listBackends()).toEqual([first]);
    const second = fakePlugin('cpu', 150);
    registerBackend(second);
    expect(listBackends()).toEqual([second]);
    expect(unregisterBackend('cpu')).toBe(true);
    expect(unregisterBackend('cpu')).toBe(false);
  });

  it('reports a throwing probe as unavailable with its message', async () => {
    registerBackend(fakePlugin('cuda', 300, { probeThrows: 'driver exploded' }));
    registerBackend({ ...fakePlugin('metal', 200), probe: () => 'yes' as never });
    registerBackend(fakePlugin('cpu', 100));
    const probes = await probeBackends();
    expect(probes.map((entry) => [entry.plugin.name, entry.probe.available])).toEqual([
      ['cuda', false],
      ['metal', false],
      ['cpu', true],
    ]);
    expect(probes[0].probe.reason).toContain('driver exploded');
    expect(probes[1].probe.reason).toMatch(/returned no/);
  });

  it('shares its state between two copies of the module', async () => {
    const url = '../src/backend/registry.ts?copy=2';
    const copy = (await import(/* @vite-ignore */ url)) as typeof import('../src/backend/registry.js');
    expect(copy.registerBackend).not.toBe(registerBackend);
    const plugin = fakePlugin('shared', 5);
    copy.registerBackend(plugin);
    expect(getBackendPlugin('shared')).toBe(plugin);
    unregisterBackend('shared');
    expect(copy.listBackends()).toEqual([]);
    expect((globalThis as Record<symbol, unknown>)[Symbol.for('kiln.backend-registry')]).toBeInstanceOf(Map);
  });
});

describe('resolveBackend', () => {
  const resolve = (options: Parameters<typeof resolveBackend>[0] = {}) =>
    resolveBackend({ discover: false, env: {}, ...options });

  it('picks the highest-priority available backend and explains every step', async () => {
    registerBackend(fakePlugin('cpu', 100));
    registerBackend(fakePlugin('cuda', 300, { available: false, reason: 'No NVIDIA driver was found.' }));
    registerBackend(fakePlugin('metal', 200));
    const resolution = await resolve();
    expect(resolution.plugin.name).toBe('metal');
    expect(resolution.source).toBe('auto');
    expect(resolution.device?.id).toBe('metal:0');
    expect(resolution.warnings).toEqual([]);
    expect(resolution.steps.map((step) => [step.name, step.available, step.chosen])).toEqual([
      ['cuda', false, false],
      ['metal', true, true],
      ['cpu', true, false],
    ]);
    expect(resolution.steps[0].reason).toContain('No NVIDIA driver was found.');
    expect(resolution.steps[1].reason).toMatch(/highest-priority available/);
    expect(resolution.steps[2].reason).toMatch(/not used.*'metal'/);
  });

  it('moves on when create() throws during automatic resolution', async () => {
    registerBackend(fakePlugin('cuda', 300, { createThrows: 'cuInit failed' }));
    registerBackend(fakePlugin('cpu', 100));
    const resolution = await resolve();
    expect(resolution.plugin.name).toBe('cpu');
    expect(resolution.steps[0]).toMatchObject({ name: 'cuda', available: true, chosen: false });
    expect(resolution.steps[0].reason).toContain('create() failed: cuInit failed');
  });

  it('honours KILN_DEVICE, and the device argument over it', async () => {
    registerBackend(fakePlugin('cuda', 300));
    registerBackend(fakePlugin('cpu', 100));
    const fromEnv = await resolve({ env: { KILN_DEVICE: 'cpu' } });
    expect([fromEnv.plugin.name, fromEnv.source]).toEqual(['cpu', 'KILN_DEVICE']);
    expect(fromEnv.steps.find((step) => step.name === 'cuda')?.reason).toMatch(
      /not probed: 'cpu' was requested by KILN_DEVICE/,
    );
    const fromArgument = await resolve({ device: 'cuda', env: { KILN_DEVICE: 'cpu' } });
    expect([fromArgument.plugin.name, fromArgument.source]).toEqual(['cuda', 'argument']);
    const autoArgument = await resolve({ device: 'auto', env: { KILN_DEVICE: 'CPU' } });
    expect([autoArgument.plugin.name, autoArgument.source]).toEqual(['cpu', 'KILN_DEVICE']);
    const autoEverywhere = await resolve({ device: 'auto', env: { KILN_DEVICE: 'auto' } });
    expect([autoEverywhere.plugin.name, autoEverywhere.source]).toEqual(['cuda', 'auto']);
  });

  it('passes the device index to create()', async () => {
    const cuda = fakePlugin('cuda', 300, { devices: 2 });
    registerBackend(cuda);
    const resolution = await resolve({ device: 'cuda:1' });
    expect(cuda.created).toEqual([{ deviceIndex: 1 }]);
    expect(resolution.device?.id).toBe('cuda:1');
    const error = await errorOf(resolve({ device: 'cuda:5' }));
    expect(error.message).toMatch(/device index 5 does not exist \(2 devices found: cuda:0, cuda:1\)/);
  });

  it('rejects a malformed device id, naming where it came from', async () => {
    registerBackend(fakePlugin('cpu', 100));
    await expect(resolve({ device: 'cuda:x' })).rejects.toThrow(InvalidArgumentError);
    await expect(resolve({ env: { KILN_DEVICE: 'gpu 0' } })).rejects.toThrow(/from KILN_DEVICE/);
    expect(parseDeviceId(' Metal:2 ')).toEqual({ name: 'metal', index: 2 });
  });

  it('throws when an explicitly requested backend is unavailable, listing every attempt', async () => {
    registerBackend(fakePlugin('cuda', 300, { available: false, reason: 'The CUDA addon is not built.' }));
    registerBackend(fakePlugin('metal', 200, { probeThrows: 'not macOS' }));
    registerBackend(fakePlugin('cpu', 100));
    const error = await errorOf(resolve({ device: 'cuda' }));
    expect(error.message).toMatch(/Backend 'cuda' requested by the device argument/);
    expect(error.attempts.map((attempt) => attempt.name)).toEqual(['cuda', 'metal', 'cpu']);
    expect(error.message).toContain('The CUDA addon is not built.');
    // The other backends are not probed for an explicit request.
    expect(error.message).toMatch(/metal: not probed: 'cuda' was requested by the device argument/);
    expect(error.message).toMatch(/cpu: not probed/);
    expect(error.hint).toBe(
      'Fix the reason above, or choose another device (installed: cuda, metal, cpu). Or resolve with fallback: true to use the best available backend instead.',
    );
    const named = await errorOf(
      resolve({ device: 'cuda', requestedBy: '--device', fallbackAdvice: 'pass --allow-device-fallback' }),
    );
    expect(named.message).toMatch(/^Backend 'cuda' requested by --device \("cuda"\) cannot be used/);
    expect(named.hint).toMatch(/Or pass --allow-device-fallback to use the best available backend instead\.$/);
    const noFallback = await errorOf(resolve({ device: 'cuda', fallbackAdvice: false }));
    expect(noFallback.hint).not.toMatch(/fallback/);
  });

  it('refuses a plugin whose created backend carries another name (a renamed template), with a typed error', async () => {
    const renamed = fakePlugin('example', 50);
    const plugin = { ...renamed, name: 'mydev', create: renamed.create };
    registerBackend(plugin);
    registerBackend(fakePlugin('cpu', 100));
    await expect(createBackend(plugin)).rejects.toThrow(BackendContractError);
    const error = await resolve({ device: 'mydev:0' }).then(
      () => undefined,
      (caught: unknown) => caught as BackendContractError,
    );
    expect(error).toBeInstanceOf(BackendContractError);
    expect(error?.code).toBe('BACKEND_CONTRACT');
    expect(error?.message.split('\n')[0]).toBe(
      `Backend 'mydev': create() returned a backend named "example", not 'mydev'`,
    );
    expect(error?.hint).toMatch(/set the backend's `name` to 'mydev'/);
    // Automatic resolution passes over it with the reason, and uses another backend.
    unregisterBackend('cpu');
    registerBackend(fakePlugin('cpu', 100));
    registerBackend({ ...plugin, priority: 500 });
    const automatic = await resolve();
    expect(automatic.plugin.name).toBe('cpu');
    expect(automatic.steps.find((step) => step.name === 'mydev')?.reason).toMatch(
      /create\(\) failed: Backend 'mydev': create\(\) returned a backend named "example"/,
    );
    await expect(createBackend(fakePlugin('cpu', 100))).resolves.toMatchObject({ name: 'cpu' });
  });

  it('fails an explicit request whose create() throws', async () => {
    registerBackend(fakePlugin('cuda', 300, { createThrows: 'out of device memory' }));
    registerBackend(fakePlugin('cpu', 100));
    const error = await errorOf(resolve({ env: { KILN_DEVICE: 'cuda' } }));
    expect(error.message).toMatch(/requested by KILN_DEVICE/);
    expect(error.message).toContain('create() failed: out of device memory');
  });

  it('falls back with a warning when fallback is allowed', async () => {
    registerBackend(fakePlugin('cuda', 300, { available: false, reason: 'No GPU.' }));
    registerBackend(fakePlugin('metal', 200, { available: false, reason: 'Not a Mac.' }));
    registerBackend(fakePlugin('cpu', 100));
    const resolution = await resolve({ device: 'cuda', fallback: true });
    expect(resolution.plugin.name).toBe('cpu');
    expect(resolution.source).toBe('argument');
    expect(resolution.warnings).toHaveLength(1);
    expect(resolution.warnings[0]).toMatch(/'cuda'.*No GPU\..*using 'cpu' instead/);
    expect(resolution.steps.map((step) => [step.name, step.chosen])).toEqual([
      ['cuda', false],
      ['metal', false],
      ['cpu', true],
    ]);
  });

  it('names an unknown backend, the registered ones, and what to install', async () => {
    registerBackend(fakePlugin('cuda', 300, { available: false, reason: 'No GPU.' }));
    registerBackend(fakePlugin('cpu', 100));
    const error = await errorOf(resolve({ device: 'rocm' }));
    expect(error.message).toMatch(/^Backend 'rocm' requested by the device argument \("rocm"\) is not installed$/m);
    expect(error.hint).toMatch(
      /^Choose one of: cuda, metal, cpu \(installed: cuda, cpu\)\. If 'rocm' is a plugin, install kiln-backend-rocm /,
    );
    expect(error.hint).not.toContain('@kiln/backend-rocm');
    expect(error.attempts[0]).toEqual({ name: 'rocm', reason: expect.stringMatching(/no registered backend/) });
    const fallback = await resolve({ device: 'rocm', fallback: true });
    expect(fallback.plugin.name).toBe('cpu');
    expect(fallback.warnings[0]).toMatch(/rocm/);
  });

  it('answers a generic or misspelt device name with the right name, not a package to install', async () => {
    registerBackend(fakePlugin('cuda', 300, { available: false, reason: 'No GPU.' }));
    registerBackend(fakePlugin('cpu', 100));
    const generic = await errorOf(resolve({ device: 'gpu' }));
    expect(generic.hint).toBe(
      "Choose one of: cuda, metal, cpu (installed: cuda, cpu). 'gpu' is not a backend name: use 'cuda' for an NVIDIA GPU, 'metal' for an Apple GPU. Or resolve with fallback: true to use the best available backend instead.",
    );
    const typo = await errorOf(resolve({ device: 'cdua', fallbackAdvice: false }));
    expect(typo.hint).toBe("Choose one of: cuda, metal, cpu (installed: cuda, cpu). Did you mean 'cuda'?");
  });

  it('explains when nothing is installed or nothing is available', async () => {
    await expect(resolve()).rejects.toThrow(/No kiln backend is installed[\s\S]*@kiln\/backend-cpu/);
    registerBackend(fakePlugin('cpu', 100, { probeThrows: 'broken' }));
    const error = await errorOf(resolve());
    expect(error.message).toMatch(/No kiln backend is available[\s\S]*cpu: unavailable: its probe\(\) threw: broken/);
    const fallbackError = await errorOf(resolve({ device: 'cuda', fallback: true }));
    expect(fallbackError.message).toMatch(/no other backend is available/);
  });
});

describe('probe timeout', () => {
  /** A plugin whose probe() never settles; counts its calls. */
  function hangingPlugin(name: string, priority: number): FakePlugin & { probes: number } {
    const plugin = { ...fakePlugin(name, priority), probes: 0 };
    plugin.probe = () => {
      plugin.probes += 1;
      return new Promise<ProbeResult>(() => {});
    };
    return plugin;
  }

  it('reports a probe that does not settle in time as unavailable, with the reason and the setting to change', async () => {
    const plugin = hangingPlugin('stuck', 10);
    const started = Date.now();
    const result = await probeBackend(plugin, { timeoutMs: 50 });
    expect(Date.now() - started).toBeLessThan(2000);
    expect(result).toEqual({
      available: false,
      reason: expect.stringMatching(/probe\(\) did not answer within 50 ms.*'stuck'.*KILN_PROBE_TIMEOUT_MS/),
      devices: [],
    });
    // Still running: not started again, and the timeout is reported at once.
    const again = await probeBackend(plugin, { timeoutMs: 60_000 });
    expect(again.available).toBe(false);
    expect(plugin.probes).toBe(1);
  });

  it('probes afresh once a slow probe has settled', async () => {
    let release: (value: ProbeResult) => void = () => {};
    let calls = 0;
    const plugin: BackendPlugin = {
      ...fakePlugin('slow', 10),
      probe: () => {
        calls += 1;
        return calls === 1
          ? new Promise<ProbeResult>((resolve) => (release = resolve))
          : { available: true, devices: [] };
      },
    };
    expect((await probeBackend(plugin, { timeoutMs: 20 })).available).toBe(false);
    release({ available: true, devices: [] });
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect((await probeBackend(plugin, { timeoutMs: 20 })).available).toBe(true);
    expect(calls).toBe(2);
  });

  it('reads KILN_PROBE_TIMEOUT_MS, defaults to a few seconds, and rejects a bad value', async () => {
    expect(probeTimeoutMs({ env: {} })).toBe(DEFAULT_PROBE_TIMEOUT_MS);
    expect(DEFAULT_PROBE_TIMEOUT_MS).toBeGreaterThanOrEqual(2000);
    expect(DEFAULT_PROBE_TIMEOUT_MS).toBeLessThanOrEqual(10_000);
    expect(probeTimeoutMs({ env: { KILN_PROBE_TIMEOUT_MS: '250' } })).toBe(250);
    expect(probeTimeoutMs({ env: { KILN_PROBE_TIMEOUT_MS: '250' }, timeoutMs: 40 })).toBe(40);
    expect(() => probeTimeoutMs({ env: { KILN_PROBE_TIMEOUT_MS: 'soon' } })).toThrow(
      /KILN_PROBE_TIMEOUT_MS must be a number of milliseconds.*"soon"/,
    );
    expect(() => probeTimeoutMs({ timeoutMs: -1 })).toThrow(InvalidArgumentError);
    const result = await probeBackend(hangingPlugin('stuck', 10), { env: { KILN_PROBE_TIMEOUT_MS: '30' } });
    expect(result.reason).toMatch(/within 30 ms/);
  });

  it('resolves an explicitly requested backend without probing the others', async () => {
    const stuck = hangingPlugin('stuck', 500);
    registerBackend(stuck);
    registerBackend(fakePlugin('cpu', 100));
    const started = Date.now();
    const resolution = await resolveBackend({ discover: false, env: {}, device: 'cpu', probeTimeoutMs: 60_000 });
    expect(Date.now() - started).toBeLessThan(2000);
    expect(resolution.plugin.name).toBe('cpu');
    expect(stuck.probes).toBe(0);
    expect(resolution.steps.find((step) => step.name === 'stuck')?.reason).toMatch(/not probed/);
  });

  it('passes over a hung higher-priority backend during automatic resolution', async () => {
    registerBackend(hangingPlugin('stuck', 500));
    registerBackend(fakePlugin('cpu', 100));
    const resolution = await resolveBackend({ discover: false, env: { KILN_PROBE_TIMEOUT_MS: '40' } });
    expect(resolution.plugin.name).toBe('cpu');
    expect(resolution.steps[0]).toMatchObject({
      name: 'stuck',
      available: false,
      reason: expect.stringMatching(/did not answer within 40 ms/),
    });
  });
});

describe('discoverBackends', () => {
  let root: string;
  let report: DiscoveryReport;

  async function writePackage(directory: string, manifest: object, files: Record<string, string>): Promise<void> {
    await mkdir(directory, { recursive: true });
    await writeFile(join(directory, 'package.json'), JSON.stringify(manifest));
    for (const [name, content] of Object.entries(files)) {
      await mkdir(join(directory, name, '..'), { recursive: true });
      await writeFile(join(directory, name), content);
    }
  }

  const pluginSource = (name: string, apiVersion = KERNEL_API_VERSION) =>
    `{ name: '${name}', apiVersion: ${apiVersion}, priority: 7, probe() { return { available: true, devices: [] }; }, create() { return { name: '${name}', apiVersion: ${apiVersion} }; } }`;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'kiln-discovery-'));
    const modules = join(root, 'project', 'node_modules');
    await writePackage(
      join(modules, 'kiln-backend-fake'),
      {
        name: 'kiln-backend-fake',
        type: 'module',
        exports: { '.': { types: './index.d.ts', import: './dist/index.js', require: './dist/index.cjs' } },
      },
      {
        'dist/index.js': `export default ${pluginSource('fake')};`,
      },
    );
    await writePackage(
      join(modules, '@acme', 'kiln-backend-vk'),
      { name: '@acme/kiln-backend-vk', main: 'lib/main' },
      {
        'lib/main.js': `exports.plugin = ${pluginSource('vk')};`,
      },
    );
    await writePackage(
      join(modules, 'kiln-backend-broken'),
      { name: 'kiln-backend-broken', type: 'module', main: 'index.js' },
      {
        'index.js': "throw new Error('native addon missing');",
      },
    );
    await writePackage(
      join(modules, 'kiln-backend-empty'),
      { name: 'kiln-backend-empty', type: 'module', main: 'index.js' },
      {
        'index.js': 'export const hello = 1;',
      },
    );
    await writePackage(
      join(modules, 'kiln-backend-old'),
      { name: 'kiln-backend-old', type: 'module', exports: './index.js' },
      {
        'index.js': `export const plugin = ${pluginSource('old', 0)};`,
      },
    );
    await writeFile(join(modules, 'kiln-backend-stray.js'), "throw new Error('must not load');");
    await writePackage(
      join(modules, 'unrelated'),
      { name: 'unrelated', main: 'index.js' },
      { 'index.js': "throw new Error('must not load');" },
    );
    await writePackage(
      join(root, 'elsewhere', 'by-directory'),
      { name: 'by-directory', type: 'module', main: 'main.js' },
      {
        'main.js': `export default ${pluginSource('bydir')};`,
      },
    );
    await writeFile(join(root, 'elsewhere', 'by-file.mjs'), `export const plugin = ${pluginSource('byfile')};`);
    const KILN_BACKENDS = `${join(root, 'elsewhere', 'by-directory')}, ${join(root, 'elsewhere', 'by-file.mjs')},kiln-backend-missing,${join(root, 'nope')}`;
    report = await discoverBackends({ paths: [join(root, 'project', 'src')], env: { KILN_BACKENDS }, refresh: true });
  });

  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  const entry = (name: string) => report.find((item) => item.name === name);

  it('loads kiln-backend-* and @scope/kiln-backend-* packages (ESM and CJS, default and plugin exports)', () => {
    expect(entry('kiln-backend-fake')).toMatchObject({ loaded: true, backend: 'fake' });
    expect(entry('@acme/kiln-backend-vk')).toMatchObject({ loaded: true, backend: 'vk' });
  });

  it('records packages that fail to load, export no plugin, or target another API version', () => {
    expect(entry('kiln-backend-broken')).toMatchObject({
      loaded: false,
      reason: expect.stringContaining('native addon missing'),
    });
    expect(entry('kiln-backend-empty')).toMatchObject({
      loaded: false,
      reason: expect.stringContaining('exports: hello'),
    });
    expect(entry('kiln-backend-old')?.loaded).toBe(false);
    expect(entry('kiln-backend-old')?.reason).toMatch(/version 0.*version 1/);
    expect(entry('unrelated')).toBeUndefined();
    expect(entry('kiln-backend-stray.js')).toBeUndefined();
  });

  it('reports absent first-party packages as not installed', () => {
    expect(entry('@kiln/backend-cuda')).toEqual({ name: '@kiln/backend-cuda', loaded: false, reason: 'not installed' });
  });

  it('loads the names and paths listed in KILN_BACKENDS', () => {
    expect(entry(join(root, 'elsewhere', 'by-directory'))).toMatchObject({ loaded: true, backend: 'bydir' });
    expect(entry(join(root, 'elsewhere', 'by-file.mjs'))).toMatchObject({ loaded: true, backend: 'byfile' });
    expect(entry('kiln-backend-missing')?.reason).toMatch(/not found in any node_modules/);
    expect(entry(join(root, 'nope'))?.reason).toMatch(/does not exist/);
  });

  it('registers what it loaded, memoizes, and searches again on refresh', async () => {
    // beforeEach cleared the registry; a memoized run does not register again.
    expect(await discoverBackends()).toBe(report);
    expect(getBackendPlugin('fake')).toBeUndefined();
    const again = await discoverBackends({ paths: [join(root, 'project')], refresh: true, env: {} });
    expect(again).not.toBe(report);
    expect(
      listBackends()
        .map((plugin) => plugin.name)
        .sort(),
    ).toEqual(['fake', 'vk']);
    const resolution = await resolveBackend({ env: {}, device: 'vk' });
    expect(resolution.plugin.name).toBe('vk');
  });
  it('says why a requested backend whose package was rejected for its API version cannot be used (not "not installed")', async () => {
    await discoverBackends({ paths: [join(root, 'project')], refresh: true, env: {} });
    expect(entry('kiln-backend-old')).toBeDefined();
    const error = await resolveBackend({ env: {}, device: 'old' }).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(BackendApiVersionError);
    const message = (error as Error).message;
    expect(message).toMatch(
      /Backend 'old' requested by the device argument \("old"\) is installed but cannot be used: kiln-backend-old \(.*\) was built against KernelBackend API version 0, but this @kiln\/core implements version 1/,
    );
    expect(message).not.toMatch(/not installed/);
    expect((error as BackendApiVersionError).hint).toMatch(
      /Upgrade kiln-backend-old to a release built for KernelBackend API version 1/,
    );
    const fromEnvironment = await resolveBackend({ env: { KILN_DEVICE: 'broken' } }).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect((fromEnvironment as Error).message).toMatch(
      /Backend 'broken' requested by KILN_DEVICE .* is installed but could not be loaded[\s\S]*native addon missing/,
    );
  });
});
