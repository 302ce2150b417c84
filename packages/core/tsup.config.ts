import { dirname } from 'node:path';
import { defineConfig } from 'tsup';

export default defineConfig({
  entry: {
    index: 'src/index.ts',
    'native-backend/index': 'src/native-backend/index.ts',
    'internal/index': 'src/internal/index.ts',
  },
  format: ['esm', 'cjs'],
  dts: true,
  // No source maps: they would map to sources the package does not ship.
  sourcemap: false,
  clean: true,
  target: 'node20',
  esbuildPlugins: [
    {
      // The native-backend entry takes core's runtime values (error classes above all) from
      // @kiln/core itself — a self-reference — never from a copy bundled into it, so
      // `instanceof InvalidArgumentError` holds for its errors in CommonJS too (the CJS build
      // shares no chunks between entries). Its sources import them from '../index.js'.
      name: 'native-backend-imports-core',
      setup(build) {
        build.onResolve({ filter: /^\.\.\// }, (args) => {
          if (!dirname(args.importer).endsWith('native-backend')) return undefined;
          if (args.path === '../index.js') return { path: '@kiln/core', external: true };
          return {
            errors: [
              { text: `src/native-backend: import core's runtime values from '../index.js', not '${args.path}'` },
            ],
          };
        });
      },
    },
  ],
});
