/** The workspace as the integration tests see it: where it is, its packages, and how to run pnpm/npm portably. */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root. */
export const REPOSITORY = fileURLToPath(new URL('../../../../', import.meta.url));

/** One workspace package. */
export interface WorkspacePackage {
  /** Its name, e.g. '@kiln/core'. */
  name: string;
  /** Its directory. */
  directory: string;
  /** Its package.json. */
  manifest: Record<string, unknown> & { name: string; version: string; private?: boolean };
}

/** Every package under packages/ and examples/. */
export function workspacePackages(): WorkspacePackage[] {
  const found: WorkspacePackage[] = [];
  for (const folder of ['packages', 'examples']) {
    const root = join(REPOSITORY, folder);
    if (!existsSync(root)) continue;
    for (const entry of readdirSync(root).sort()) {
      const manifestPath = join(root, entry, 'package.json');
      if (!existsSync(manifestPath)) continue;
      const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as WorkspacePackage['manifest'];
      found.push({ name: manifest.name, directory: join(root, entry), manifest });
    }
  }
  return found;
}

/** The packages kiln publishes to npm (not private). */
export function publishedPackages(): WorkspacePackage[] {
  return workspacePackages().filter((item) => item.manifest.private !== true);
}

/** The template of an out-of-tree backend (private: it is copied, not published, but packed and installed by the tests). */
export const TEMPLATE_NAME = 'kiln-backend-example';

/** What a finished command printed and how it ended. */
export interface CommandResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to completion (killed after `timeoutMs`); never throws for a non-zero exit. */
export function run(
  command: string,
  args: string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs?: number },
): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    // .cmd shims (npm, pnpm on Windows) need a shell since Node 20.12.
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: { ...process.env, ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
      shell: process.platform === 'win32' && !command.endsWith('.exe') && command !== process.execPath,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 300_000);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** pnpm as [command, ...leading args]: the pnpm that runs these tests (npm_execpath), else the one on PATH. */
export function pnpmCommand(): [string, string[]] {
  const execPath = process.env.npm_execpath;
  if (execPath !== undefined && /pnpm/i.test(execPath) && /\.(c?js|mjs)$/.test(execPath))
    return [process.execPath, [execPath]];
  return [process.platform === 'win32' ? 'pnpm.cmd' : 'pnpm', []];
}

/** npm as a command name. */
export function npmCommand(): string {
  return process.platform === 'win32' ? 'npm.cmd' : 'npm';
}
