/**
 * The backend registry: every BackendPlugin kiln knows, by name. It lives on globalThis under
 * Symbol.for('kiln.backend-registry') so two installed copies of @kiln/core (a plugin's and the
 * app's) see the same plugins. Registration checks the plugin's shape and interface version.
 */
import { BackendApiVersionError, BackendContractError, InvalidArgumentError } from '../errors.js';
import {
  KERNEL_API_VERSION,
  type BackendCreateOptions,
  type BackendPlugin,
  type KernelBackend,
  type ProbeResult,
} from './kernel-backend.js';

/** A plugin and the result of probing it. */
export interface ProbedBackend {
  /** The registered plugin. */
  plugin: BackendPlugin;
  /** Its probe result (a throwing probe is reported as unavailable with the thrown message). */
  probe: ProbeResult;
}

const REGISTRY_KEY = Symbol.for('kiln.backend-registry');
const NAME_PATTERN = /^[a-z][a-z0-9_-]*$/;

function registry(): Map<string, BackendPlugin> {
  const global = globalThis as Record<symbol, Map<string, BackendPlugin> | undefined>;
  global[REGISTRY_KEY] ??= new Map();
  return global[REGISTRY_KEY];
}

/** Register a plugin (validated; a plugin of another KERNEL_API_VERSION is rejected). The same name replaces the old plugin. */
export function registerBackend(plugin: BackendPlugin): void {
  if (typeof plugin !== 'object' || plugin === null) {
    throw new InvalidArgumentError(
      `registerBackend expects a BackendPlugin object, got ${plugin === null ? 'null' : typeof plugin}`,
      {
        hint: 'Pass the object your backend package exports as `default` or `plugin`.',
      },
    );
  }
  const { name } = plugin;
  if (typeof name !== 'string' || !NAME_PATTERN.test(name)) {
    throw new InvalidArgumentError(`Backend name ${JSON.stringify(name)} is not a lower-case identifier`, {
      hint: "Use letters a-z, digits, '-' or '_', starting with a letter (e.g. 'cuda', 'rocm').",
    });
  }
  if (plugin.apiVersion !== KERNEL_API_VERSION) {
    const newer = typeof plugin.apiVersion === 'number' && plugin.apiVersion > KERNEL_API_VERSION;
    throw new BackendApiVersionError(
      `Backend '${name}' was built against KernelBackend API version ${String(plugin.apiVersion)}, but this @kiln/core implements version ${KERNEL_API_VERSION}`,
      {
        hint: newer
          ? "Upgrade @kiln/core to a release that implements the plugin's version."
          : `Upgrade the '${name}' backend package to a release built for @kiln/core's version.`,
      },
    );
  }
  if (typeof plugin.priority !== 'number' || !Number.isFinite(plugin.priority)) {
    throw new InvalidArgumentError(
      `Backend '${name}' has priority ${JSON.stringify(plugin.priority)}, not a finite number`,
      {
        hint: 'Set priority to a number (cuda 300, metal 200, cpu 100; higher wins).',
      },
    );
  }
  for (const method of ['probe', 'create'] as const) {
    if (typeof plugin[method] !== 'function') {
      throw new InvalidArgumentError(`Backend '${name}' has no ${method}() function`, {
        hint: 'A BackendPlugin needs probe() (never throws) and create(options).',
      });
    }
  }
  registry().set(name, plugin);
}

/**
 * `plugin.create(options)`, checked: the result must be a backend of this KernelBackend API
 * version (BackendApiVersionError) whose `name` is the plugin's (BackendContractError: a plugin
 * renamed in one place but not the other would answer `--device mydev` with another backend's
 * devices).
 */
export async function createBackend(plugin: BackendPlugin, options?: BackendCreateOptions): Promise<KernelBackend> {
  const backend = await plugin.create(options);
  if (typeof backend !== 'object' || backend === null) {
    throw new BackendContractError(
      `Backend '${plugin.name}': create() returned no backend (${backend === null ? 'null' : typeof backend})`,
      {
        hint: `A bug in the '${plugin.name}' backend package: its plugin's create() must return a KernelBackend.`,
      },
    );
  }
  if (backend.apiVersion !== KERNEL_API_VERSION) {
    throw new BackendApiVersionError(
      `Backend '${plugin.name}': create() returned a backend for KernelBackend API version ${String(backend.apiVersion)}, but @kiln/core implements ${KERNEL_API_VERSION}`,
      {
        hint: `Install a release of the '${plugin.name}' backend package built for KernelBackend API version ${KERNEL_API_VERSION}.`,
      },
    );
  }
  if (backend.name !== plugin.name) {
    backend.dispose?.();
    throw new BackendContractError(
      `Backend '${plugin.name}': create() returned a backend named ${JSON.stringify(backend.name)}, not '${plugin.name}'`,
      {
        hint: `A plugin and the backends it creates must carry one name: set the backend's \`name\` to '${plugin.name}' (or rename the plugin), from one constant in the backend package.`,
      },
    );
  }
  return backend;
}

/** Remove a plugin by name; returns true when one was registered. */
export function unregisterBackend(name: string): boolean {
  return registry().delete(name);
}

/** The registered plugin called `name`, if any. */
export function getBackendPlugin(name: string): BackendPlugin | undefined {
  return registry().get(name);
}

/** Every registered plugin, highest priority first (ties by name). */
export function listBackends(): BackendPlugin[] {
  return [...registry().values()].sort(
    (a, b) => b.priority - a.priority || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
  );
}

