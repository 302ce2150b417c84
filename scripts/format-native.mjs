#!/usr/bin/env node
// Formats kiln's native sources (C++, CUDA, Metal Shading Language, Objective-C++) with clang-format,
// the WebAssembly build from @wasm-fmt/clang-format (installed from the lockfile: nothing downloaded,
// same result on every platform), in the style of the repository's .clang-format.
//
//   node scripts/format-native.mjs [--check | --write] [path…]
//
// Paths are files or folders (default: the whole repository); only git-tracked files ending in
// .cpp .h .hpp .cu .cuh .metal .mm are formatted. --check (the default) lists the files whose
// formatting differs and exits 1 if there are any; --write rewrites them.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { format } from '@wasm-fmt/clang-format';

const EXTENSIONS = ['.cpp', '.h', '.hpp', '.cu', '.cuh', '.metal', '.mm'];
const repository = resolve(import.meta.dirname, '..');

/** The file name clang-format sees: it picks the language from the extension, and knows none of CUDA's or Metal's. */
function languageName(path) {
  if (path.endsWith('.mm')) return 'main.mm';
  return 'main.cpp';
}

function usage(message) {
  console.error(`format-native: ${message}\nUsage: node scripts/format-native.mjs [--check | --write] [path…]`);
  process.exit(2);
}

const flags = process.argv.slice(2).filter((argument) => argument.startsWith('--'));
const paths = process.argv.slice(2).filter((argument) => !argument.startsWith('--'));
for (const flag of flags) if (flag !== '--check' && flag !== '--write') usage(`unknown option ${flag}`);
if (flags.length > 1) usage('pass one of --check and --write');
const write = flags[0] === '--write';

const style = readFileSync(join(repository, '.clang-format'), 'utf8');
const listed = execFileSync('git', ['ls-files', '-z', '--', ...(paths.length > 0 ? paths : ['.'])], {
  encoding: 'utf8',
  maxBuffer: 1 << 26,
})
  .split('\0')
  .filter((path) => EXTENSIONS.some((extension) => path.endsWith(extension)));

const differing = [];
for (const path of listed) {
  const source = readFileSync(path, 'utf8');
  let formatted;
  try {
    formatted = format(source, languageName(path), style);
  } catch (error) {
    console.error(
      `format-native: clang-format failed on ${path}: ${error instanceof Error ? error.message : String(error)}`,
    );
    process.exit(2);
  }
  if (formatted === source) continue;
  differing.push(relative(repository, resolve(path)));
  if (write) writeFileSync(path, formatted);
}

if (write) {
  console.log(`format-native: formatted ${differing.length} of ${listed.length} files`);
} else if (differing.length > 0) {
  for (const path of differing) console.log(`  ${path}`);
  console.log(`format-native: ${differing.length} of ${listed.length} files are not formatted; run \`pnpm format\``);
  process.exit(1);
} else {
  console.log(`format-native: ${listed.length} files checked, all formatted`);
}
