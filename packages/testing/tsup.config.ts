import { join } from 'node:path';
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
  esbuildPlugins: [
    {
      // The ES module build imports vitest with a top-level await (vitest-loader.ts); CommonJS has
      // no top-level await and vitest cannot be required, so that build takes vitest-loader-cjs.ts.
      name: 'vitest-loader-per-format',
      setup(build) {
        if (build.initialOptions.format !== 'cjs') return;
        build.onResolve({ filter: /\/vitest-loader\.js$/ }, (args) => ({
          path: join(args.resolveDir, 'vitest-loader-cjs.ts'),
        }));
      },
    },
  ],
});
