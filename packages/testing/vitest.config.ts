import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// Tests run against core's sources (one copy of the engine for the kit and the tests), so they do not wait for core's build.
const coreSource = (path: string): string => fileURLToPath(new URL(`../core/src/${path}`, import.meta.url));

export default defineConfig({
  resolve: {
    alias: [
      { find: /^@kiln\/core\/internal$/, replacement: coreSource('internal/index.ts') },
      { find: /^@kiln\/core$/, replacement: coreSource('index.ts') },
    ],
  },
  test: {
    include: ['test/**/*.test.ts'],
    reporters: ['default', ['json', { outputFile: 'test-results.json' }]],
    testTimeout: 60_000,
  },
});
