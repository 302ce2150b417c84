import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// Tests run against core's (and the trainer's and CPU backend's) sources, so they do not wait for their builds.
const coreSource = (path: string): string => fileURLToPath(new URL(`../core/src/${path}`, import.meta.url));

export default defineConfig({
  resolve: {
    alias: [
      { find: /^@kiln\/testing$/, replacement: fileURLToPath(new URL('../testing/src/index.ts', import.meta.url)) },
      { find: /^@kiln\/core\/internal$/, replacement: coreSource('internal/index.ts') },
      { find: /^@kiln\/core\/native-backend$/, replacement: coreSource('native-backend/index.ts') },
      { find: /^@kiln\/core$/, replacement: coreSource('index.ts') },
      // The training-step comparison test runs the trainer and the CPU backend from source too;
      // backend-cpu's attention is also the f32 comparison of test/attention.test.ts.
      { find: /^@kiln\/trainer$/, replacement: fileURLToPath(new URL('../trainer/src/index.ts', import.meta.url)) },
      {
        find: /^@kiln\/backend-cpu$/,
        replacement: fileURLToPath(new URL('../backend-cpu/src/index.ts', import.meta.url)),
      },
    ],
  },
  test: {
    include: ['test/**/*.test.ts'],
    reporters: ['default', ['json', { outputFile: 'test-results.json' }]],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // The simulator maps every device allocation in front of 64 KiB of inaccessible pages: a kernel
    // reading past the end of an operand stops the run, naming the kernel, block and thread (gpu-sim's
    // guard_pages.hpp), where it would otherwise read a neighbouring allocation unnoticed.
    env: { GPU_SIM_GUARD_PAGES: '1' },
  },
});
