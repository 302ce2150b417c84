/**
 * Backend resolution: the explicit `device` argument, else KILN_DEVICE, else the highest-priority
 * available backend. Every backend considered gets a step with a reason sentence, so `kiln info`
 * can print why one was chosen and the others were not. An explicit request probes only the
 * requested backend (another plugin's slow or hung probe never delays it); one that cannot be
 * met is an error saying why — unless fallback is allowed, then it is a warning. Every probe is
 * bounded by a timeout (KILN_PROBE_TIMEOUT_MS, default 5 s).
 */
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { formatCount } from '../format-count.js';
import {
  BackendApiVersionError,
  BackendUnavailableError,
  InvalidArgumentError,
  KilnError,
  type BackendAttempt,
} from '../errors.js';
import { discoverBackends, FIRST_PARTY_BACKENDS, type DiscoveredPackage, type DiscoveryReport } from './discovery.js';
import { KERNEL_API_VERSION, type BackendPlugin, type DeviceInfo, type KernelBackend } from './kernel-backend.js';
import {
  createBackend,
  getBackendPlugin,
  listBackends,
  probeBackend,
  probeBackends,
  type ProbedBackend,
  type ProbeOptions,
} from './registry.js';

/** Where the resolved choice came from. */
export type BackendSource = 'argument' | 'KILN_DEVICE' | 'auto';

/** One backend considered during resolution. */
export interface ResolutionStep {
  /** Backend name. */
  name: string;
  /** What its probe said. */
  available: boolean;
  /** Why it was chosen or not, as a sentence. */
  reason: string;
  /** True for the backend resolution returned. */
  chosen: boolean;
}

/** The outcome of resolveBackend, with its reasoning. */
export interface BackendResolution {
  /** The created backend instance. */
  backend: KernelBackend;
  /** The plugin that created it. */
  plugin: BackendPlugin;
  /** The device it drives, when known. */
  device: DeviceInfo | undefined;
  /** What decided the choice. */
  source: BackendSource;
  /** Every registered backend (and an unknown requested one), with the reason it was or was not chosen. */
  steps: ResolutionStep[];
  /** Warnings to show the user (e.g. an explicit request that fell back). */
  warnings: string[];
}

/** Options of resolveBackend. */
export interface ResolveBackendOptions {
  /** 'auto' (default), a backend name ('cuda') or name:index ('cuda:1'). Overrides KILN_DEVICE unless 'auto'. */
  device?: string;
  /** When an explicitly requested backend cannot be used, resolve automatically and warn instead of throwing. Default false. */
  fallback?: boolean;
  /** Environment to read KILN_DEVICE and KILN_BACKENDS from (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** Run discoverBackends first (memoized). Default true. */
  discover?: boolean;
  /** Milliseconds each probe() may take (default: KILN_PROBE_TIMEOUT_MS, else 5000); a slower probe counts as unavailable. */
  probeTimeoutMs?: number;
  /** Where `device` came from, named in errors and warnings ('--device', 'the config file kiln.yaml'). Default 'the device argument'. */
  requestedBy?: string;
  /** How the user allows fallback, offered in errors ('pass --allow-device-fallback'); false: not offered. Default: 'resolve with fallback: true'. */
  fallbackAdvice?: string | false;
}

/** A parsed device id: backend name and optional device index. */
export interface DeviceRequest {
  /** Backend name, lower-case. */
  name: string;
  /** Device index after ':', when given. */
  index: number | undefined;
}

const DEVICE_PATTERN = /^([a-z][a-z0-9_-]*)(?::(\d+))?$/;

/** Parse 'cuda', 'cuda:1' or 'CPU' into { name, index }; throws InvalidArgumentError on anything else. */
export function parseDeviceId(device: string): DeviceRequest {
  const match = DEVICE_PATTERN.exec(device.trim().toLowerCase());
  if (match === null) {
    throw new InvalidArgumentError(`Device ${JSON.stringify(device)} is not a device id`, {
      hint: "Use 'auto', a backend name such as 'cuda', 'metal' or 'cpu', or name:index such as 'cuda:1'.",
    });
  }
  return { name: match[1], index: match[2] === undefined ? undefined : Number(match[2]) };
}

