// "No call from JS can crash Node": every kind of bad argument, passed straight to a GPU backend's
// native addon in a child process, must come back as a typed error (never a signal), and the same
// mistakes through the TypeScript backend must throw kiln's typed errors before reaching it. Run
// against both simulators: the checks are the shared host's.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { DTypeError, InvalidArgumentError, ShapeError, type TensorRef } from '@kiln/core';
import { describe, expect, it } from 'vitest';
import { SIMULATED_BACKENDS, title } from './support/backends.js';

interface Outcome {
  name: string;
  expectedKind: string | null;
  threw: boolean;
  kind?: string | null;
  message?: string;
}

describe.each(SIMULATED_BACKENDS)('bad arguments on the $name simulator', (target) => {
  describe.skipIf(target.skipReason !== undefined)(title(target), () => {
    it('the native addon turns every bad call into a typed error, in a child process that survives', () => {
      const script = fileURLToPath(new URL('./fixtures/bad-calls.mjs', import.meta.url));
      const child = spawnSync(process.execPath, [script, target.addonPath, target.name], {
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(child.signal).toBeNull();
      expect(child.stderr).toBe('');
      expect(child.status).toBe(0);
      const outcomes = child.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as Outcome);
      expect(outcomes.length).toBeGreaterThan(50);
      for (const outcome of outcomes) {
        if (outcome.expectedKind === null) {
          expect(outcome, outcome.name).toMatchObject({ threw: false });
          continue;
        }
        if (outcome.expectedKind === 'ANY') {
          // Misuse of the class itself: node-addon-api's own TypeError, still an exception.
          expect(outcome, outcome.name).toMatchObject({ threw: true });
          continue;
        }
        expect(outcome, outcome.name).toMatchObject({ threw: true, kind: outcome.expectedKind });
        expect(outcome.message, outcome.name).toMatch(new RegExp(`^${target.name} backend: `));
      }
    });

    it('the TypeScript backend rejects foreign, freed and out-of-range buffers with typed errors', async () => {
      const backend = target.create();
      const other = target.create();
      const mine = backend.alloc(16);
      const theirs = other.alloc(16);
      const ref = (buffer: typeof mine, shape: number[], dtype: TensorRef['dtype'] = 'f32'): TensorRef => ({
        buffer,
        shape,
        dtype,
      });
      expect(() => backend.unary('exp', ref(theirs, [4]), ref(mine, [4]))).toThrow(/did not allocate/);
      expect(() => backend.unary('exp', ref(mine, [8]), ref(mine, [8]))).toThrowError(InvalidArgumentError);
      expect(() => backend.unary('exp', ref(mine, [4], 'i32'), ref(mine, [4], 'i32'))).toThrowError(DTypeError);
      expect(() => backend.cast(ref(mine, [4]), ref(mine, [2]))).toThrowError(ShapeError);
      expect(() => backend.upload(mine, new Uint8Array(20))).toThrow(/does not fit a 16-byte buffer/);
      // Flash attention: q, k, v [1, 1, 1, 4] in `mine`; the TypeScript checks throw before the addon sees the call.
      const qkv = ref(mine, [1, 1, 1, 4]);
      const lse = ref(mine, [1, 1, 1]);
      expect(() =>
        backend.attention(ref(mine, [1, 1, 1, 4], 'i32'), qkv, qkv, null, qkv, lse, { scale: 1, causal: false }),
      ).toThrowError(DTypeError);
      expect(() =>
        backend.attention(
          ref(mine, [1, 3, 1, 1]),
          ref(mine, [1, 2, 1, 1]),
          ref(mine, [1, 2, 1, 1]),
          null,
          ref(mine, [1, 3, 1, 1]),
          ref(mine, [1, 3, 1]),
          { scale: 1, causal: false },
        ),
      ).toThrowError(ShapeError);
      expect(() =>
        backend.attention(qkv, qkv, qkv, null, qkv, lse, { scale: Number.POSITIVE_INFINITY, causal: false }),
      ).toThrowError(InvalidArgumentError);
      if (target.name === 'metal') {
        // Metal's kernels walk the mask forwards only (CUDA's take any strides inside the buffer).
        expect(() =>
          backend.attention(
            qkv,
            qkv,
            qkv,
            { ...ref(mine, [1, 1, 1, 1]), strides: [0, 0, 0, -1], offset: 0 },
            qkv,
            lse,
            { scale: 1, causal: false },
          ),
        ).toThrowError(InvalidArgumentError);
      }
      expect(() =>
        backend.attentionBackward(qkv, qkv, qkv, null, qkv, lse, qkv, qkv, ref(mine, [1, 1, 2, 2]), qkv, {
          scale: 1,
          causal: true,
        }),
      ).toThrowError(ShapeError);
      backend.free(mine);
      expect(() => backend.free(mine)).toThrow(/already freed/);
      await expect(backend.download(mine)).rejects.toThrow(/already freed/);
      backend.dispose();
      expect(() => backend.alloc(4)).toThrow(/disposed backend/);
      other.free(theirs);
      other.dispose();
    });
  });
});
