import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    reporters: ['default', ['json', { outputFile: 'test-results.json' }]],
    // Compiling the self-test with g++ takes several seconds on 2 busy cores.
    testTimeout: 240_000,
    hookTimeout: 240_000,
  },
});
