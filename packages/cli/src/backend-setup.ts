/**
 * Backend discovery and resolution for the commands: the embedded CPU backend is registered
 * first (so it is always there), then installed backends are discovered, then core resolves the
 * device (flag → KILN_DEVICE → highest-priority available) and explains its choice.
 */
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuBackendPlugin } from '@kiln/backend-cpu';
import {
  InvalidArgumentError,
  KilnError,
  discoverBackends,
  getBackendPlugin,
  parseDeviceId,
  registerBackend,
  resolveBackend,
  setBackend,
  setFallbackPolicy,
  setWarningHandler,
  type BackendResolution,
  type KernelBackend,
  type BackendUnavailableError,
  type DiscoveryReport,
  type FallbackPolicy,
} from '@kiln/core';
import { markUsageError } from './exit-codes.js';
import type { Terminal } from './output/terminal.js';

/** How a command wants its backend resolved. */
export interface BackendRequest {
  /** 'auto', a backend name or name:index (default: KILN_DEVICE, else auto). */
  device?: string;
  /** Resolve another backend (with a warning) when the requested one is unavailable. */
  allowDeviceFallback?: boolean;
  /** Dtype fallback policy for kernels the backend lacks in a dtype. */
  dtypeFallback?: FallbackPolicy;
  /** Where `device` came from, named in errors and warnings ('--device', 'the config file run.yaml'). Default '--device'. */
  requestedBy?: string;
  /** How the user allows device fallback, offered in errors; omitted: the command offers none. */
  fallbackAdvice?: string;
}

/** The variable that lets `kiln train` fall back to the best available backend ('1' or 'true'). */
export const ALLOW_DEVICE_FALLBACK_VARIABLE = 'KILN_ALLOW_DEVICE_FALLBACK';

/** What `kiln train` says about allowing device fallback (the flag, the variable and the config key). */
export const TRAIN_FALLBACK_ADVICE = `pass --allow-device-fallback (or set ${ALLOW_DEVICE_FALLBACK_VARIABLE}=1, or device.allowDeviceFallback: true in the config)`;

/**
 * `kiln train`'s backend request: the device from --device, else the config file (else
 * KILN_DEVICE, read by core), with fallback allowed by --allow-device-fallback,
 * KILN_ALLOW_DEVICE_FALLBACK=1 or the config's device.allowDeviceFallback.
 */
export function trainBackendRequest(
  device: { device: string; allowDeviceFallback: boolean; fallback: FallbackPolicy },
  flags: { device?: string; config?: string; allowDeviceFallback?: boolean },
  env: NodeJS.ProcessEnv = process.env,
): BackendRequest {
  const allowed = flags.allowDeviceFallback === true || device.allowDeviceFallback || environmentAllowsFallback(env);
  const requestedBy = flags.device !== undefined ? '--device' : `device.device in ${flags.config ?? 'the config'}`;
  return {
    device: device.device,
    allowDeviceFallback: allowed,
    dtypeFallback: device.fallback,
    requestedBy,
    fallbackAdvice: TRAIN_FALLBACK_ADVICE,
  };
}

/** KILN_ALLOW_DEVICE_FALLBACK: '1'/'true' allow, ''/'0'/'false' do not; anything else is refused by name. */
export function environmentAllowsFallback(env: NodeJS.ProcessEnv): boolean {
  const value = env[ALLOW_DEVICE_FALLBACK_VARIABLE]?.trim().toLowerCase();
  if (value === undefined || value === '' || value === '0' || value === 'false') return false;
  if (value === '1' || value === 'true') return true;
  throw new InvalidArgumentError(
    `${ALLOW_DEVICE_FALLBACK_VARIABLE}=${JSON.stringify(env[ALLOW_DEVICE_FALLBACK_VARIABLE])} is not a switch`,
    {
      hint: `Set ${ALLOW_DEVICE_FALLBACK_VARIABLE}=1 to allow falling back to the best available backend, or unset it.`,
    },
  );
}

