#!/usr/bin/env node
// Copies the locally built CUDA addon into this package (the release workflow runs it after
// `pnpm turbo build` on a linux-x64 machine with nvcc, then publishes). Refuses anything that
// is not a loadable, non-simulator linux-x64 build of the same version.
//
//   node scripts/stage-binary.mjs [--from <kiln_cuda.node>] [--to <directory>]
import { copyFileSync, existsSync, mkdirSync, openSync, readFileSync, readSync, closeSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('..', import.meta.url));
const option = (name, fallback) => {
  const index = process.argv.indexOf(name);
  return index > 0 ? process.argv[index + 1] : fallback;
};
const source = option('--from', join(here, '..', 'backend-cuda', 'build', 'cuda', 'Release', 'kiln_cuda.node'));
const destination = option('--to', here);
const fail = (message) => {
  console.error(`[@kiln/backend-cuda-linux-x64] ${message}`);
  process.exit(1);
};

if (!existsSync(source)) fail(`${source} does not exist: build it first (pnpm turbo build with nvcc on PATH).`);
const header = Buffer.alloc(20);
const descriptor = openSync(source, 'r');
readSync(descriptor, header, 0, 20, 0);
closeSync(descriptor);
// ELF magic, 64-bit, little-endian, e_machine 62 (x86-64).
if (header.readUInt32BE(0) !== 0x7f454c46 || header[4] !== 2 || header[5] !== 1 || header.readUInt16LE(18) !== 62) {
  fail(`${source} is not a 64-bit little-endian x86-64 ELF shared object.`);
}
let info;
try {
  info = createRequire(import.meta.url)(source).buildInfo();
} catch (error) {
  fail(`${source} does not load: ${error instanceof Error ? error.message : String(error)}`);
}
if (info.simulator) fail(`${source} is the CPU simulator build, not the CUDA addon.`);
const ownVersion = JSON.parse(readFileSync(join(here, 'package.json'), 'utf8')).version;
const parentVersion = JSON.parse(readFileSync(join(here, '..', 'backend-cuda', 'package.json'), 'utf8')).version;
if (ownVersion !== parentVersion)
  fail(`version ${ownVersion} differs from @kiln/backend-cuda ${parentVersion}; they are released together.`);
mkdirSync(destination, { recursive: true });
copyFileSync(source, join(destination, 'kiln_cuda.node'));
console.log(
  `[@kiln/backend-cuda-linux-x64] staged ${source} (CUDA ${info.runtimeVersion}, ${info.architectures}) into ${destination}`,
);