/** Pick, create and explain the backend to use (see ResolveBackendOptions for the order). */
export async function resolveBackend(options: ResolveBackendOptions = {}): Promise<BackendResolution> {
  const env = options.env ?? process.env;
  if (options.device !== undefined && typeof options.device !== 'string') {
    throw new InvalidArgumentError(`resolveBackend: device must be a string, got ${typeof options.device}`, {
      hint: "Pass 'auto', 'cuda', 'cuda:1', 'metal', 'cpu' or a plugin's name.",
    });
  }
  const discovery = options.discover !== false ? await discoverBackends({ env }) : [];
  const request = pickRequest(options.device, env, options.requestedBy ?? 'the device argument');
  const probeOptions: ProbeOptions = { timeoutMs: options.probeTimeoutMs, env };
  const steps = new Map<string, ResolutionStep>();
  const warnings: string[] = [];

  if (request.source !== 'auto') {
    const label = request.source === 'argument' ? (options.requestedBy ?? 'the device argument') : 'KILN_DEVICE';
    const requested = `${label} (${JSON.stringify(request.text)})`;
    // Only the requested plugin is probed: another plugin's slow or hung probe never delays an explicit choice.
    const plugin = getBackendPlugin(request.name);
    const entry = plugin === undefined ? undefined : { plugin, probe: await probeBackend(plugin, probeOptions) };
    const notProbed = `not probed: '${request.name}' was requested by ${label}`;
    if (entry === undefined) {
      const rejected = rejectedPackage(discovery, request.name);
      const reason =
        rejected === undefined
          ? `not installed: no registered backend is called '${request.name}'`
          : `installed (${rejected.name}${rejected.path === undefined ? '' : ` at ${rejected.path}`}) but not loaded: ${firstLine(rejected.reason)}`;
      steps.set(request.name, { name: request.name, available: false, reason, chosen: false });
      if (rejected !== undefined && options.fallback !== true) {
        fillNotProbed(steps, notProbed);
        throw rejectedFailure(request.name, requested, rejected, attemptsOf(steps));
      }
    } else {
      const outcome = await attempt(entry, request.index, true);
      if ('backend' in outcome) {
        steps.set(entry.plugin.name, {
          name: entry.plugin.name,
          available: true,
          reason: `chosen: requested by ${requested}`,
          chosen: true,
        });
        fillNotProbed(steps, notProbed);
        return { ...outcome, plugin: entry.plugin, source: request.source, steps: [...steps.values()], warnings };
      }
      steps.set(entry.plugin.name, {
        name: entry.plugin.name,
        available: entry.probe.available,
        reason: outcome.reason,
        chosen: false,
      });
    }
    const failed = steps.get(request.name) as ResolutionStep;
    if (options.fallback !== true) {
      fillNotProbed(steps, notProbed);
      const advice = options.fallbackAdvice ?? 'resolve with fallback: true';
      throw explicitFailure(request.name, requested, entry === undefined, steps, {
        searched: searchNote(options.discover !== false, env),
        fallbackAdvice: advice === false ? undefined : advice,
      });
    }
    const probed = await probeBackends(probeOptions);
    const result = await resolveAutomatically(
      probed.filter((candidate) => candidate.plugin !== entry?.plugin),
      steps,
      `after '${request.name}' failed (fallback allowed)`,
    );
    if (result === undefined) {
      throw new BackendUnavailableError(
        `Backend '${request.name}' requested by ${requested} cannot be used, and no other backend is available to fall back to`,
        attemptsOf(steps),
        {
          hint: 'Install @kiln/backend-cpu (runs everywhere) or fix one of the reasons above.',
        },
      );
    }
    warnings.push(
      `${requested} asked for '${request.name}', which cannot be used (${failed.reason}); using '${result.plugin.name}' instead because fallback is allowed.`,
    );
    return { ...result, source: request.source, steps: [...steps.values()], warnings };
  }

  const probed = await probeBackends(probeOptions);
  const result = await resolveAutomatically(probed, steps, '');
  if (result === undefined) {
    const none = probed.length === 0;
    throw new BackendUnavailableError(
      none ? 'No kiln backend is installed' : 'No kiln backend is available',
      attemptsOf(steps),
      {
        hint: none
          ? 'Install @kiln/backend-cpu (runs everywhere) or a backend for your accelerator (@kiln/backend-cuda, @kiln/backend-metal, kiln-backend-<name>).'
          : 'Fix one of the reasons above, or install @kiln/backend-cpu (runs everywhere).',
      },
    );
  }
  return { ...result, source: 'auto', steps: [...steps.values()], warnings };
}

