import { defineConfig } from 'tsup';

export default defineConfig({
  entry: { index: 'src/index.ts' },
  // ESM and CommonJS, each with its own .d.ts / .d.cts, so every TypeScript user gets working types.
  format: ['esm', 'cjs'],
  dts: true,
  sourcemap: false,
  clean: true,
  target: 'node20',
  // Never bundle core: the application's copy is the one whose registry your plugin joins.
  external: ['@kiln/core'],
});
