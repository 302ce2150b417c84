import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Packs every publishable package once (pnpm pack) for the tests that need tarballs.
    globalSetup: ['test/setup/pack-packages.ts'],
    reporters: ['default', ['json', { outputFile: 'test-results.json' }]],
    testTimeout: 180_000,
    hookTimeout: 300_000,
  },
});
