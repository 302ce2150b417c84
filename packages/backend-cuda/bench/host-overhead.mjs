#!/usr/bin/env node
// Host cost per op: N tiny ops through @kiln/core's public ops on a CudaBackend whose addon does
// nothing (a fake: every kernel method returns at once), so the time is all TypeScript — core's
// op (shape/dtype inference, output allocation, autograd bookkeeping), the NativeKernelBackend
// layer's checks and argument objects — and, with --simulator, once more on the CPU simulator
// addon (adds the C++ host side: argument reading, checks, the launch description; the
// simulator's kernel execution is included, so only compare simulator figures with each other).
//
// --step adds the host time of a whole training step of the tiny model on the fake addon (every
// kernel, fused ones included, is a no-op): eager (every op through core, the backend layer and
// the addon) against CUDA-graphed (upload the batch and the optimizer's scalars, one replay —
// forward, backward, norm, clip and AdamW), the graphed step read every step (runTrainStep: one
// download of loss and norm per step) and as `kiln train` runs it (runTrainStepDeferred, the
// values read every 10th step, the default logInterval), the ratios in the same run. The fake's
// download resolves at once, so these are host costs only: on a GPU each read also waits for the
// device to finish, which the deferred form does once per 10 steps.
//
//   node bench/host-overhead.mjs [--ops N] [--rounds R] [--simulator] [--step] [--json]
// Prints µs/op per op kind (median of R rounds of N ops each), then the same ops split by layer on
// the fake addon: the core op (everything), the NativeKernelBackend method alone (its checks and
// argument objects, called with ready-made refs) and the addon call alone; core's own share is
// the first minus the second.
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { add, cast, matmul, mul, ones, setBackend, sum, tidy } from '@kiln/core';
import {
  createLlamaModel,
  createMoments,
  disposeMoments,
  DynamicLossScaler,
  MODEL_PRESETS,
  readDeferredSteps,
  runTrainStep,
  runTrainStepDeferred,
  StepGraphRunner,
} from '@kiln/trainer';
import { CudaBackend } from '../dist/index.js';

const argv = process.argv.slice(2);
const flag = (name) => argv.includes(name);
const value = (name, fallback) => {
  const index = argv.indexOf(name);
  return index >= 0 ? Number(argv[index + 1]) : fallback;
};
const ops = value('--ops', 20000);
const rounds = value('--rounds', 5);

