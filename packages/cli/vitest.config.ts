import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// Tests run against core's sources, so they do not wait for core's build.
const coreSource = (path: string): string => fileURLToPath(new URL(`../core/src/${path}`, import.meta.url));

export default defineConfig({
  resolve: {
    alias: [
      { find: /^@kiln\/core$/, replacement: coreSource('index.ts') },
      {
        find: /^@kiln\/backend-cpu$/,
        replacement: fileURLToPath(new URL('../backend-cpu/src/index.ts', import.meta.url)),
      },
      { find: /^@kiln\/trainer$/, replacement: fileURLToPath(new URL('../trainer/src/index.ts', import.meta.url)) },
    ],
  },
  test: {
    include: ['test/**/*.test.ts'],
    reporters: ['default', ['json', { outputFile: 'test-results.json' }]],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // The CUDA simulator guards every device allocation with inaccessible pages: a kernel reading
    // past an operand stops the run, naming the kernel, block and thread (gpu-sim's guard_pages.hpp).
    env: { GPU_SIM_GUARD_PAGES: '1' },
  },
});
