import { dirname } from 'node:path';
import { defineConfig } from 'tsup';

export default defineConfig({
  entry: { index: 'src/index.ts', 'testing/index': 'src/testing/index.ts', 'native-backend/index': 'src/native-backend/index.ts' },
  format: ['esm', 'cjs'],
  dts: true,
  // No source maps: they would map to sources the package does not ship.
  sourcemap: false,
  clean: true,
  target: 'node20',
  external: ['vitest'],
  esbuildPlugins: [
    {
      // The native-backend entry throws core's error classes: it takes them from @kiln/core itself
      // (a self-reference), not from a copy bundled into it, so `instanceof InvalidArgumentError`
      // holds for its errors in CommonJS too (the CJS build shares no chunks between entries).
      name: 'native-backend-errors-from-core',
      setup(build) {
        build.onResolve({ filter: /\/errors\.js$/ }, (args) =>
          dirname(args.importer).endsWith('native-backend') ? { path: '@kiln/core', external: true } : undefined);
      },
    },
  ],
});
