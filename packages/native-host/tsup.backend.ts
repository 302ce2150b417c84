// The tsup build of a GPU backend's TypeScript (one file, ESM and CJS, with declarations), shared by
// @kiln/backend-cuda's and @kiln/backend-metal's tsup.config.ts. Build time only: nothing here ships.
import { defineConfig } from 'tsup';

export default defineConfig({
  entry: { index: 'src/index.ts' },
  format: ['esm', 'cjs'],
  dts: true,
  // No source maps: they would map to sources the package does not ship.
  sourcemap: false,
  clean: true,
  target: 'node20',
  // import.meta.url in the CommonJS build (the loader finds the package root from it).
  shims: true,
  external: ['@kiln/core'],
});
