import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// Tests run against core's sources, so they do not wait for core's build.
const coreSource = (path: string): string => fileURLToPath(new URL(`../core/src/${path}`, import.meta.url));

export default defineConfig({
  resolve: {
    alias: [
      { find: /^@kiln\/core\/testing$/, replacement: coreSource('testing/index.ts') },
      { find: /^@kiln\/core$/, replacement: coreSource('index.ts') },
      // backend-cpu's attention is the f32 comparison of test/attention.test.ts.
      { find: /^@kiln\/backend-cpu$/, replacement: fileURLToPath(new URL('../backend-cpu/src/index.ts', import.meta.url)) },
    ],
  },
  test: {
    include: ['test/**/*.test.ts'],
    reporters: ['default', ['json', { outputFile: 'test-results.json' }]],
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});
