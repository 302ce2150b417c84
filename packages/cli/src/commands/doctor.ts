/**
 * `kiln doctor`: checks what can go wrong on this machine — Node version, first-party backend
 * packages, native binaries (through each probe's reason), plugin API versions, nvcc, a writable
 * temp directory and a real computation on the default backend — with a fix for each problem.
 * Exit 0 when the default path works, 1 otherwise.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import {
  FIRST_PARTY_BACKENDS,
  matmul,
  probeBackends,
  tensor,
  tidy,
  type BackendPlugin,
  type DiscoveryReport,
  type KernelBackend,
} from '@kiln/core';
import { backendFix, cublasAdvice } from '../backend-fixes.js';
import { discoverAllBackends, setUpBackend } from '../backend-setup.js';
import type { CliContext } from '../cli-context.js';
import { ExitCode } from '../exit-codes.js';
import { findNvidiaGpu } from '../nvidia-hardware.js';
import { matmulPathOf } from './info.js';

/** One check: passed, failed (with a fix), informational, or not applicable to this machine. */
export interface DoctorCheck {
  /** 'ok' ✓, 'fail' ✗, 'info' · and 'not-applicable' – (the last two do not affect the exit code). */
  status: 'ok' | 'fail' | 'info' | 'not-applicable';
  /** What was checked and what was found. */
  title: string;
  /** How to fix it (failures and some notes). */
  fix?: string;
  /** True when a failure breaks the default path (exit code 1). */
  critical?: boolean;
}

/** What doctor checks against: the OS, the environment, and where an NVIDIA GPU is seen (tests pass fakes). */
export interface DoctorEnvironment {
  /** The operating system (process.platform). */
  platform: NodeJS.Platform;
  /** The environment (KILN_DEVICE). */
  env: NodeJS.ProcessEnv;
  /** Where an NVIDIA GPU was seen, or undefined (findNvidiaGpu). */
  nvidiaGpu: () => string | undefined;
}

const MINIMUM_NODE = [20, 10] as const;
const OPTIONAL_NATIVE = new Set(['@kiln/backend-cuda', '@kiln/backend-metal']);

/** Registers `kiln doctor`. */
export function defineDoctorCommand(program: Command, context: CliContext): void {
  program
    .command('doctor')
    .description('check the toolchain, backends and native binaries, and print fixes')
    .option('--json', 'print the checks as JSON')
    .action(async (options: { json?: boolean }) => {
      const checks = await runChecks(context, {
        platform: process.platform,
        env: process.env,
        nvidiaGpu: () => findNvidiaGpu(),
      });
      const healthy = !checks.some((check) => check.status === 'fail' && check.critical === true);
      if (options.json === true) {
        context.terminal.json({ healthy, checks });
      } else {
        for (const check of checks) printCheck(check, context);
        context.terminal.say('');
        context.terminal.say(
          healthy
            ? 'kiln can train on this machine.'
            : 'kiln cannot train on this machine until the ✗ items marked critical are fixed.',
        );
      }
      context.exitCode = healthy ? ExitCode.ok : ExitCode.failure;
    });
}

async function runChecks(context: CliContext, environment: DoctorEnvironment): Promise<DoctorCheck[]> {
  const checks: DoctorCheck[] = [nodeCheck()];
  const discovery = await discoverAllBackends();
  checks.push(...packageChecks(discovery));
  for (const { plugin, probe } of await probeBackends()) {
    if (!probe.available) {
      checks.push(unavailableBackendCheck(plugin.name, probe.reason, environment));
      continue;
    }
    checks.push({
      status: 'ok',
      title: `backend '${plugin.name}' is available (${probe.devices.map((device) => device.name).join(', ') || 'no device listed'})`,
    });
    if (plugin.name === 'cuda') checks.push(await matmulPathCheck(plugin));
  }
  checks.push(nvccCheck(), temporaryDirectoryCheck());
  checks.push(await defaultPathCheck(context, environment.env));
  return checks;
}

/**
 * An unavailable backend: a failure with its fix, unless it cannot apply to this machine (Metal
 * off macOS, CUDA on macOS or without an NVIDIA GPU), which is nothing to fix.
 */
