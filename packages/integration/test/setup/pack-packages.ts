/**
 * Global setup: packs every published package and the backend template with `pnpm pack` (which
 * turns workspace: ranges into versions, as publishing does) into one temporary directory, once
 * for all test files. The platform package of the CUDA backend is packed from a staged copy when
 * a real (nvcc) build of the addon exists, since it must never be packed without its binary.
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import {
  pnpmCommand,
  publishedPackages,
  run,
  TEMPLATE_NAME,
  workspacePackages,
  type WorkspacePackage,
} from './workspace.js';

/** What the setup hands to the tests (vitest `inject('packed')`). */
export interface PackedPackages {
  /** The directory holding the tarballs. */
  directory: string;
  /** Package name → tarball path. */
  tarballs: Record<string, string>;
  /** Package name → why it was not packed (e.g. the CUDA binary package without a CUDA build). */
  notPacked: Record<string, string>;
}

declare module 'vitest' {
  export interface ProvidedContext {
    packed: PackedPackages;
  }
}

async function pack(item: WorkspacePackage, directory: string, destination: string): Promise<string> {
  const [pnpm, leading] = pnpmCommand();
  const before = new Set(readdirSync(destination));
  const result = await run(pnpm, [...leading, 'pack', '--pack-destination', destination], { cwd: directory });
  if (result.code !== 0)
    throw new Error(
      `pnpm pack of ${item.name} failed (exit ${String(result.code)}):\n${result.stdout}\n${result.stderr}`,
    );
  const created = readdirSync(destination).filter((name) => name.endsWith('.tgz') && !before.has(name));
  if (created.length !== 1)
    throw new Error(`pnpm pack of ${item.name} produced ${created.length} tarballs: ${created.join(', ')}`);
  return join(destination, created[0]);
}

/** Packs @kiln/backend-cuda-linux-x64 from a copy that holds the staged binary, or says why not. */
async function packBinaryPackage(
  item: WorkspacePackage,
  staging: string,
  destination: string,
): Promise<string | { reason: string }> {
  const built = join(item.directory, '..', 'backend-cuda', 'build', 'cuda', 'Release', 'kiln_cuda.node');
  if (!existsSync(built))
    return {
      reason: `no CUDA build of the addon (${built}): nvcc was not available when @kiln/backend-cuda was built`,
    };
  const copy = join(staging, 'backend-cuda-linux-x64');
  for (const entry of readdirSync(item.directory)) {
    if (entry !== 'node_modules') cpSync(join(item.directory, entry), join(copy, entry), { recursive: true });
  }
  const stage = await run(process.execPath, [join(item.directory, 'scripts', 'stage-binary.mjs'), '--to', copy], {
    cwd: item.directory,
  });
  if (stage.code !== 0) return { reason: `staging the binary failed: ${stage.stderr.trim() || stage.stdout.trim()}` };
  return pack(item, copy, destination);
}

export default async function setup(project: TestProject): Promise<() => void> {
  const root = mkdtempSync(join(tmpdir(), 'kiln-packed-'));
  const destination = join(root, 'tarballs');
  const staging = join(root, 'staging');
  mkdirSync(destination);
  mkdirSync(staging);
  const tarballs: Record<string, string> = {};
  const notPacked: Record<string, string> = {};
  const template = workspacePackages().find((item) => item.name === TEMPLATE_NAME);
  const targets = [...publishedPackages(), ...(template === undefined ? [] : [template])];
  for (const item of targets) {
    if (item.name.endsWith('-linux-x64') || item.name.endsWith('-darwin-arm64')) {
      const packed =
        item.name === '@kiln/backend-cuda-linux-x64'
          ? await packBinaryPackage(item, staging, destination)
          : { reason: 'its binary is built on its own platform by the release workflow' };
      if (typeof packed === 'string') tarballs[item.name] = packed;
      else notPacked[item.name] = packed.reason;
      continue;
    }
    tarballs[item.name] = await pack(item, item.directory, destination);
  }
  project.provide('packed', { directory: destination, tarballs, notPacked });
  return () => rmSync(root, { recursive: true, force: true });
}