/** Registers the embedded CPU backend, then discovers installed ones (memoized). Never throws. */
export async function discoverAllBackends(): Promise<DiscoveryReport> {
  if (getBackendPlugin('cpu') === undefined) registerBackend(cpuBackendPlugin);
  return discoverBackends({ paths: discoveryStarts() });
}

/**
 * Where discovery starts: the working directory, then the CLI's own install (its optional
 * @kiln/backend-cuda/-metal dependencies sit beside or below it — also in a pnpm workspace, where
 * they are not hoisted), then @kiln/core's (core's default).
 */
function discoveryStarts(): string[] {
  const starts = [process.cwd(), dirname(fileURLToPath(import.meta.url))];
  try {
    starts.push(dirname(createRequire(import.meta.url).resolve('@kiln/core')));
  } catch {
    // Unreachable where the CLI runs (it imports core); the two starts above still apply.
  }
  return starts;
}

/** Resolves, creates and makes default the backend; an unknown device name is a usage error (exit 2). */
export async function setUpBackend(request: BackendRequest, terminal: Terminal): Promise<BackendResolution> {
  await discoverAllBackends();
  setWarningHandler((message) => terminal.warn(`warning: ${message}`));
  if (request.dtypeFallback !== undefined) setFallbackPolicy(request.dtypeFallback);
  let resolution: BackendResolution;
  try {
    resolution = await resolveBackend({
      device: request.device,
      fallback: request.allowDeviceFallback === true,
      requestedBy: request.requestedBy ?? '--device',
      fallbackAdvice: request.fallbackAdvice ?? false,
    });
  } catch (error) {
    throw requestsUnknownBackend(request.device, error) ? markUsageError(error) : error;
  }
  setBackend(resolution.backend);
  return resolution;
}

/** The backend and device chosen, and why, in one line. */
export function describeResolution(resolution: BackendResolution): string {
  const chosen = resolution.steps.find((step) => step.chosen);
  const device = resolution.device;
  const where = device === undefined ? '' : ` on ${device.name} (${device.id})`;
  return `backend: ${resolution.plugin.name}${where} — ${chosen?.reason ?? `chosen by ${resolution.source}`}`;
}

/** Prints the resolution's line (to stderr with `toStderr`, e.g. while stdout carries generated text) and its warnings to stderr. */
export function reportResolution(resolution: BackendResolution, terminal: Terminal, toStderr = false): void {
  const line = describeResolution(resolution);
  if (toStderr) terminal.warn(line);
  else terminal.say(line);
  for (const warning of resolution.warnings) terminal.warn(`warning: ${warning}`);
}

/** One line saying whether a training run on `backend` repeats bit for bit (Capabilities.deterministic), and on what that depends. */
export function describeDeterminism(backend: KernelBackend): string {
  const { deterministic, determinism } = backend.capabilities;
  if (deterministic === true) return `deterministic: yes${determinism ? ` (${determinism})` : ''}`;
  return `deterministic: no — backend '${backend.name}' does not promise bit-identical reruns${determinism ? ` (${determinism})` : ''}`;
}

/**
 * True when the explicit request (flag or KILN_DEVICE) names a backend that is neither registered
 * nor installed (a typo: bad usage). An installed package that was rejected — another API
 * version, an import that failed — is a failure of the installation, not of the command line.
 */
function requestsUnknownBackend(device: string | undefined, error: unknown): boolean {
  const requested = device !== undefined && device.trim().toLowerCase() !== 'auto' ? device : process.env.KILN_DEVICE;
  if (requested === undefined || requested.trim() === '' || requested.trim().toLowerCase() === 'auto') return false;
  let name: string;
  try {
    name = parseDeviceId(requested).name;
  } catch {
    return true;
  }
  if (getBackendPlugin(name) !== undefined) return false;
  if (!KilnError.isInstance(error) || error.code !== 'BACKEND_UNAVAILABLE') return false;
  const attempts = (error as BackendUnavailableError).attempts;
  return attempts.some((attempt) => attempt.name === name && attempt.reason.startsWith('not installed'));
}