type Attempt = { backend: KernelBackend; device: DeviceInfo | undefined } | { reason: string };

/** Try each available plugin in priority order; record a step for each. */
async function resolveAutomatically(
  probed: ProbedBackend[],
  steps: Map<string, ResolutionStep>,
  context: string,
): Promise<{ backend: KernelBackend; device: DeviceInfo | undefined; plugin: BackendPlugin } | undefined> {
  for (const entry of probed) {
    const name = entry.plugin.name;
    const outcome = await attempt(entry, undefined);
    if ('backend' in outcome) {
      const why = `chosen: highest-priority available backend (priority ${entry.plugin.priority})${context ? ` ${context}` : ''}`;
      steps.set(name, { name, available: true, reason: why, chosen: true });
      fillSkipped(steps, probed, `'${name}' has a higher priority`);
      return { ...outcome, plugin: entry.plugin };
    }
    steps.set(name, { name, available: entry.probe.available, reason: outcome.reason, chosen: false });
  }
  return undefined;
}

/** Create the backend if the probe allows it; any failure becomes a reason. */
async function attempt(entry: ProbedBackend, index: number | undefined, explicit = false): Promise<Attempt> {
  const { plugin, probe } = entry;
  if (!probe.available) return { reason: `unavailable: ${probe.reason ?? 'its probe gave no reason'}` };
  if (index !== undefined && probe.devices.length > 0 && index >= probe.devices.length) {
    const ids = probe.devices.map((device) => device.id).join(', ');
    return {
      reason: `device index ${index} does not exist (${formatCount(probe.devices.length, 'device')} found: ${ids})`,
    };
  }
  let backend: KernelBackend;
  try {
    backend = await createBackend(plugin, { deviceIndex: index ?? 0 });
  } catch (error) {
    // A plugin that breaks the contract is a bug to report, not an unavailable device: an explicit request says so as is.
    if (explicit && KilnError.isInstance(error) && error.code === 'BACKEND_CONTRACT') throw error;
    return { reason: `create() failed: ${error instanceof Error ? error.message : String(error)}` };
  }
  return { backend, device: backend.capabilities?.device ?? probe.devices[index ?? 0] };
}

/** Give every plugin without a step one that says why it was not used. */
function fillSkipped(steps: Map<string, ResolutionStep>, probed: ProbedBackend[], because: string): void {
  for (const { plugin, probe } of probed) {
    if (steps.has(plugin.name)) continue;
    const reason = probe.available
      ? `available, not used: ${because}`
      : `unavailable: ${probe.reason ?? 'its probe gave no reason'}`;
    steps.set(plugin.name, { name: plugin.name, available: probe.available, reason, chosen: false });
  }
}

/** A step for every registered plugin that was not considered, saying why it was not probed. */
function fillNotProbed(steps: Map<string, ResolutionStep>, reason: string): void {
  for (const plugin of listBackends()) {
    if (!steps.has(plugin.name)) steps.set(plugin.name, { name: plugin.name, available: false, reason, chosen: false });
  }
}