export function unavailableBackendCheck(
  name: string,
  reason: string | undefined,
  environment: DoctorEnvironment,
): DoctorCheck {
  if (name === 'metal' && environment.platform !== 'darwin') {
    return {
      status: 'not-applicable',
      title: `backend 'metal' does not apply here: Metal needs macOS (this machine runs ${environment.platform})`,
    };
  }
  if (name === 'cuda' && environment.platform === 'darwin') {
    return {
      status: 'not-applicable',
      title: "backend 'cuda' does not apply here: CUDA needs an NVIDIA GPU on Linux or Windows",
    };
  }
  const { diagnosis, fix } = backendFix(name, reason);
  if (name === 'cuda' && /No NVIDIA driver|driver supports CUDA|no CUDA device/.test(reason ?? '')) {
    const gpu = environment.nvidiaGpu();
    if (gpu === undefined) {
      return {
        status: 'not-applicable',
        title:
          "backend 'cuda' does not apply here: no NVIDIA GPU (none in /proc/driver/nvidia, /dev/nvidia*, or on the PCI bus)",
      };
    }
    return {
      status: 'fail',
      title: `backend 'cuda' is unavailable: ${diagnosis}, though this machine has an NVIDIA GPU (${gpu})`,
      fix,
    };
  }
  return { status: 'fail', title: `backend '${name}' is unavailable: ${diagnosis}`, fix };
}

/** Which matmul path a CUDA backend takes here (cuBLAS or kiln's kernels), with the cuBLAS advice when it was not found. */
async function matmulPathCheck(plugin: BackendPlugin): Promise<DoctorCheck> {
  let backend: KernelBackend | undefined;
  try {
    backend = await plugin.create();
    const path = matmulPathOf(backend) ?? 'not reported';
    const advice = cublasAdvice(path);
    return advice === undefined
      ? { status: 'ok', title: `${plugin.name} matmul: ${path}` }
      : { status: 'info', title: `${plugin.name} matmul: ${path}`, fix: advice };
  } catch (error) {
    return {
      status: 'fail',
      title: `backend '${plugin.name}' probes available but could not be created: ${error instanceof Error ? error.message : String(error)}`,
      fix: 'Run `kiln info` for details, and report it.',
    };
  } finally {
    backend?.dispose?.();
  }
}

function nodeCheck(): DoctorCheck {
  const [major, minor] = process.versions.node.split('.').map(Number);
  const ok = major > MINIMUM_NODE[0] || (major === MINIMUM_NODE[0] && minor >= MINIMUM_NODE[1]);
  return ok
    ? { status: 'ok', title: `Node.js ${process.versions.node} (≥ ${MINIMUM_NODE.join('.')})` }
    : {
        status: 'fail',
        critical: true,
        title: `Node.js ${process.versions.node} is older than ${MINIMUM_NODE.join('.')}`,
        fix: 'Install Node.js 20.10 or newer (e.g. `nvm install 20`).',
      };
}

/** First-party packages, and every discovered package that failed (API version mismatches included). */
function packageChecks(discovery: DiscoveryReport): DoctorCheck[] {
  const checks: DoctorCheck[] = [];
  for (const name of FIRST_PARTY_BACKENDS) {
    const entry = discovery.find((candidate) => candidate.name === name);
    if (name === '@kiln/backend-cpu') {
      checks.push({
        status: 'ok',
        title: `${name} is embedded in @kiln/cli${entry?.loaded === true ? ' and installed' : ''}`,
      });
    } else if (entry === undefined || entry.path === undefined) {
      checks.push({
        status: 'info',
        title: `${name} is not installed`,
        fix: OPTIONAL_NATIVE.has(name)
          ? `Optional: install it where its hardware exists (\`npm i ${name}\`).`
          : undefined,
      });
    } else if (entry.loaded) {
      checks.push({ status: 'ok', title: `${name} is installed and loads (${entry.path})` });
    } else {
      checks.push({
        status: 'fail',
        title: `${name} is installed but did not load: ${entry.reason ?? 'no reason given'}`,
        fix: fixFor(name, entry.reason),
      });
    }
  }
  for (const entry of discovery) {
    if (FIRST_PARTY_BACKENDS.includes(entry.name) || entry.loaded || entry.reason?.startsWith('skipped') === true)
      continue;
    checks.push({
      status: 'fail',
      title: `plugin ${entry.name} did not load: ${entry.reason ?? 'no reason given'}`,
      fix: fixFor(entry.name, entry.reason),
    });
  }
  return checks;
}

