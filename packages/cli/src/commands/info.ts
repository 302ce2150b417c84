/**
 * `kiln info [--json] [--device d]`: the platform, every discovered backend (available or not,
 * why, priority, devices), the one that would be chosen and why, and the chosen device's facts.
 */
import { freemem, totalmem } from 'node:os';
import type { Command } from 'commander';
import {
  DTYPES,
  KilnError,
  listBackends,
  parseDeviceId,
  probeBackend,
  type BackendAttempt,
  type BackendResolution,
  type DeviceInfo,
  type DiscoveryReport,
  type KernelBackend,
} from '@kiln/core';
import { discoverAllBackends, reportResolution, setUpBackend } from '../backend-setup.js';
import type { CliContext } from '../cli-context.js';
import { ExitCode } from '../exit-codes.js';
import { formatBytes } from '../output/format.js';

/** The stable `kiln info --json` document. */
export interface InfoReport {
  /** Where kiln runs. */
  platform: { os: string; arch: string; node: string };
  /** Name of the backend that would be chosen, or null when none can be. */
  selected: string | null;
  /** Every registered backend (highest priority first), then discovered packages that failed to load. */
  backends: Array<{
    name: string;
    available: boolean;
    reason: string | null;
    priority: number | null;
    devices: DeviceInfo[];
  }>;
}

interface InfoOptions {
  json?: boolean;
  device?: string;
}

/** Registers `kiln info`. */
export function defineInfoCommand(program: Command, context: CliContext): void {
  program
    .command('info')
    .description('show the platform, every backend kiln found, and the one it would use')
    .option('--json', 'print { platform, selected, backends } as JSON')
    .option('--device <device>', "resolve this device instead of the default ('cpu', 'cuda:1', …)")
    .action(async (options: InfoOptions) => {
      context.exitCode = await runInfo(options, context);
    });
}

/** A device request from --device or KILN_DEVICE that could not be met, as the report marks it. */
interface FailedRequest {
  /** Backend name the request named ('' when it is not a device id). */
  name: string;
  /** Why, prefixed with where the request came from. */
  reason: string;
}

async function runInfo(options: InfoOptions, context: CliContext): Promise<number> {
  const { terminal } = context;
  const discovery = await discoverAllBackends();
  let resolution: BackendResolution | undefined;
  let failure: unknown;
  try {
    resolution = await setUpBackend({ device: options.device }, terminal);
  } catch (error) {
    failure = error;
  }
  // The whole report is printed either way; a request that failed is marked in it, then is the command's error.
  const failedRequest = failure === undefined ? undefined : describeFailedRequest(options.device, failure);
  const report = await buildReport(discovery, resolution, failedRequest);
  if (options.json === true) {
    terminal.json(report);
  } else {
    printReport(report, discovery, resolution, context, failedRequest);
    if (failure !== undefined) {
      terminal.say('');
      terminal.say(
        `selected: none — ${failedRequest === undefined ? firstLine(failure) : 'the request marked ✗ above cannot be met (the error below says why)'}`,
      );
    }
  }
  if (failedRequest !== undefined) throw failure;
  return resolution === undefined ? ExitCode.failure : ExitCode.ok;
}

/** The explicit request (--device, else KILN_DEVICE) that failed, or undefined when none was made (automatic resolution failed). */
function describeFailedRequest(flag: string | undefined, failure: unknown): FailedRequest | undefined {
  const fromFlag = flag !== undefined && flag.trim() !== '' && flag.trim().toLowerCase() !== 'auto';
  const text = (fromFlag ? flag : (process.env.KILN_DEVICE ?? '')).trim();
  if (text === '' || text.toLowerCase() === 'auto') return undefined;
  const source = `requested by ${fromFlag ? '--device' : 'KILN_DEVICE'} (${JSON.stringify(text)})`;
  let name = '';
  try {
    name = parseDeviceId(text).name;
  } catch {
    return { name, reason: `${source}: ${firstLine(failure)}` };
  }
  const attempts = KilnError.isInstance(failure) ? (failure as { attempts?: BackendAttempt[] }).attempts : undefined;
  const own = attempts?.find((attempt) => attempt.name === name);
  return { name, reason: `${source}: ${own?.reason ?? firstLine(failure)}` };
}

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0];
}

async function buildReport(
  discovery: DiscoveryReport,
  resolution: BackendResolution | undefined,
  failedRequest: FailedRequest | undefined,
): Promise<InfoReport> {
  // A backend the resolution did not probe (an explicit --device skips the others) is reported as such, not probed now:
  // a plugin whose probe never settles must not delay `kiln info --device cpu`.
  const skipped = (name: string): boolean =>
    resolution?.steps.some((step) => step.name === name && step.reason.startsWith('not probed')) === true;
  const probed = await Promise.all(
    listBackends().map(async (plugin) => ({
      plugin,
      probe: skipped(plugin.name) ? { available: false, devices: [] as DeviceInfo[] } : await probeBackend(plugin),
    })),
  );
  const registered = new Set(listBackends().map((plugin) => plugin.name));
  const backends: InfoReport['backends'] = probed.map(({ plugin, probe }) => {
    const step = resolution?.steps.find((candidate) => candidate.name === plugin.name);
    if (failedRequest?.name === plugin.name)
      return {
        name: plugin.name,
        available: probe.available,
        reason: failedRequest.reason,
        priority: plugin.priority,
        devices: probe.devices,
      };
    return {
      name: plugin.name,
      available: probe.available,
      reason: step?.reason ?? probe.reason ?? null,
      priority: plugin.priority,
      devices: probe.devices,
    };
  });
  if (failedRequest !== undefined && !registered.has(failedRequest.name)) {
    backends.push({
      name: failedRequest.name === '' ? '(not a device id)' : failedRequest.name,
      available: false,
      reason: failedRequest.reason,
      priority: null,
      devices: [],
    });
  }
  for (const entry of discovery) {
    // Packages that exist but could not be loaded are backends the user meant to have.
    if (entry.loaded || entry.path === undefined || (entry.backend !== undefined && registered.has(entry.backend)))
      continue;
    backends.push({ name: entry.name, available: false, reason: entry.reason ?? null, priority: null, devices: [] });
  }
  return {
    platform: { os: process.platform, arch: process.arch, node: process.versions.node },
    selected: resolution?.plugin.name ?? null,
    backends,
  };
}

