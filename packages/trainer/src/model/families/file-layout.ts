/**
 * Conversions between a family's on-disk weight layout and kiln's: GPT-2 Conv1D weights are
 * stored transposed ([in, out]); GPTBigCode's multi-head c_attn orders its output rows per head
 * (q, k, v of head 0, then of head 1…) where kiln's fused projection wants every head's q, then
 * every k, then every v. Both directions work on host values, row-major.
 */
import type { ModelConfig } from '../../contracts.js';
import { headDimension } from '../config.js';
import type { FileLayout } from './family.js';

/** The shape kiln uses for a tensor stored in the file with `fileShape`. */
export function kilnShape(fileShape: readonly number[], layout: FileLayout | undefined): number[] {
  return layout === 'transposed' && fileShape.length === 2 ? [fileShape[1], fileShape[0]] : [...fileShape];
}

function transpose(values: Float32Array, rows: number, columns: number): Float32Array {
  const out = new Float32Array(values.length);
  for (let row = 0; row < rows; row++) {
    for (let column = 0; column < columns; column++) out[column * rows + row] = values[row * columns + column];
  }
  return out;
}

/** Moves row blocks: kiln row block (part, head) ↔ file row block (head, part), each block headDim rows of `columns` values. */
function reorderHeads(values: Float32Array, config: ModelConfig, columns: number, toKiln: boolean): Float32Array {
  const width = headDimension(config);
  const heads = config.nHead;
  const block = width * columns;
  const out = new Float32Array(values.length);
  for (let head = 0; head < heads; head++) {
    for (let part = 0; part < 3; part++) {
      const fileOffset = (head * 3 + part) * block;
      const kilnOffset = (part * heads + head) * block;
      const [from, to] = toKiln ? [fileOffset, kilnOffset] : [kilnOffset, fileOffset];
      out.set(values.subarray(from, from + block), to);
    }
  }
  return out;
}

/** Values of a tensor read from the file ([shape] as stored) in kiln's layout. */
export function fromFileLayout(
  values: Float32Array,
  fileShape: readonly number[],
  layout: FileLayout | undefined,
  config: ModelConfig,
): Float32Array {
  if (layout === 'transposed') return transpose(values, fileShape[0], fileShape[1]);
  if (layout === 'per-head-qkv') return reorderHeads(values, config, fileShape.length === 2 ? fileShape[1] : 1, true);
  return values;
}

/** Values of a kiln tensor ([shape] in kiln's layout) as the family's file stores them; returns the file shape too. */
export function toFileLayout(
  values: Float32Array,
  shape: readonly number[],
  layout: FileLayout | undefined,
  config: ModelConfig,
): { values: Float32Array; shape: number[] } {
  if (layout === 'transposed') return { values: transpose(values, shape[0], shape[1]), shape: [shape[1], shape[0]] };
  if (layout === 'per-head-qkv')
    return { values: reorderHeads(values, config, shape.length === 2 ? shape[1] : 1, false), shape: [...shape] };
  return { values, shape: [...shape] };
}
