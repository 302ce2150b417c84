/**
 * Core must not be CPU-shaped: on a device whose buffers are opaque, whose reads are
 * asynchronous only, and which has no fused kernels (everything composed from primitives),
 * a full forward/backward/AdamW step runs without moving any weight to the host (reading the
 * loss downloads the loss and the 16-byte flag of the device-side index checks, nothing else).
 */
import { describe, expect, it } from 'vitest';
import * as kiln from '@kiln/core';
import type { Tensor } from '@kiln/core';
import { createReferenceBackend } from '../src/reference-backend.js';
import { UnsupportedKernelError } from '@kiln/core';

describe('simulated device (opaque buffers, async reads, primitives only)', () => {
  it('runs a training step with zero device→host transfers', async () => {
    const device = createReferenceBackend({ name: 'simulated-device', fused: false, asyncOnly: true });
    const options = { backend: device };
    const vocab = 11,
      dim = 8,
      heads = 2,
      time = 5;
    const parameters: Tensor[] = [
      kiln.randomNormal([vocab, dim], { ...options, seed: 1, std: 0.5 }),
      kiln.ones([dim], options),
      kiln.randomNormal([dim, 3 * dim], { ...options, seed: 2, std: 0.3 }),
      kiln.randomNormal([dim, vocab], { ...options, seed: 3, std: 0.3 }),
    ].map((parameter) => parameter.requireGrad());
    const moments = parameters.map((parameter) => [
      kiln.zeros(parameter.shape, options),
      kiln.zeros(parameter.shape, options),
    ]);
    const ids = kiln.tensor(new Int32Array([1, 4, 2, 9, 3]), [1, time], options);
    const targets = kiln.tensor(new Int32Array([4, 2, 9, 3, -100]), [1, time], options);
    device.resetTransfers();

    const losses: number[] = [];
    for (let step = 1; step <= 3; step++) {
      const loss = kiln.tidy(() => {
        const [table, norm, qkv, head] = parameters;
        const x = kiln.rmsNorm(kiln.embedding(table, ids), norm);
        const [q, k, v] = kiln
          .chunk(kiln.matmul(x, qkv), 3, -1)
          .map((part) => kiln.rope(kiln.permute(kiln.reshape(part, [1, time, heads, dim / heads]), [0, 2, 1, 3])));
        const attended = kiln.reshape(kiln.permute(kiln.attention(q, k, v, { causal: true }), [0, 2, 1, 3]), [
          1,
          time,
          dim,
        ]);
        const logits = kiln.matmul(kiln.swiglu(attended, attended), head);
        return kiln.crossEntropy(logits, targets);
      });
      kiln.backward(loss);
      parameters.forEach((parameter, index) => {
        kiln.adamwUpdate(parameter, parameter.grad!, moments[index][0], moments[index][1], {
          lr: 0.05,
          beta1: 0.9,
          beta2: 0.95,
          eps: 1e-8,
          weightDecay: 0.1,
          step,
        });
        parameter.grad!.dispose();
        parameter.grad = null;
      });
      expect(device.transfers.downloads).toBe(0);
      losses.push(await loss.item());
      // The loss, and the 16-byte flag of core's device-side index checks (embedding ids, targets).
      expect(device.transfers.downloads).toBe(2);
      device.resetTransfers();
      loss.dispose();
    }
    expect(losses[2]).toBeLessThan(losses[0]);
    expect(() => parameters[0].dataSync()).toThrow(UnsupportedKernelError);
    for (const tensor of [...parameters, ...moments.flat(), ids, targets]) tensor.dispose();
    expect(device.memory().bufferCount).toBe(0);
  });
});
