// LayerNorm's backward on the CPU backend (built dist), 1 thread: core's composition from
// primitives (composedKernels.layerNormBackward, what ran before the backend had the kernel)
// against the backend's own kernel (the WebAssembly SIMD one for f32), measured in the same run,
// alternating, the median of 7 rounds of 5 calls each.
// Usage: pnpm --filter @kiln/core --filter @kiln/backend-cpu build && node bench/layer-norm-backward.mjs
import { composedKernels } from '@kiln/core';
import { createCpuBackend } from '../dist/index.js';

const SHAPES = [
  [512, 64],
  [512, 768],
  [2048, 768],
];
const ROUNDS = 7;
const CALLS = 5;

const backend = createCpuBackend({ threads: 1 });
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const rows = [['shape', 'composed ms', 'kernel ms', 'speed-up']];
try {
  for (const [count, cols] of SHAPES) {
    const tensor = (shape) => {
      const elements = shape.reduce((a, b) => a * b, 1);
      const ref = { buffer: backend.alloc(elements * 4), shape, dtype: 'f32' };
      backend.random(ref, { kind: 'uniform', low: -1, high: 1 }, 3, 0);
      return ref;
    };
    const [x, weight, dy, dx, dWeight, dBias] = [
      tensor([count, cols]),
      tensor([cols]),
      tensor([count, cols]),
      tensor([count, cols]),
      tensor([cols]),
      tensor([cols]),
    ];
    const args = [x, weight, dy, dx, dWeight, dBias, count, cols, 1e-5];
    const forms = {
      composed: () => composedKernels.layerNormBackward(backend, ...args),
      kernel: () => backend.layerNormBackward(...args),
    };
    const times = { composed: [], kernel: [] };
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, run] of Object.entries(forms)) {
        run();
        const start = performance.now();
        for (let i = 0; i < CALLS; i++) run();
        await backend.synchronize();
        times[name].push((performance.now() - start) / CALLS);
      }
    }
    const [composed, kernel] = [median(times.composed), median(times.kernel)];
    rows.push([`${count}×${cols}`, composed.toFixed(3), kernel.toFixed(3), `${(composed / kernel).toFixed(1)}×`]);
    for (const ref of [x, weight, dy, dx, dWeight, dBias]) backend.free(ref.buffer);
  }
} finally {
  backend.dispose();
}
const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)));
for (const row of rows) console.log(row.map((cell, column) => cell.padEnd(widths[column])).join('  '));
