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