function fixFor(name: string, reason: string | undefined): string {
  if (reason !== undefined && /API version/i.test(reason))
    return `Install versions of ${name} and @kiln/core built for each other (see the versions in the message).`;
  if (reason !== undefined && /entry point|built/i.test(reason))
    return `Build or reinstall it: \`pnpm rebuild ${name}\` (or \`npm rebuild ${name}\`).`;
  return `Reinstall it (\`npm i ${name}\`), or remove it if unused.`;
}

function nvccCheck(): DoctorCheck {
  try {
    const version = execFileSync('nvcc', ['--version'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 10_000,
    });
    const release = /release ([\d.]+)/.exec(version)?.[1] ?? 'unknown version';
    return { status: 'info', title: `nvcc ${release} is on PATH (can build @kiln/backend-cuda from source)` };
  } catch {
    return {
      status: 'info',
      title: 'nvcc is not on PATH',
      fix: 'Only needed to build @kiln/backend-cuda from source; prebuilt binaries do not need it.',
    };
  }
}

function temporaryDirectoryCheck(): DoctorCheck {
  try {
    const directory = mkdtempSync(join(tmpdir(), 'kiln-doctor-'));
    writeFileSync(join(directory, 'probe'), 'ok');
    rmSync(directory, { recursive: true, force: true });
    return { status: 'ok', title: `temp directory ${tmpdir()} is writable` };
  } catch (error) {
    return {
      status: 'fail',
      critical: true,
      title: `temp directory ${tmpdir()} is not writable: ${error instanceof Error ? error.message : String(error)}`,
      fix: 'Set TMPDIR to a writable directory.',
    };
  }
}

/** Resolve the default backend (KILN_DEVICE's, when set) and compute a 2×2 matmul on it. */
async function defaultPathCheck(context: CliContext, env: NodeJS.ProcessEnv): Promise<DoctorCheck> {
  const requested = env.KILN_DEVICE?.trim() ?? '';
  const fromEnvironment = requested !== '' && requested.toLowerCase() !== 'auto';
  try {
    const resolution = await setUpBackend({}, context.terminal);
    const product = tidy(() =>
      matmul(
        tensor([
          [1, 2],
          [3, 4],
        ]),
        tensor([
          [5, 6],
          [7, 8],
        ]),
      ),
    );
    const values = await product.data().finally(() => product.dispose());
    const expected = [19, 22, 43, 50];
    if (!expected.every((value, index) => values[index] === value)) {
      return {
        status: 'fail',
        critical: true,
        title: `backend '${resolution.plugin.name}' computed a wrong matmul (${[...values].join(', ')})`,
        fix: 'Report this as a bug in the backend package, and choose another with --device.',
      };
    }
    const which = fromEnvironment
      ? `backend '${resolution.plugin.name}' (KILN_DEVICE=${requested})`
      : `default backend '${resolution.plugin.name}'`;
    return { status: 'ok', title: `${which} resolves and computes correctly` };
  } catch (error) {
    const message = (error instanceof Error ? error.message : String(error)).split('\n')[0];
    if (fromEnvironment) {
      return {
        status: 'fail',
        critical: true,
        title: `KILN_DEVICE=${requested} asks for a backend that cannot be used: ${message}`,
        fix: '`unset KILN_DEVICE` (kiln then picks the best available backend), or set it to a backend marked ✓ above.',
      };
    }
    return {
      status: 'fail',
      critical: true,
      title: `no default backend works: ${message}`,
      fix: 'Reinstall @kiln/cli (it embeds @kiln/backend-cpu), or fix the reasons above.',
    };
  }
}

function printCheck(check: DoctorCheck, context: CliContext): void {
  const mark = { ok: '✓', fail: '✗', info: '·', 'not-applicable': '–' }[check.status];
  context.terminal.say(`${mark} ${check.title}`);
  if (check.fix !== undefined && check.status !== 'ok') context.terminal.say(`    fix: ${check.fix}`);
}
