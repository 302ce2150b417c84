#!/usr/bin/env node
// The lint task of every package (`pnpm lint` runs it through turbo; CI runs `pnpm lint`), checking
// only — it never rewrites a file:
//   1. Biome's linter (biome.json: unused variables and imports, floating and misused promises,
//      import cycles, Biome's recommended correctness rules) on the TypeScript/JavaScript;
//   2. the formatting: Biome's formatter for TypeScript/JavaScript and clang-format
//      (scripts/format-native.mjs) for C++/CUDA/Metal/Objective-C++.
//
//   node ../../scripts/lint.mjs [path…]      (default: the current directory)
//
// Step 2 runs when KILN_LINT_FORMAT=check, or by default once FORMAT_CHECKED_BY_DEFAULT is true;
// KILN_LINT_FORMAT=skip turns it off. `pnpm format` writes the formatting.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

/** Whether the formatting is checked when KILN_LINT_FORMAT is unset: true once the repository-wide `pnpm format` has landed. */
const FORMAT_CHECKED_BY_DEFAULT = true;

const repository = join(import.meta.dirname, '..');
const setting = process.env.KILN_LINT_FORMAT;
if (setting !== undefined && setting !== 'check' && setting !== 'skip') {
  console.error(`lint: KILN_LINT_FORMAT must be 'check' or 'skip', got '${setting}'`);
  process.exit(2);
}
const checkFormat = setting === undefined ? FORMAT_CHECKED_BY_DEFAULT : setting === 'check';
const paths = process.argv.slice(2).length > 0 ? process.argv.slice(2) : ['.'];

/** Runs a command with inherited output; its exit status (1 when it could not start). */
function run(command, args) {
  const result = spawnSync(command, args, { stdio: 'inherit' });
  if (result.error) console.error(`lint: could not run ${command}: ${result.error.message}`);
  return result.status ?? 1;
}

const biome = join(repository, 'node_modules', '.bin', 'biome');
const biomeStatus = run(biome, [
  'check',
  `--formatter-enabled=${checkFormat}`,
  '--linter-enabled=true',
  '--assist-enabled=false',
  '--error-on-warnings',
  '--no-errors-on-unmatched',
  ...paths,
]);
const nativeStatus = checkFormat
  ? run(process.execPath, [join(repository, 'scripts', 'format-native.mjs'), '--check', ...paths])
  : 0;
if (!checkFormat) console.log('lint: formatting not checked (KILN_LINT_FORMAT=check checks it)');
process.exit(biomeStatus !== 0 || nativeStatus !== 0 ? 1 : 0);
