#!/usr/bin/env node
// Copies the locally built Metal addon into this package (the release job runs it after
// `pnpm turbo build` on an Apple-silicon Mac, then publishes). Refuses anything that is not a
// loadable, non-simulator arm64 Mach-O build of the same version.
//
//   node scripts/stage-binary.mjs [--from <kiln_metal.node>] [--to <directory>]
import { closeSync, copyFileSync, existsSync, mkdirSync, openSync, readFileSync, readSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('..', import.meta.url));
const option = (name, fallback) => {
  const index = process.argv.indexOf(name);
  return index > 0 ? process.argv[index + 1] : fallback;
};
const source = option('--from', join(here, '..', 'backend-metal', 'build', 'metal', 'Release', 'kiln_metal.node'));
const destination = option('--to', here);
const fail = (message) => {
  console.error(`[@kiln/backend-metal-darwin-arm64] ${message}`);
  process.exit(1);
};

if (!existsSync(source)) fail(`${source} does not exist: build it first (pnpm turbo build on an Apple-silicon Mac).`);
const header = Buffer.alloc(8);
const descriptor = openSync(source, 'r');
readSync(descriptor, header, 0, 8, 0);
closeSync(descriptor);
// Mach-O 64-bit magic (0xfeedfacf, little-endian) and CPU type ARM64 (0x0100000c).
if (header.readUInt32LE(0) !== 0xfeedfacf || header.readUInt32LE(4) !== 0x0100000c)
  fail(`${source} is not a 64-bit arm64 Mach-O file.`);
let info;
try {
  info = createRequire(import.meta.url)(source).buildInfo();
} catch (error) {
  fail(`${source} does not load: ${error instanceof Error ? error.message : String(error)}`);
}
if (info.simulator) fail(`${source} is the CPU simulator build, not the Metal addon.`);
const ownVersion = JSON.parse(readFileSync(join(here, 'package.json'), 'utf8')).version;
const parentVersion = JSON.parse(readFileSync(join(here, '..', 'backend-metal', 'package.json'), 'utf8')).version;
if (ownVersion !== parentVersion)
  fail(`version ${ownVersion} differs from @kiln/backend-metal ${parentVersion}; they are released together.`);
mkdirSync(destination, { recursive: true });
copyFileSync(source, join(destination, 'kiln_metal.node'));
console.log(
  `[@kiln/backend-metal-darwin-arm64] staged ${source} (${info.build}, MSL ${info.languageVersion}) into ${destination}`,
);
