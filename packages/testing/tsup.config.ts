import { defineConfig } from 'tsup';

export default defineConfig({
  entry: { index: 'src/index.ts' },
  format: ['esm', 'cjs'],
  dts: true,
  // No source maps: they would map to sources the package does not ship.
  sourcemap: false,
  clean: true,
  target: 'node20',
  // @kiln/core (with its kit-facing subpath @kiln/core/internal) is a peer: one copy of the engine.
  external: ['@kiln/core', 'vitest'],
});
