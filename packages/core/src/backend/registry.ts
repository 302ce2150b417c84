/**
 * The backend registry: every BackendPlugin kiln knows, by name. It lives on globalThis under
 * Symbol.for('kiln.backend-registry') so two installed copies of @kiln/core (a plugin's and the
 * app's) see the same plugins. Registration checks the plugin's shape and interface version.
 */
import { BackendApiVersionError, InvalidArgumentError } from '../errors.js';
import { KERNEL_API_VERSION, type BackendPlugin, type ProbeResult } from './kernel-backend.js';

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
    throw new InvalidArgumentError(`registerBackend expects a BackendPlugin object, got ${plugin === null ? 'null' : typeof plugin}`, {
      hint: 'Pass the object your backend package exports as `default` or `plugin`.',
    });
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
      { hint: newer ? 'Upgrade @kiln/core to a release that implements the plugin\'s version.' : `Upgrade the '${name}' backend package to a release built for @kiln/core's version.` },
    );
  }
  if (typeof plugin.priority !== 'number' || !Number.isFinite(plugin.priority)) {
    throw new InvalidArgumentError(`Backend '${name}' has priority ${JSON.stringify(plugin.priority)}, not a finite number`, {
      hint: 'Set priority to a number (cuda 300, metal 200, cpu 100; higher wins).',
    });
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
  return [...registry().values()].sort((a, b) => b.priority - a.priority || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** Probe one plugin without ever throwing: a throwing or malformed probe becomes an unavailable result. */
export async function probeBackend(plugin: BackendPlugin): Promise<ProbeResult> {
  let result: unknown;
  try {
    result = await plugin.probe();
  } catch (error) {
    return { available: false, reason: `its probe() threw: ${error instanceof Error ? error.message : String(error)}`, devices: [] };
  }
  if (typeof result !== 'object' || result === null || typeof (result as ProbeResult).available !== 'boolean') {
    return { available: false, reason: 'its probe() returned no { available, devices } result (a bug in the backend package)', devices: [] };
  }
  const probe = result as ProbeResult;
  return {
    available: probe.available,
    ...(typeof probe.reason === 'string' ? { reason: probe.reason } : {}),
    devices: Array.isArray(probe.devices) ? probe.devices : [],
  };
}

/** Probe every registered plugin (concurrently), in priority order. Never throws. */
export async function probeBackends(): Promise<ProbedBackend[]> {
  const plugins = listBackends();
  const probes = await Promise.all(plugins.map((plugin) => probeBackend(plugin)));
  return plugins.map((plugin, index) => ({ plugin, probe: probes[index] }));
}