function printReport(
  report: InfoReport,
  discovery: DiscoveryReport,
  resolution: BackendResolution | undefined,
  context: CliContext,
  failedRequest: FailedRequest | undefined,
): void {
  const { terminal } = context;
  const { platform } = report;
  terminal.say(`platform: ${platform.os} ${platform.arch}, Node.js ${platform.node}`);
  terminal.say('');
  terminal.say('backends (highest priority first):');
  for (const backend of report.backends) {
    const mark = backend.available && backend.reason !== failedRequest?.reason ? '✓' : '✗';
    const priority = backend.priority === null ? '' : ` (priority ${backend.priority})`;
    terminal.say(
      `  ${mark} ${backend.name}${priority}: ${backend.reason ?? (backend.available ? 'available' : 'unavailable')}`,
    );
    for (const device of backend.devices) terminal.say(`      ${device.id}: ${device.name}${memoryText(device)}`);
  }
  // A first-party package not found on disk but registered anyway (the CPU backend embedded in the CLI) is not missing.
  const registeredNames = new Set(report.backends.map((backend) => backend.name));
  const missing = discovery.filter(
    (entry) =>
      !entry.loaded && entry.path === undefined && !registeredNames.has(entry.name.replace(/^@kiln\/backend-/, '')),
  );
  for (const entry of missing) terminal.say(`  · ${entry.name}: ${entry.reason ?? 'not installed'}`);
  if (resolution === undefined) return;
  terminal.say('');
  reportResolution(resolution, terminal);
  for (const line of deviceFacts(resolution.backend, resolution.device)) terminal.say(`  ${line}`);
}

/** The chosen device: name, memory, dtypes the matmul runs natively, attention implementation, the matmul path and how kernels run, when the backend reports them. */
export function deviceFacts(backend: KernelBackend, probed: DeviceInfo | undefined): string[] {
  const capabilities = backend.capabilities;
  const device = capabilities?.device ?? probed;
  const dtypes = DTYPES.filter((dtype) => capabilities?.supports('matmul', dtype) === true);
  const lines = [`device:    ${device?.name ?? 'unknown'} (${device?.id ?? backend.name})`];
  lines.push(`memory:    ${memoryLine(backend, device)}`);
  lines.push(`dtypes:    ${dtypes.length > 0 ? dtypes.join(', ') : 'none reported'} (native matmul)`);
  lines.push(`attention: ${attentionLine(backend)}`);
  const matmul = matmulPathOf(backend);
  if (matmul !== undefined) lines.push(`matmul:    ${matmul}`);
  if (capabilities?.implementation !== undefined) lines.push(`kernels:   ${capabilities.implementation}`);
  return lines;
}

/** A backend's own one-line description of its matmul path (the CUDA backend's `matmulPath`: cuBLAS or kiln's kernels, and why), when it has one. */
export function matmulPathOf(backend: KernelBackend): string | undefined {
  const path = (backend as { matmulPath?: unknown }).matmulPath;
  return typeof path === 'string' && path !== '' ? path : undefined;
}

function memoryLine(backend: KernelBackend, device: DeviceInfo | undefined): string {
  const usage = backend.memory();
  const total = device?.memoryTotalBytes ?? usage.totalBytes;
  const free = device?.memoryFreeBytes ?? usage.freeBytes;
  if (total !== undefined) {
    const freeText = free === undefined ? '' : `, ${formatBytes(free)} free`;
    if (isHostCpu(device, backend.name)) return `${formatBytes(total)} RAM${freeText}`;
    return `${formatBytes(total)} total${freeText}${device?.unifiedMemory === true ? ' (unified memory shared with the host: an estimate)' : ''}`;
  }
  if (device?.unifiedMemory === true) {
    return `~${formatBytes(totalmem())} total, ~${formatBytes(freemem())} free (unified memory: estimated from the host)`;
  }
  return 'unknown (the backend does not report it)';
}

/**
 * The attention line of `kiln info`: composed, fused or flash, then the backend's own word on its
 * kernels when it gives one (the CUDA backend's `attentionPath`: wgmma + TMA or FlashAttention-2).
 */
export function attentionLine(backend: KernelBackend): string {
  if (typeof backend.attention !== 'function') return 'composed from primitives (no fused attention kernel)';
  const kind =
    backend.capabilities?.flashAttention === true
      ? 'flash (native fused kernel, tiled online softmax)'
      : 'fused native kernel (not tiled flash)';
  const path = (backend as { attentionPath?: unknown }).attentionPath;
  return typeof path === 'string' && path.length > 0 ? `${kind}: ${path}` : kind;
}

function memoryText(device: DeviceInfo): string {
  if (device.memoryTotalBytes === undefined) return '';
  const kind = isHostCpu(device, device.id) ? ' RAM' : device.unifiedMemory ? ' unified' : '';
  return `, ${formatBytes(device.memoryTotalBytes)}${kind}`;
}

/** True for the host's own CPU (its memory is the machine's RAM, not a device's). */
function isHostCpu(device: DeviceInfo | undefined, backendName: string): boolean {
  return device?.id === 'cpu' || backendName === 'cpu';
}
