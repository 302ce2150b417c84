#!/usr/bin/env node
// Copies the shared native host (include/, src/, native-host.cmake, check-undefined.cmake, and
// scripts/addon-build.mjs, the build steps of `kiln-build-<name>`) into a GPU backend package
// before it is packed: `node ../native-host/scripts/stage-native-host.mjs` in the backend's
// directory writes ./native-host/, which its CMakeLists.txt and build script use where there is no
// workspace packages/native-host (users who run `npx kiln-build-cuda`); `--remove` (postpack)
// deletes it again. @kiln/native-host itself is private and never published.
import { cpSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const source = fileURLToPath(new URL('..', import.meta.url));
const remove = process.argv.includes('--remove');
const target = join(process.argv.slice(2).find((argument) => argument !== '--remove') ?? process.cwd(), 'native-host');
rmSync(target, { recursive: true, force: true });
if (remove) {
  console.log(`[@kiln/native-host] removed the staged native host ${target}`);
  process.exit(0);
}
for (const entry of ['include', 'src', 'native-host.cmake', 'check-undefined.cmake', 'scripts/addon-build.mjs'])
  cpSync(join(source, entry), join(target, entry), { recursive: true });
console.log(`[@kiln/native-host] staged the shared native host into ${target}`);