/** The discovered package that would have provided backend `name` but was not loaded (rejected or failed to import). */
function rejectedPackage(discovery: DiscoveryReport, name: string): DiscoveredPackage | undefined {
  const packageNames = new Set([`kiln-backend-${name}`, `@kiln/backend-${name}`]);
  return discovery.find(
    (entry) =>
      !entry.loaded &&
      entry.path !== undefined &&
      (entry.backend === name || packageNames.has(entry.name) || entry.name.endsWith(`/kiln-backend-${name}`)),
  );
}

/** The error for an explicit request whose package is installed but was rejected or failed to load. */
function rejectedFailure(
  name: string,
  requested: string,
  rejected: DiscoveredPackage,
  attempts: BackendAttempt[],
): KilnError {
  const where = `${rejected.name}${rejected.path === undefined ? '' : ` (${rejected.path})`}`;
  if (rejected.apiVersion !== undefined) {
    const newer = rejected.apiVersion > KERNEL_API_VERSION;
    const hint = newer
      ? `Upgrade @kiln/core (and @kiln/cli, @kiln/trainer) to a release that implements KernelBackend API version ${rejected.apiVersion}, or install a release of ${rejected.name} built for version ${KERNEL_API_VERSION}.`
      : `Upgrade ${rejected.name} to a release built for KernelBackend API version ${KERNEL_API_VERSION} (the one this @kiln/core implements), or use an older @kiln/core that implements version ${rejected.apiVersion}.`;
    return new BackendApiVersionError(
      `Backend '${name}' requested by ${requested} is installed but cannot be used: ${where} was built against KernelBackend API version ${rejected.apiVersion}, but this @kiln/core implements version ${KERNEL_API_VERSION}` +
        attempts.map((entry) => `\n  - ${entry.name}: ${entry.reason}`).join(''),
      { hint },
    );
  }
  return new BackendUnavailableError(
    `Backend '${name}' requested by ${requested} is installed but could not be loaded`,
    attempts,
    {
      hint: `Fix the reason above (reinstall or rebuild ${rejected.name}: \`npm rebuild ${rejected.name}\`), or choose another device.`,
    },
  );
}

function firstLine(text: string | undefined): string {
  return (text ?? 'no reason given').split('\n')[0];
}

function explicitFailure(
  name: string,
  requested: string,
  unknown: boolean,
  steps: Map<string, ResolutionStep>,
  advice: { searched: string; fallbackAdvice: string | undefined },
): BackendUnavailableError {
  const registered = listBackends().map((plugin) => plugin.name);
  const fallback =
    advice.fallbackAdvice === undefined
      ? ''
      : ` Or ${advice.fallbackAdvice} to use the best available backend instead.`;
  if (!unknown) {
    const hint = `Fix the reason above, or choose another device (installed: ${registered.join(', ') || 'none'}).${fallback}`;
    return new BackendUnavailableError(
      `Backend '${name}' requested by ${requested} cannot be used`,
      attemptsOf(steps),
      { hint },
    );
  }
  const message = `Backend '${name}' requested by ${requested} is not installed`;
  return new BackendUnavailableError(message, attemptsOf(steps), {
    hint: `${chooseOneOf(registered)} ${unknownNameAdvice(name, advice.searched)}${fallback}`,
  });
}

/** Every device name kiln knows, with the installed ones: the answer to "which names can I use?". */
function chooseOneOf(registered: string[]): string {
  const known = [
    ...new Set([
      ...FIRST_PARTY_BACKENDS.map((packageName) => packageName.replace('@kiln/backend-', '')),
      ...registered,
    ]),
  ];
  return `Choose one of: ${known.join(', ')} (installed: ${registered.join(', ') || 'none'}).`;
}

