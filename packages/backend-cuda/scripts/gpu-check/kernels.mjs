// Timings of the memory-bound kernels at training-like sizes (effective GB/s), for the report's
// "kernels" section: primitives (unary, binary, cast, copy, reduce, gather/scatterAdd, random) and the
// fused kernels (softmax, rmsNorm and layerNorm ± backward — also f32 rows with a bf16 output and
// gradient —, rope, swiglu, cross-entropy over a 50k vocabulary, AdamW), whole-tensor and
// leading-axis sums, and the multi-tensor norm and AdamW at gpt2s widths.

const BYTES = { f32: 4, f16: 2, bf16: 2, i32: 4 };

/** Rows [kernel, dtype, size, µs, GB/s] for the report section. */
export async function kernelTimings(backend, { quick, simulator }) {
  const rows = [];
  const repeats = simulator ? 1 : quick ? 5 : 20;
  const tensor = (shape, dtype, random = true) => {
    const count = shape.reduce((a, b) => a * b, 1);
    const ref = { buffer: backend.alloc(count * BYTES[dtype]), shape, dtype };
    if (random) backend.random(ref, { kind: 'uniform', low: -1, high: 1 }, 3, 0);
    return ref;
  };
  const view = (ref) => ({
    ...ref,
    strides: ref.shape.map((_, dim) => ref.shape.slice(dim + 1).reduce((a, b) => a * b, 1)),
    offset: 0,
  });
  async function time(kernel, dtype, size, bytes, call) {
    call();
    await backend.synchronize();
    const start = performance.now();
    for (let i = 0; i < repeats; i++) call();
    await backend.synchronize();
    const seconds = (performance.now() - start) / 1000 / repeats;
    rows.push([kernel, dtype, size, (seconds * 1e6).toFixed(1), (bytes / seconds / 1e9).toFixed(0)]);
  }
  const side = simulator ? 64 : 4096;
  const n = side * side;
  const [tokens, width, vocab] = simulator ? [64, 64, 512] : [8192, 1024, 50304];
  const held = [];
  const keep = (...refs) => (held.push(...refs), refs);
  try {
    for (const dtype of ['bf16', 'f32']) {
      const b = BYTES[dtype];
      const [x, y, out] = keep(tensor([n], dtype), tensor([n], dtype), tensor([n], dtype, false));
      await time('unary exp', dtype, `${n}`, 2 * n * b, () => backend.unary('exp', x, out));
      await time('binary add', dtype, `${n}`, 3 * n * b, () => backend.binary('add', view(x), view(y), out));
      // The mixed-precision step casts activations and weights both ways (gpt2s: about 270 casts a step).
      const other = dtype === 'bf16' ? 'f32' : 'bf16';
      const [converted] = keep(tensor([n], other, false));
      await time(`cast to ${other}`, dtype, `${n}`, n * (b + BYTES[other]), () => backend.cast(x, converted));
      await time('copy transpose', dtype, `${side}×${side}`, 2 * n * b, () =>
        backend.copy(
          { ...x, shape: [side, side], strides: [1, side], offset: 0 },
          { ...out, shape: [side, side], strides: [side, 1], offset: 0 },
        ),
      );
      const [sums] = keep(tensor([side], dtype, false));
      await time('reduce sum rows', dtype, `${side}×${side}`, n * b, () =>
        backend.reduce('sum', x, sums, side, side, 1),
      );
      await time('reduce sum columns', dtype, `${side}×${side}`, n * b, () =>
        backend.reduce('sum', x, sums, 1, side, side),
      );
      const [total] = keep(tensor([1], dtype, false));
      await time('reduce sum whole tensor', dtype, `${n}`, n * b, () => backend.reduce('sum', x, total, 1, n, 1));
      await time('random normal', dtype, `${n}`, n * b, () =>
        backend.random(out, { kind: 'normal', mean: 0, std: 1 }, 7, 0),
      );
      const rowsIn = { ...x, shape: [tokens, width] };
      const rowsOut = { ...out, shape: [tokens, width] };
      const [weight] = keep(tensor([width], dtype));
      const [rstd, dWeight] = keep(tensor([tokens], 'f32', false), tensor([width], 'f32', false));
      await time('softmax', dtype, `${tokens}×${width}`, 2 * tokens * width * b, () =>
        backend.softmax(rowsIn, rowsOut, tokens, width),
      );
      await time('rmsNorm', dtype, `${tokens}×${width}`, 2 * tokens * width * b, () =>
        backend.rmsNorm(rowsIn, weight, rowsOut, rstd, tokens, width, 1e-5),
      );
      // x and dy read once, dx written (rows of up to 16384 elements: one pass, the second read from cache).
      await time('rmsNormBackward', dtype, `${tokens}×${width}`, 3 * tokens * width * b, () =>
        backend.rmsNormBackward(
          rowsIn,
          weight,
          rstd,
          { ...y, shape: [tokens, width] },
          rowsOut,
          dWeight,
          tokens,
          width,
        ),
      );
      const [bias, dBias] = keep(tensor([width], dtype), tensor([width], 'f32', false));
      await time('layerNorm', dtype, `${tokens}×${width}`, 2 * tokens * width * b, () =>
        backend.layerNorm(rowsIn, weight, bias, rowsOut, tokens, width, 1e-5),
      );
      if (backend.capabilities.supports('layerNormBackward', dtype)) {
        // x and dy read once, dx written (the statistics and the later passes from cache).
        await time('layerNormBackward', dtype, `${tokens}×${width}`, 3 * tokens * width * b, () =>
          backend.layerNormBackward(
            rowsIn,
            weight,
            { ...y, shape: [tokens, width] },
            rowsOut,
            dWeight,
            dBias,
            tokens,
            width,
            1e-5,
          ),
        );
      }
      if (dtype === 'f32' && backend.capabilities.mixedPrecisionNorm) {
        // The mixed-precision step's norms: f32 residual rows in, the bf16 matmul input out, and back (x, dy, dx once each).
        const [halfRows, halfGradient] = keep(tensor([tokens, width], 'bf16', false), tensor([tokens, width], 'bf16'));
        await time('rmsNorm to bf16', dtype, `${tokens}×${width}`, tokens * width * (4 + 2), () =>
          backend.rmsNorm(rowsIn, weight, halfRows, rstd, tokens, width, 1e-5),
        );
        await time('rmsNormBackward with dy bf16', dtype, `${tokens}×${width}`, tokens * width * (4 + 2 + 4), () =>
          backend.rmsNormBackward(rowsIn, weight, rstd, halfGradient, rowsOut, dWeight, tokens, width),
        );
        await time('layerNorm to bf16', dtype, `${tokens}×${width}`, tokens * width * (4 + 2), () =>
          backend.layerNorm(rowsIn, weight, bias, halfRows, tokens, width, 1e-5),
        );
        await time('layerNormBackward with dy bf16', dtype, `${tokens}×${width}`, tokens * width * (4 + 2 + 4), () =>
          backend.layerNormBackward(rowsIn, weight, halfGradient, rowsOut, dWeight, dBias, tokens, width, 1e-5),
        );
      }
      const heads = [8, 16, tokens / 8, width / 16];
      await time('rope', dtype, heads.join('×'), 2 * tokens * width * b, () =>
        backend.rope({ ...x, shape: heads }, { ...out, shape: heads }, 0, 10000, false),
      );
      await time('swiglu', dtype, `${n}`, 3 * n * b, () => backend.swiglu(x, y, out));
      const logits = { ...x, shape: [simulator ? 8 : 256, vocab] };
      const classes = logits.shape[0];
      const [targets, loss] = keep(
        { buffer: backend.alloc(classes * 4), shape: [classes], dtype: 'i32' },
        tensor([classes], 'f32', false),
      );
      backend.fill(targets, 3);
      await time('crossEntropy', dtype, `${classes}×${vocab}`, classes * vocab * b, () =>
        backend.crossEntropy(logits, targets, loss, classes, vocab, -100),
      );
      await time('crossEntropyBackward', dtype, `${classes}×${vocab}`, 3 * classes * vocab * b, () =>
        backend.crossEntropyBackward(
          logits,
          targets,
          { ...out, shape: [classes, vocab] },
          classes,
          vocab,
          -100,
          1 / classes,
        ),
      );
      const [m, v] = keep(tensor([n], 'f32', false), tensor([n], 'f32', false));
      backend.fill(m, 0);
      backend.fill(v, 0);
      await time('adamw', dtype, `${n}`, n * (2 * b + 2 * b + 16), () =>
        backend.adamw(x, y, m, v, { lr: 1e-4, beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0.1, step: 1 }),
      );
      // The gpt2s widths (issue 15): 48 [768, 768] and 36 [2048, 768] matrices, 85M elements, as the trainer's norm and update see them.
      const pieces = simulator ? [64, 64, 192] : [...Array(48).fill(768 * 768), ...Array(36).fill(2048 * 768)];
      const elements = pieces.reduce((sum, size) => sum + size, 0);
      const grads = keep(...pieces.map((size) => tensor([size], dtype)));
      const [normSquared] = keep(tensor([1], 'f32', false));
      await time('sumOfSquaresMulti', dtype, `${pieces.length} tensors, ${elements}`, elements * b, () =>
        backend.sumOfSquaresMulti(grads, normSquared),
      );
      const params = keep(...pieces.map((size) => tensor([size], dtype)));
      const moments = keep(...pieces.flatMap((size) => [tensor([size], 'f32', false), tensor([size], 'f32', false)]));
      for (const moment of moments) backend.fill(moment, 0);
      const options = {
        lr: 1e-4,
        beta1: 0.9,
        beta2: 0.95,
        eps: 1e-8,
        step: 1,
        weightDecays: pieces.map(() => 0.1),
        gradientScale: 0.5,
      };
      await time('adamwMulti', dtype, `${pieces.length} tensors, ${elements}`, elements * (2 * b + 2 * b + 16), () =>
        backend.adamwMulti(
          params,
          grads,
          moments.filter((_, index) => index % 2 === 0),
          moments.filter((_, index) => index % 2 === 1),
          options,
        ),
      );
      const [embeddingGrad] = keep(tensor([vocab * width], dtype, false));
      const [indices] = keep({ buffer: backend.alloc(tokens * 4), shape: [tokens], dtype: 'i32' });
      backend.upload(
        indices.buffer,
        new Uint8Array(Int32Array.from({ length: tokens }, (_, position) => (position * 7919) % vocab).buffer),
      );
      await time(
        'scatterAdd (embedding backward)',
        dtype,
        `${tokens}×${width} → ${vocab} rows`,
        2 * tokens * width * b,
        () => backend.scatterAdd({ ...x, shape: [tokens * width] }, indices, embeddingGrad, 1, vocab, width),
      );
    }
  } finally {
    for (const ref of held) backend.free(ref.buffer);
  }
  return rows;
}
