/**
 * Planted precision bugs: log-softmax and the cross-entropy loss formed as x − (max + log Σ) with
 * the shift rounded to f32 first (what the CPU backend's WebAssembly kernels did), instead of
 * (x − max) − log Σ. The shift of a row offset by 10⁴ is then off by up to 2⁻¹¹ ≈ 5e-4.
 */
import type { TensorRef } from '@kiln/core';
import type { ReferenceBackend } from '../../src/index.js';
import { f32, load, store, type PlantedBug } from './host.js';

/** Row max and log Σ exp(x − max), in float64. */
function rowStatistics(row: Float64Array): { max: number; logSum: number } {
  const max = row.reduce((largest, value) => Math.max(largest, value), -Infinity);
  return { max, logSum: Math.log(row.reduce((sum, value) => sum + Math.exp(value - max), 0)) };
}

/** logSoftmax; `roundedShift` subtracts f32(max + log Σ) instead of max, then log Σ. */
function logSoftmaxKernel(base: ReferenceBackend, roundedShift: boolean) {
  return {
    logSoftmax(x: TensorRef, out: TensorRef, rows: number, cols: number): void {
      const values = load(base, x);
      const result = new Float64Array(rows * cols);
      for (let r = 0; r < rows; r++) {
        const row = values.subarray(r * cols, (r + 1) * cols);
        const { max, logSum } = rowStatistics(row);
        const shift = f32(max + logSum);
        for (let c = 0; c < cols; c++) result[r * cols + c] = roundedShift ? row[c] - shift : row[c] - max - logSum;
      }
      store(base, out, result);
    },
  };
}

/** crossEntropy (ignoreIndex rows 0, out-of-range targets NaN); `roundedShift` forms f32(max + log Σ) − x_target. */
function crossEntropyKernel(base: ReferenceBackend, roundedShift: boolean) {
  return {
    crossEntropy(
      logits: TensorRef,
      targets: TensorRef,
      loss: TensorRef,
      rows: number,
      classes: number,
      ignoreIndex: number,
    ): void {
      const [values, labels] = [load(base, logits), load(base, targets)];
      const result = new Float64Array(rows);
      for (let r = 0; r < rows; r++) {
        const target = labels[r];
        if (target === ignoreIndex) continue;
        if (target < 0 || target >= classes) {
          result[r] = Number.NaN;
          continue;
        }
        const row = values.subarray(r * classes, (r + 1) * classes);
        const { max, logSum } = rowStatistics(row);
        result[r] = roundedShift ? f32(max + logSum) - row[target] : max - row[target] + logSum;
      }
      store(base, loss, result);
    },
  };
}

export const LOG_SOFTMAX_SHIFT_BUGS: PlantedBug[] = [
  {
    name: 'a logSoftmax that subtracts max + log Σ rounded to f32 (rows offset by 10⁴)',
    kernel: 'logSoftmax',
    caughtBy: 'logSoftmax f32 [rows=6,cols=4 rows offset by ±10000]',
    plant: (base, planted) => logSoftmaxKernel(base, planted),
  },
  {
    name: 'a logSoftmax that subtracts max + log Σ rounded to f32 (logits 1000 ± 150)',
    kernel: 'logSoftmax',
    caughtBy: 'logSoftmax f32 [rows=4,cols=37 logits≈1000±150]',
    plant: (base, planted) => logSoftmaxKernel(base, planted),
  },
  {
    name: 'a crossEntropy whose loss is f32(max + log Σ) − x_target',
    kernel: 'crossEntropy',
    caughtBy: 'crossEntropy f32 [rows=6,classes=4,ignoreIndex=-100 rows offset by ±10000]',
    plant: (base, planted) => crossEntropyKernel(base, planted),
  },
];
