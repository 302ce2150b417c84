// prepack: a platform package without its binary must never be published.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

if (!existsSync(fileURLToPath(new URL('../kiln_cuda.node', import.meta.url)))) {
  console.error(
    '[@kiln/backend-cuda-linux-x64] kiln_cuda.node is missing: run `node scripts/stage-binary.mjs` after building @kiln/backend-cuda.',
  );
  process.exit(1);
}
