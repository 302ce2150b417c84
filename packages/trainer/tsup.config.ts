import { defineConfig } from 'tsup';

export default defineConfig({
  entry: { index: 'src/index.ts', 'testing/index': 'src/testing/index.ts' },
  format: ['esm', 'cjs'],
  dts: true,
  // No source maps: they would map to sources the package does not ship.
  sourcemap: false,
  clean: true,
  target: 'node20',
  external: ['@kiln/core'],
});