/** Options of probeBackend and probeBackends. */
export interface ProbeOptions {
  /** Milliseconds a probe() may take before it counts as unavailable. Default: KILN_PROBE_TIMEOUT_MS, else DEFAULT_PROBE_TIMEOUT_MS. */
  timeoutMs?: number;
  /** Environment to read KILN_PROBE_TIMEOUT_MS from (default process.env). */
  env?: NodeJS.ProcessEnv;
}

/** How long a probe() may take by default (KILN_PROBE_TIMEOUT_MS overrides it). */
export const DEFAULT_PROBE_TIMEOUT_MS = 5000;

/** The probe timeout in effect: options.timeoutMs, else KILN_PROBE_TIMEOUT_MS, else the default. */
export function probeTimeoutMs(options: ProbeOptions = {}): number {
  if (options.timeoutMs !== undefined) {
    if (!(typeof options.timeoutMs === 'number' && options.timeoutMs > 0 && options.timeoutMs <= MAX_TIMEOUT_MS)) {
      throw new InvalidArgumentError(
        `probe timeout must be a number of milliseconds in (0, ${MAX_TIMEOUT_MS}], got ${String(options.timeoutMs)}`,
        {
          hint: `Pass timeoutMs such as ${DEFAULT_PROBE_TIMEOUT_MS}.`,
        },
      );
    }
    return options.timeoutMs;
  }
  const text = (options.env ?? process.env).KILN_PROBE_TIMEOUT_MS?.trim();
  if (text === undefined || text === '') return DEFAULT_PROBE_TIMEOUT_MS;
  const value = Number(text);
  if (!(Number.isFinite(value) && value > 0 && value <= MAX_TIMEOUT_MS)) {
    throw new InvalidArgumentError(
      `KILN_PROBE_TIMEOUT_MS must be a number of milliseconds in (0, ${MAX_TIMEOUT_MS}], got ${JSON.stringify(text)}`,
      {
        hint: `Unset it for the default (${DEFAULT_PROBE_TIMEOUT_MS} ms) or set e.g. KILN_PROBE_TIMEOUT_MS=15000 for a device that is slow to start.`,
      },
    );
  }
  return value;
}

// setTimeout's limit: larger values fire at once.
const MAX_TIMEOUT_MS = 2_147_483_647;

/** A probe still running, shared by every caller until it settles; `timedOut` once one caller gave up on it. */
interface RunningProbe {
  result: Promise<ProbeResult>;
  timedOut: boolean;
}

const RUNNING_KEY = Symbol.for('kiln.running-probes');

function runningProbes(): WeakMap<BackendPlugin, RunningProbe> {
  const global = globalThis as Record<symbol, WeakMap<BackendPlugin, RunningProbe> | undefined>;
  global[RUNNING_KEY] ??= new WeakMap();
  return global[RUNNING_KEY];
}

/**
 * Probe one plugin without waiting forever (throws only for an invalid timeout): a throwing or malformed probe, and
 * one that does not settle within the timeout, become an unavailable result with the reason. A
 * probe that timed out is not started again while it is still running (later calls report the
 * timeout at once); once it settles, the next call probes afresh. The timer lasts at most
 * the timeout.
 */
export async function probeBackend(plugin: BackendPlugin, options: ProbeOptions = {}): Promise<ProbeResult> {
  const timeoutMs = probeTimeoutMs(options);
  const running = runningProbes();
  let probe = running.get(plugin);
  if (probe === undefined) {
    const started: RunningProbe = { result: settledProbe(plugin), timedOut: false };
    running.set(plugin, started);
    void started.result.finally(() => {
      if (running.get(plugin) === started) running.delete(plugin);
    });
    probe = started;
  }
  if (probe.timedOut) return timedOutResult(plugin, timeoutMs);
  let timer: ReturnType<typeof setTimeout> | undefined;
  // A referenced timer: while kiln waits for a probe that holds nothing open, the timer keeps the
  // event loop alive (otherwise Node would exit mid-await); it is cleared as soon as the probe settles.
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(resolve, timeoutMs, undefined);
  });
  const result = await Promise.race([probe.result, timeout]);
  clearTimeout(timer);
  if (result !== undefined) return result;
  probe.timedOut = true;
  return timedOutResult(plugin, timeoutMs);
}

function timedOutResult(plugin: BackendPlugin, timeoutMs: number): ProbeResult {
  return {
    available: false,
    reason:
      `its probe() did not answer within ${timeoutMs} ms (a hung driver or device, or a bug in the '${plugin.name}' backend package); ` +
      'set KILN_PROBE_TIMEOUT_MS to wait longer for a device that is slow to start',
    devices: [],
  };
}

async function settledProbe(plugin: BackendPlugin): Promise<ProbeResult> {
  let result: unknown;
  try {
    result = await plugin.probe();
  } catch (error) {
    return {
      available: false,
      reason: `its probe() threw: ${error instanceof Error ? error.message : String(error)}`,
      devices: [],
    };
  }
  if (typeof result !== 'object' || result === null || typeof (result as ProbeResult).available !== 'boolean') {
    return {
      available: false,
      reason: 'its probe() returned no { available, devices } result (a bug in the backend package)',
      devices: [],
    };
  }
  const probe = result as ProbeResult;
  return {
    available: probe.available,
    ...(typeof probe.reason === 'string' ? { reason: probe.reason } : {}),
    devices: Array.isArray(probe.devices) ? probe.devices : [],
  };
}

/** Probe every registered plugin (concurrently, each bounded by the timeout), in priority order. Throws only for an invalid timeout. */
export async function probeBackends(options: ProbeOptions = {}): Promise<ProbedBackend[]> {
  const plugins = listBackends();
  const probes = await Promise.all(plugins.map((plugin) => probeBackend(plugin, options)));
  return plugins.map((plugin, index) => ({ plugin, probe: probes[index] }));
}
