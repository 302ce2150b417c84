import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// Tests run against the workspace's sources (one copy of core for everything), so they do not wait for builds.
const source = (path: string): string => fileURLToPath(new URL(`../${path}`, import.meta.url));

export default defineConfig({
  resolve: {
    alias: [
      { find: /^@kiln\/testing$/, replacement: source('testing/src/index.ts') },
      { find: /^@kiln\/core\/internal$/, replacement: source('core/src/internal/index.ts') },
      { find: /^@kiln\/core\/native-backend$/, replacement: source('core/src/native-backend/index.ts') },
      { find: /^@kiln\/core$/, replacement: source('core/src/index.ts') },
      { find: /^@kiln\/backend-cpu$/, replacement: source('backend-cpu/src/index.ts') },
      { find: /^@kiln\/trainer$/, replacement: source('trainer/src/index.ts') },
      { find: /^@kiln\/backend-cuda$/, replacement: source('backend-cuda/src/index.ts') },
      { find: /^@kiln\/backend-metal$/, replacement: source('backend-metal/src/index.ts') },
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
