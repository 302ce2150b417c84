// kiln bench's TensorFlow.js peer: the train step of one of kiln's reference models on
// TensorFlow.js's WebAssembly backend (SIMD; its threads do not start under Node), the JS engine
// people reach for instead of kiln. Same model as train_torch.py (kiln's Llama decoder), with two
// TF.js necessities: attention is written out (softmax(q·kᵀ/√hd + mask)·v; TF.js has no fused
// attention), and the embedding is a one-hot matmul (the wasm backend lacks the gradient of
// gather). AdamW = decoupled decay on matrices, then tf.train.adam, after a global-norm clip.
//
// Usage (kiln bench runs it): node train-tfjs.mjs --steps 10 --warmup 2 --config '{"name":"tiny",...}'
// Prints one JSON object: { name, tfjs, backend, msPerStep, minMsPerStep, tokensPerSecond, loss },
// or exits 3 with a message when TF.js is not installed (--probe only checks that it loads). Packages resolve from this package's
// node_modules (dev dependencies of @kiln/cli), then from $KILN_PEERS_DIR.
import { createRequire } from 'node:module';
import path from 'node:path';

const argument = (name, fallback) =>
  process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : fallback;

function loadTfjs() {
  const roots = [
    import.meta.url,
    ...(process.env.KILN_PEERS_DIR ? [path.join(process.env.KILN_PEERS_DIR, 'package.json')] : []),
  ];
  const failures = [];
  for (const root of roots) {
    try {
      const require = createRequire(root);
      const tf = require('@tensorflow/tfjs');
      const wasm = require('@tensorflow/tfjs-backend-wasm');
      wasm.setWasmPaths(path.dirname(require.resolve('@tensorflow/tfjs-backend-wasm')) + path.sep);
      return tf;
    } catch (error) {
      failures.push(String(error.message ?? error).split('\n')[0]);
    }
  }
  console.error(`TensorFlow.js is not installed: ${failures.join('; ')}`);
  process.exit(3);
}

