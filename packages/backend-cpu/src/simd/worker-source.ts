/**
 * The code every worker thread of the pool runs, as a string (started with `eval: true`, so the
 * pool works the same from the bundled package, from sources under a test runner, in ESM and
 * in CommonJS). A worker instantiates the kernel module on the shared heap, then loops: wait
 * for the generation counter to move, run the calls posted in its slot of the job board, count
 * itself done. It never allocates and never touches tensors except through the kernels.
 *
 * Control words (Int32Array over a SharedArrayBuffer): [0] generation (−1 = exit), [1] workers
 * still running the current job, [2] first failing thread (workers are threads 1…N−1; 0 = none).
 * Job board (Float64Array): per thread `SLOT` numbers: call count, then per call: function
 * index, argument count, arguments.
 */

/** Numbers in one thread's slot of the job board. */
export const JOB_SLOT_NUMBERS = 1024;

/** Control word indices. */
export const CONTROL = { generation: 0, running: 1, failedThread: 2, spinMicroseconds: 3, words: 4 } as const;

/**
 * How long a worker spins on the generation counter before it sleeps (µs), when spinning is on.
 * Spinning saves the ~10 µs futex wake-up between back-to-back kernels on an idle machine, but
 * on a busy one (other processes on the cores) a spinning worker takes the core the caller
 * needs, and a 2-thread job then costs ~200 µs instead of ~12 µs (measured on the 2-core VMs).
 * So the caller turns it on (control word `spinMicroseconds`) only while its jobs come back on
 * time, and off at the first late one.
 */
export const WORKER_SPIN_MICROSECONDS = 50;

/** The worker's program. workerData: { module, memory, control, board, messages, exportNames, index, generation }. */
export const WORKER_SOURCE = `
'use strict';
const { workerData } = require('node:worker_threads');
const { module, memory, control, board, messages, exportNames, index, generation: startGeneration } = workerData;
const instance = new WebAssembly.Instance(module, { env: { memory } });
const functions = exportNames.map((name) => instance.exports[name]);
const words = new Int32Array(control);
const jobs = new Float64Array(board);
const messageBytes = new Uint8Array(messages);
const SLOT = ${JOB_SLOT_NUMBERS};
// The generation when the pool made this worker: a job posted while it was starting still runs.
let seen = startGeneration;
for (;;) {
  let generation = Atomics.load(words, ${CONTROL.generation});
  if (generation === seen) {
    const until = performance.now() + Atomics.load(words, ${CONTROL.spinMicroseconds}) / 1000;
    while ((generation = Atomics.load(words, ${CONTROL.generation})) === seen && performance.now() < until) {}
    while ((generation = Atomics.load(words, ${CONTROL.generation})) === seen) Atomics.wait(words, ${CONTROL.generation}, seen);
  }
  if (generation === -1) break;
  seen = generation;
  try {
    const base = index * SLOT;
    const calls = jobs[base];
    let position = base + 1;
    for (let c = 0; c < calls; c++) {
      const fn = functions[jobs[position]];
      const count = jobs[position + 1];
      const args = jobs.subarray(position + 2, position + 2 + count);
      fn(...args);
      position += 2 + count;
    }
  } catch (error) {
    if (Atomics.compareExchange(words, ${CONTROL.failedThread}, 0, index) === 0) {
      const text = new TextEncoder().encode(String(error && error.stack || error)).subarray(0, messageBytes.length);
      messageBytes.fill(0);
      messageBytes.set(text);
    }
  }
  if (Atomics.sub(words, ${CONTROL.running}, 1) === 1) Atomics.notify(words, ${CONTROL.running});
}
`;
