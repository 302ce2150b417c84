// prepack: a platform package without its binary must never be published.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

if (!existsSync(fileURLToPath(new URL('../kiln_metal.node', import.meta.url)))) {
  console.error(
    '[@kiln/backend-metal-darwin-arm64] kiln_metal.node is missing: run `node scripts/stage-binary.mjs` after building @kiln/backend-metal on an Apple-silicon Mac.',
  );
  process.exit(1);
}