/** Generic words for an accelerator: never a plugin's name, always a first-party backend under another name. */
const DEVICE_ALIASES: Readonly<Record<string, string>> = {
  gpu: "'cuda' for an NVIDIA GPU, 'metal' for an Apple GPU",
  nvidia: "'cuda'",
  mps: "'metal'",
  apple: "'metal'",
  mac: "'metal'",
  cpu0: "'cpu'",
  wasm: "'cpu'",
};

/**
 * What to say about a name no backend has: a generic word or a near-miss of a first-party name
 * ('gpu', 'cdua') gets the right name; anything else could be a third-party plugin, so how to
 * install one is explained.
 */
function unknownNameAdvice(name: string, searched: string): string {
  const alias = DEVICE_ALIASES[name];
  if (alias !== undefined) return `'${name}' is not a backend name: use ${alias}.`;
  const firstParty = FIRST_PARTY_BACKENDS.map((packageName) => packageName.replace('@kiln/backend-', ''));
  if (firstParty.includes(name)) {
    const register =
      name === 'cpu'
        ? "import { cpuBackendPlugin } from '@kiln/backend-cpu'; registerBackend(cpuBackendPlugin)"
        : `import plugin from '@kiln/backend-${name}'; registerBackend(plugin)`;
    return (
      `Install @kiln/backend-${name} where discovery finds it (installed backends are found automatically; ${searched}), ` +
      `or register it yourself (needed when kiln is imported from a workspace path): ${register}.`
    );
  }
  const nearest = firstParty.find((candidate) => editDistance(candidate, name) <= (candidate.length >= 4 ? 2 : 1));
  if (nearest !== undefined) return `Did you mean '${nearest}'?`;
  return `If '${name}' is a plugin, install kiln-backend-${name} (installed backends are found automatically; ${searched}), list its path in KILN_BACKENDS, or pass its plugin to registerBackend().`;
}

/** Levenshtein distance between two short strings. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length];
}

/** Where discovery looked, in words (or that it was turned off). */
function searchNote(discovered: boolean, env: NodeJS.ProcessEnv): string {
  if (!discovered) return 'discovery was turned off (discover: false)';
  const own = coreDirectory();
  const listed = env.KILN_BACKENDS?.trim() ? ` and the entries of KILN_BACKENDS (${env.KILN_BACKENDS.trim()})` : '';
  return `discovery searched the node_modules directories above ${process.cwd()}${own === undefined ? '' : ` and above ${own}`}${listed}`;
}

/** Where this copy of @kiln/core is loaded from (discovery's second start directory). */
function coreDirectory(): string | undefined {
  if (typeof __dirname === 'string') return __dirname;
  try {
    return dirname(fileURLToPath(import.meta.url));
  } catch {
    return undefined;
  }
}

function attemptsOf(steps: Map<string, ResolutionStep>): BackendAttempt[] {
  return [...steps.values()].map((step) => ({ name: step.name, reason: step.reason }));
}

function pickRequest(
  device: string | undefined,
  env: NodeJS.ProcessEnv,
  requestedBy: string,
): DeviceRequest & { source: BackendSource; text: string } {
  const fromArgument = device?.trim();
  if (fromArgument && fromArgument.toLowerCase() !== 'auto')
    return { ...parseFrom(fromArgument, requestedBy), source: 'argument', text: fromArgument };
  const fromEnv = env.KILN_DEVICE?.trim();
  if (fromEnv && fromEnv.toLowerCase() !== 'auto')
    return { ...parseFrom(fromEnv, 'KILN_DEVICE'), source: 'KILN_DEVICE', text: fromEnv };
  return { name: '', index: undefined, source: 'auto', text: 'auto' };
}

function parseFrom(text: string, where: string): DeviceRequest {
  try {
    return parseDeviceId(text);
  } catch (error) {
    throw new InvalidArgumentError(`Device ${JSON.stringify(text)} from ${where} is not a device id`, {
      hint: (error as InvalidArgumentError).hint,
    });
  }
}
