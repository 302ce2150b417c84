/**
 * Planted bugs in a FlashAttention-2 style backward that walks keys in blocks of 64 and, for each
 * block, the queries that can see it (causal: from the first query whose limit reaches the
 * block's first key). The mistake: dV's query range starts one key block late, at the first
 * query that sees the next block — the causal key-block range bug that survived the simulated kit
 * at Tq=40/Tk=100, Tq=5/Tk=3 and Tq=20/Tk=70 until the kit had causal backward cases across
 * Tq ≶ Tk with sequences longer than one block.
 */
import type { AttentionParams, StridedView, TensorRef } from '@kiln/core';
import type { ReferenceBackend } from '../../src/index.js';
import { load, store, type PlantedBug } from './host.js';

const KEY_BLOCK = 64;

/** How the backward may go wrong (every flag false: a correct kernel). */
interface BackwardMistakes {
  /** dV's causal query range per key block starts at the first query of the next block. */
  valueRangeOneBlockLate?: boolean;
}

/** The first query row (clamped to [0, Tq]) whose causal limit i + (Tk − Tq) reaches key `key`. */
function firstQueryFor(key: number, lengthQ: number, lengthK: number, causal: boolean): number {
  if (!causal) return 0;
  return Math.min(lengthQ, Math.max(0, key - (lengthK - lengthQ)));
}

function flashAttentionBackward(base: ReferenceBackend, mistakes: BackwardMistakes) {
  return {
    attentionBackward(
      q: TensorRef,
      k: TensorRef,
      v: TensorRef,
      mask: StridedView | null,
      out: TensorRef,
      lse: TensorRef,
      dOut: TensorRef,
      dq: TensorRef,
      dk: TensorRef,
      dv: TensorRef,
      params: AttentionParams,
    ): void {
      const [batch, headsQ, lengthQ, depth] = q.shape;
      const [headsKV, lengthK] = [k.shape[1], k.shape[2]];
      const [queries, keys, values, output, logSumExp, outputGradient] = [
        load(base, q),
        load(base, k),
        load(base, v),
        load(base, out),
        load(base, lse),
        load(base, dOut),
      ];
      const maskValues = mask ? load(base, mask) : null;
      const [queryGradient, keyGradient, valueGradient] = [
        new Float64Array(queries.length),
        new Float64Array(keys.length),
        new Float64Array(values.length),
      ];
      const shift = lengthK - lengthQ;
      for (let b = 0; b < batch; b++) {
        for (let h = 0; h < headsQ; h++) {
          const kvBase = (b * headsKV + Math.floor(h / (headsQ / headsKV))) * lengthK * depth;
          for (let key0 = 0; key0 < lengthK; key0 += KEY_BLOCK) {
            const first = firstQueryFor(key0, lengthQ, lengthK, params.causal);
            const firstForValues = mistakes.valueRangeOneBlockLate
              ? firstQueryFor(key0 + KEY_BLOCK, lengthQ, lengthK, params.causal)
              : first;
            for (let i = first; i < lengthQ; i++) {
              const row = (b * headsQ + h) * lengthQ + i;
              if (logSumExp[row] === -Infinity) continue;
              let delta = 0;
              for (let d = 0; d < depth; d++) delta += outputGradient[row * depth + d] * output[row * depth + d];
              for (let j = key0; j < Math.min(lengthK, key0 + KEY_BLOCK); j++) {
                if (params.causal && j > i + shift) continue;
                const keyRow = kvBase + j * depth;
                let [dot, probabilityGradient] = [0, 0];
                for (let d = 0; d < depth; d++) {
                  dot += queries[row * depth + d] * keys[keyRow + d];
                  probabilityGradient += outputGradient[row * depth + d] * values[keyRow + d];
                }
                let score = params.scale * dot;
                if (mask && maskValues)
                  score +=
                    maskValues[
                      mask.offset +
                        b * mask.strides[0] +
                        h * mask.strides[1] +
                        i * mask.strides[2] +
                        j * mask.strides[3]
                    ];
                if (score === -Infinity) continue;
                const probability = Math.exp(score - logSumExp[row]);
                const scoreGradient = probability * (probabilityGradient - delta);
                for (let d = 0; d < depth; d++) {
                  if (i >= firstForValues) valueGradient[keyRow + d] += probability * outputGradient[row * depth + d];
                  keyGradient[keyRow + d] += params.scale * scoreGradient * queries[row * depth + d];
                  queryGradient[row * depth + d] += params.scale * scoreGradient * keys[keyRow + d];
                }
              }
            }
          }
        }
      }
      store(base, dq, queryGradient);
      store(base, dk, keyGradient);
      store(base, dv, valueGradient);
    },
  };
}

export const ATTENTION_BACKWARD_BUGS: PlantedBug[] = [
  {
    name: 'a flash attention backward whose dV query range per causal key block starts one key block late',
    kernel: 'attentionBackward',
    caughtBy: 'attentionBackward f32 [B=1,Hq=2,Hkv=1,Tq=40,Tk=100,D=16,causal]',
    plant: (base, planted) => flashAttentionBackward(base, { valueRangeOneBlockLate: planted }),
  },
];