/** An addon whose Backend accepts every call and does no work (alloc hands out ids). */
function fakeAddon() {
  class Backend {
    constructor() {
      this.nextId = 1;
      this.sizes = new Map();
    }
    alloc(byteLength) {
      this.sizes.set(this.nextId, byteLength);
      return this.nextId++;
    }
    captureBegin() {
      return 1;
    }
    deviceInfo() {
      return { index: 0, name: 'fake device', major: 9, minor: 0, totalBytes: 80e9, multiprocessors: 132 };
    }
    matmulInfo() {
      return {
        path: 'kiln',
        requested: 'kiln',
        cublasLocation: '',
        cublasVersion: '',
        cublasReason: 'fake addon',
        allowTf32: false,
        cublasCalls: 0,
      };
    }
    memory() {
      return { allocatedBytes: 0, bufferCount: 0 };
    }
    synchronize() {
      return Promise.resolve();
    }
    download(id) {
      return Promise.resolve(new Uint8Array(this.sizes.get(id) ?? 0));
    }
  }
  const kernels = [
    'unary',
    'binary',
    'where',
    'reduce',
    'matmul',
    'copy',
    'gather',
    'scatterAdd',
    'cast',
    'fill',
    'random',
  ];
  const fused = [
    'softmax',
    'logSoftmax',
    'softmaxBackward',
    'rmsNorm',
    'rmsNormBackward',
    'layerNorm',
    'rope',
    'swiglu',
    'swigluBackward',
    'crossEntropy',
    'crossEntropyBackward',
    'adamw',
    'sumOfSquaresMulti',
    'adamwMulti',
    'adamwMultiDeviceScalars',
    'attention',
    'attentionBackward',
  ];
  const graphs = ['captureEnd', 'captureAbort', 'graphReplay', 'graphDestroy'];
  for (const method of ['free', 'upload', 'emptyCache', 'dispose', ...kernels, ...fused, ...graphs]) {
    Backend.prototype[method] = function noWork() {};
  }
  return { Backend, buildInfo: () => ({ flavor: 'fake' }) };
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

async function measure(backend, label) {
  setBackend(backend);
  const a = ones([4, 8], { backend });
  const b = ones([4, 8], { backend });
  const w = ones([8, 8], { backend });
  const cases = {
    'add [4,8]': () => add(a, b),
    'mul [4,8]': () => mul(a, b),
    'matmul [4,8]·[8,8]': () => matmul(a, w),
    'sum [4,8]': () => sum(a),
    'cast f32→bf16 [4,8]': () => cast(a, 'bf16'),
  };
  const results = {};
  for (const [name, run] of Object.entries(cases)) {
    const samples = [];
    for (let round = 0; round <= rounds; round++) {
      const start = performance.now();
      tidy(() => {
        for (let index = 0; index < ops; index++) run().dispose();
      });
      await backend.synchronize();
      const elapsed = performance.now() - start;
      if (round > 0) samples.push((elapsed * 1000) / ops);
    }
    results[name] = median(samples);
  }
  for (const tensor of [a, b, w]) tensor.dispose();
  return { label, microsecondsPerOp: results };
}

/** µs per call of `run` (median of the rounds), `ops` calls a round. */
function timeCalls(run) {
  const samples = [];
  for (let round = 0; round <= rounds; round++) {
    const start = performance.now();
    for (let index = 0; index < ops; index++) run();
    if (round > 0) samples.push(((performance.now() - start) * 1000) / ops);
  }
  return median(samples);
}

/** The per-layer split on the fake addon: core op → NativeKernelBackend method → addon call. */
function measureLayers(backend) {
  setBackend(backend);
  const a = ones([4, 8], { backend });
  const b = ones([4, 8], { backend });
  const w = ones([8, 8], { backend });
  // Ready-made arguments: the layer below core is timed without building them.
  const ref = (tensor) => ({ buffer: tensor.storage.buffer, shape: tensor.shape, dtype: tensor.dtype });
  const view = (tensor) => ({
    buffer: tensor.storage.buffer,
    shape: tensor.shape,
    dtype: tensor.dtype,
    strides: [8, 1],
    offset: 0,
  });
  const out = ones([4, 8], { backend });
  const native = backend.native;
  const [viewA, viewB, refA, refW, refOut] = [view(a), view(b), ref(a), ref(w), ref(out)];
  const [idA, idB, idW, idOut] = [a, b, w, out].map((tensor) => tensor.storage.buffer.id);
  const matmulParams = {
    batch: 1,
    m: 4,
    n: 8,
    k: 8,
    transposeA: false,
    transposeB: false,
    batchStrideA: 0,
    batchStrideB: 0,
  };
  const layers = {
    'add [4,8]': {
      core: () => tidy(() => add(a, b)).dispose(),
      backend: () => backend.binary('add', viewA, viewB, refOut),
      addon: () => native.binary(0, idA, idB, idOut),
    },
    'matmul [4,8]·[8,8]': {
      core: () => tidy(() => matmul(a, w)).dispose(),
      backend: () => backend.matmul(refA, refW, refOut, matmulParams),
      addon: () => native.matmul(idA, idW, idOut),
    },
  };
  const rows = {};
  for (const [name, calls] of Object.entries(layers)) {
    const core = timeCalls(calls.core);
    const nativeBackend = timeCalls(calls.backend);
    const addon = timeCalls(calls.addon);
    rows[name] = {
      coreOp: core,
      coreOnly: Math.max(0, core - nativeBackend),
      nativeBackend: Math.max(0, nativeBackend - addon),
      addonCall: addon,
    };
  }
  for (const tensor of [a, b, w, out]) tensor.dispose();
  return rows;
}

/**
 * Host ms per training step of the tiny preset on `backend` (median and mean of the timed steps),
 * eager or CUDA-graphed; `readEvery` > 1: runTrainStepDeferred, every unread step read at steps
 * divisible by it (the read's time counted in that step).
 */
async function measureStep(backend, cudaGraph, readEvery = 1) {
  setBackend(backend);
  const { model: modelConfig, batchSize } = MODEL_PRESETS.tiny;
  const model = createLlamaModel(modelConfig, { backend, seed: 1 });
  const moments = createMoments(model.parameters);
  const graph = new StepGraphRunner(backend, cudaGraph, () => {});
  const environment = {
    model,
    moments,
    backend,
    graph,
    scaler: new DynamicLossScaler({ enabled: false }),
    contextLength: modelConfig.contextLength,
    notice: () => {},
    optimizer: { lr: 1e-3, beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0.1, gradClip: 1 },
    forwardOptions: { attention: 'flash', checkpointActivations: false, computeDType: 'bf16' },
  };
  const counters = { microBatchSize: batchSize, optimizerStep: 0 };
  const tokens = new Int32Array(batchSize * modelConfig.contextLength).map((_, index) => index % modelConfig.vocabSize);
  const samples = [];
  try {
    for (let step = 1; step <= 3 + rounds * 4; step++) {
      const start = performance.now();
      const batch = { step, batchSize, inputs: tokens, targets: tokens, lr: 1e-3 };
      if (readEvery === 1) await runTrainStep(environment, counters, batch);
      else {
        await runTrainStepDeferred(environment, counters, batch);
        if (step % readEvery === 0) await readDeferredSteps(environment, counters);
      }
      if (step > 3) samples.push(performance.now() - start);
    }
    await readDeferredSteps(environment, counters);
    const mean = samples.reduce((total, value) => total + value, 0) / samples.length;
    return { msPerStep: median(samples), meanMsPerStep: mean, phase: graph.phase };
  } finally {
    graph.release();
    disposeMoments(moments);
    model.dispose();
  }
}

const reports = [];
const fake = new CudaBackend(fakeAddon());
reports.push(await measure(fake, 'fake addon (TypeScript only)'));
const layers = measureLayers(fake);
const step = flag('--step')
  ? {
      eager: await measureStep(fake, 'off'),
      graphed: await measureStep(fake, 'auto'),
      graphedDeferred: await measureStep(fake, 'auto', 10),
    }
  : undefined;
if (flag('--simulator')) {
  const path = fileURLToPath(new URL('../build/sim/Release/kiln_cuda_sim.node', import.meta.url));
  const simulator = new CudaBackend(createRequire(import.meta.url)(path), { matmul: 'kiln' });
  reports.push(await measure(simulator, 'CPU simulator addon (TypeScript + C++ host + simulated kernels)'));
  simulator.dispose();
}
if (flag('--json')) {
  console.log(JSON.stringify({ ops, rounds, node: process.version, reports, layers, step }));
} else {
  console.log(`host cost per op (median of ${rounds} rounds × ${ops} ops, node ${process.version}):`);
  for (const report of reports) {
    console.log(`  ${report.label}`);
    for (const [name, microseconds] of Object.entries(report.microsecondsPerOp))
      console.log(`    ${name.padEnd(22)} ${microseconds.toFixed(2).padStart(8)} µs/op`);
  }
  console.log('  by layer on the fake addon (µs/call; core op = core only + native-backend + addon call):');
  console.log(
    `    ${'op'.padEnd(22)} ${'core op'.padStart(9)} ${'core only'.padStart(10)} ${'native-backend'.padStart(15)} ${'addon call'.padStart(11)}`,
  );
  for (const [name, row] of Object.entries(layers)) {
    console.log(
      `    ${name.padEnd(22)} ${row.coreOp.toFixed(2).padStart(9)} ${row.coreOnly.toFixed(2).padStart(10)} ${row.nativeBackend.toFixed(2).padStart(15)} ${row.addonCall.toFixed(2).padStart(11)}`,
    );
  }
  if (step) {
    console.log('  host time of a tiny-preset bf16 training step on the fake addon (ms/step, median and mean):');
    const line = (label, result) =>
      console.log(
        `    ${label.padEnd(34)} ${result.msPerStep.toFixed(3).padStart(9)} ${result.meanMsPerStep.toFixed(3).padStart(9)} ms  (${(step.eager.meanMsPerStep / result.meanMsPerStep).toFixed(1)}× less host time than eager; graph ${result.phase})`,
      );
    line('eager', step.eager);
    line('graphed, read every step', step.graphed);
    line('graphed, read every 10th step', step.graphedDeferred);
  }
}
