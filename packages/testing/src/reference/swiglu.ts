/**
 * Reference SwiGLU: out = silu(gate) · up; backward dGate = dy · up · siluGrad(gate),
 * dUp = dy · silu(gate). Elementwise over equal shapes, float64, one rounding per output.
 */
import type { TensorRef } from '@kiln/core';
import type { ReferenceMemory } from './memory.js';
import { silu, siluGrad } from './scalar-math.js';

/** out = silu(gate) · up. */
export function referenceSwiglu(memory: ReferenceMemory, gate: TensorRef, up: TensorRef, out: TensorRef): void {
  const gates = memory.read(gate);
  const ups = memory.read(up);
  memory.write(
    out,
    gates.map((value, index) => silu(value) * ups[index]),
  );
}

/** dGate = dy · up · siluGrad(gate), dUp = dy · silu(gate). */
export function referenceSwigluBackward(
  memory: ReferenceMemory,
  gate: TensorRef,
  up: TensorRef,
  dy: TensorRef,
  dGate: TensorRef,
  dUp: TensorRef,
): void {
  const gates = memory.read(gate);
  const ups = memory.read(up);
  const gradient = memory.read(dy);
  memory.write(
    dGate,
    gates.map((value, index) => gradient[index] * ups[index] * siluGrad(value)),
  );
  memory.write(
    dUp,
    gates.map((value, index) => gradient[index] * silu(value)),
  );
}