async function main() {
  if (process.argv.includes('--probe')) {
    // kiln bench asks whether TF.js loads here before it measures.
    loadTfjs();
    return;
  }
  const steps = Number(argument('--steps', '10'));
  const warmup = Number(argument('--warmup', '2'));
  const config = JSON.parse(argument('--config', '{}'));
  const { vocab, ctx, d, layers, heads, kvHeads, hidden, batch, eps, theta } = config;
  if (kvHeads !== heads) throw new Error('the TF.js peer implements kvHeads = heads only');
  const warn = console.warn;
  console.warn = () => {}; // TF.js suggests tfjs-node on start-up; keep the output one JSON line.
  const tf = loadTfjs();
  if (!(await tf.setBackend('wasm'))) throw new Error('tf.setBackend("wasm") failed');
  await tf.ready();
  console.warn = warn;

  const hd = d / heads;
  const half = hd / 2;
  const tokens = batch * ctx;
  let seed = 12345;
  const random = () => {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
    return seed / 2 ** 32 - 0.5;
  };
  const variables = [];
  const matrix = (rows, cols) => {
    const values = Float32Array.from({ length: rows * cols }, () => random() * 0.04);
    const variable = tf.variable(tf.tensor2d(values, [rows, cols]));
    variables.push(variable);
    return variable;
  };
  const vector = (size) => {
    const variable = tf.variable(tf.ones([size]));
    variables.push(variable);
    return variable;
  };
  // Weights are [in, out] here (x·W); the sizes and FLOPs are kiln's.
  const embedding = matrix(vocab, d);
  const blocks = Array.from({ length: layers }, () => ({
    n1: vector(d),
    wq: matrix(d, d),
    wk: matrix(d, d),
    wv: matrix(d, d),
    wo: matrix(d, d),
    n2: vector(d),
    w1: matrix(d, hidden),
    w3: matrix(d, hidden),
    w2: matrix(hidden, d),
  }));
  const finalNorm = vector(d);
  const head = matrix(d, vocab);

  const cosines = new Float32Array(ctx * hd);
  const sines = new Float32Array(ctx * hd);
  const maskValues = new Float32Array(ctx * ctx);
  for (let t = 0; t < ctx; t++) {
    for (let i = 0; i < half; i++) {
      const angle = t * Math.pow(theta, (-2 * i) / hd);
      cosines[t * hd + i] = cosines[t * hd + i + half] = Math.cos(angle);
      sines[t * hd + i] = sines[t * hd + i + half] = Math.sin(angle);
    }
    for (let s = t + 1; s < ctx; s++) maskValues[t * ctx + s] = -1e9;
  }
  const cos = tf.tensor2d(cosines, [ctx, hd]);
  const sin = tf.tensor2d(sines, [ctx, hd]);
  const mask = tf.tensor2d(maskValues, [ctx, ctx]);

  const rmsNorm = (x, weight) => tf.mul(tf.mul(x, tf.rsqrt(tf.add(tf.mean(tf.square(x), -1, true), eps))), weight);
  const split = (x) =>
    tf.reshape(tf.transpose(tf.reshape(x, [batch, ctx, heads, hd]), [0, 2, 1, 3]), [batch * heads, ctx, hd]);
  const rope = (x) => {
    const rotated = tf.concat(
      [tf.neg(tf.slice(x, [0, 0, half], [-1, -1, half])), tf.slice(x, [0, 0, 0], [-1, -1, half])],
      2,
    );
    return tf.add(tf.mul(x, cos), tf.mul(rotated, sin));
  };
  const lossOf = (ids, targets) => {
    let x = tf.matMul(tf.cast(tf.oneHot(ids, vocab), 'float32'), embedding);
    for (const block of blocks) {
      const h = rmsNorm(x, block.n1);
      const q = rope(split(tf.matMul(h, block.wq)));
      const k = rope(split(tf.matMul(h, block.wk)));
      const v = split(tf.matMul(h, block.wv));
      const probabilities = tf.softmax(tf.add(tf.mul(tf.matMul(q, k, false, true), 1 / Math.sqrt(hd)), mask));
      const y = tf.reshape(
        tf.transpose(tf.reshape(tf.matMul(probabilities, v), [batch, heads, ctx, hd]), [0, 2, 1, 3]),
        [tokens, d],
      );
      x = tf.add(x, tf.matMul(y, block.wo));
      const h2 = rmsNorm(x, block.n2);
      const gate = tf.matMul(h2, block.w1);
      x = tf.add(x, tf.matMul(tf.mul(tf.mul(gate, tf.sigmoid(gate)), tf.matMul(h2, block.w3)), block.w2));
    }
    const logits = tf.matMul(rmsNorm(x, finalNorm), head);
    return tf.div(tf.neg(tf.sum(tf.mul(tf.cast(tf.oneHot(targets, vocab), 'float32'), tf.logSoftmax(logits)))), tokens);
  };

  const lr = 3e-4;
  const optimizer = tf.train.adam(lr, 0.9, 0.95, 1e-8);
  const batchAt = (step) => {
    let state = ((step + 1) * 2654435761) >>> 0;
    const window = Int32Array.from({ length: batch * (ctx + 1) }, () => {
      state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
      return state % vocab;
    });
    const ids = new Int32Array(tokens);
    const targets = new Int32Array(tokens);
    for (let row = 0; row < batch; row++) {
      ids.set(window.subarray(row * (ctx + 1), row * (ctx + 1) + ctx), row * ctx);
      targets.set(window.subarray(row * (ctx + 1) + 1, (row + 1) * (ctx + 1)), row * ctx);
    }
    return { ids: tf.tensor1d(ids, 'int32'), targets: tf.tensor1d(targets, 'int32') };
  };
  const times = [];
  let loss = Number.NaN;
  for (let step = 0; step < warmup + steps; step++) {
    const { ids, targets } = batchAt(step);
    const start = performance.now();
    const value = tf.tidy(() => {
      const { value: lossValue, grads } = tf.variableGrads(() => lossOf(ids, targets), variables);
      const names = Object.keys(grads);
      const norm = tf.sqrt(tf.addN(names.map((name) => tf.sum(tf.square(grads[name])))));
      const clip = tf.minimum(tf.scalar(1), tf.div(tf.scalar(1), tf.add(norm, 1e-6)));
      for (const variable of variables) if (variable.rank >= 2) variable.assign(tf.mul(variable, 1 - lr * 0.1));
      optimizer.applyGradients(Object.fromEntries(names.map((name) => [name, tf.mul(grads[name], clip)])));
      return lossValue;
    });
    loss = value.dataSync()[0];
    value.dispose();
    if (step >= warmup) times.push(performance.now() - start);
    ids.dispose();
    targets.dispose();
  }
  times.sort((a, b) => a - b);
  const middle = times.length >> 1;
  const median = times.length % 2 === 1 ? times[middle] : (times[middle - 1] + times[middle]) / 2;
  console.log(
    JSON.stringify({
      name: config.name,
      tfjs: tf.version_core,
      backend: tf.getBackend(),
      msPerStep: median,
      minMsPerStep: times[0],
      tokensPerSecond: tokens / (median / 1000),
      loss,
    }),
  );
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error?.stack ?? String(error));
    process.exit(1);
  },
);
