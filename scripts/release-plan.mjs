#!/usr/bin/env node
// Release helper for .github/workflows/release.yml.
//
//   node scripts/release-plan.mjs
//     prints `unpublished=true` when some public workspace package's version is not on npm yet
//     (then the release builds the native prebuilds and publishes), else `unpublished=false`.
//   node scripts/release-plan.mjs --publish-platform-packages
//     publishes the per-platform binary packages (@kiln/backend-*-<os>-<arch>) whose version is
//     not on npm yet, with provenance, before `changeset publish` publishes their parents.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const PLATFORM_PACKAGE = /-(linux|darwin|win32)-(x64|arm64)(-(gnu|musl))?$/;
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const pnpm = process.platform === 'win32' ? 'pnpm.cmd' : 'pnpm';

/** Every public package under packages/: { name, version, directory }. */
function publicPackages() {
  const packagesDirectory = join(root, 'packages');
  return readdirSync(packagesDirectory)
    .map((entry) => join(packagesDirectory, entry))
    .filter((directory) => existsSync(join(directory, 'package.json')))
    .map((directory) => ({ directory, ...JSON.parse(readFileSync(join(directory, 'package.json'), 'utf8')) }))
    .filter((manifest) => manifest.private !== true);
}

/** True when name@version is on the registry. */
function isPublished(name, version) {
  try {
    const output = execFileSync(npm, ['view', `${name}@${version}`, 'version'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      shell: process.platform === 'win32',
    });
    return output.trim() === version;
  } catch (error) {
    const text = `${error.stdout ?? ''}${error.stderr ?? ''}`;
    if (/E404|404 Not Found|is not in this registry/.test(text)) return false;
    throw new Error(`npm view ${name}@${version} failed: ${text.trim() || error.message}`);
  }
}

const unpublished = publicPackages().filter((manifest) => !isPublished(manifest.name, manifest.version));

if (process.argv.includes('--publish-platform-packages')) {
  for (const manifest of unpublished.filter((item) => PLATFORM_PACKAGE.test(item.name))) {
    console.log(`publishing ${manifest.name}@${manifest.version} (before its parent)`);
    // prepack refuses a package whose binary was not staged.
    execFileSync(pnpm, ['publish', '--access', 'public', '--no-git-checks', '--provenance'], {
      cwd: manifest.directory,
      stdio: 'inherit',
      shell: process.platform === 'win32',
    });
  }
} else {
  for (const manifest of unpublished) console.error(`not on npm yet: ${manifest.name}@${manifest.version}`);
  console.log(`unpublished=${unpublished.length > 0}`);
}
