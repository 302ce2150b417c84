import { defineConfig } from 'tsup';

// dist/ is emptied by the build script first (the two builds below run concurrently).

export default defineConfig([
  {
    // The library (runCli and friends): ESM and CommonJS, each with its own types.
    entry: { index: 'src/index.ts' },
    format: ['esm', 'cjs'],
    dts: true,
    // import.meta.url (package.json, the embedded corpus) works in the CommonJS build too.
    shims: true,
    // No source maps: they would map to sources the package does not ship.
    sourcemap: false,
    target: 'node20',
  },
  {
    // The `kiln` binary's entry (bin/kiln.js imports it): ESM only, it uses top-level await.
    entry: { main: 'src/main.ts' },
    format: ['esm'],
    sourcemap: false,
    target: 'node20',
  },
]);
