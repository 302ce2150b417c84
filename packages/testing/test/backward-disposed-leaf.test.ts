/** backward never loses the gradient of a disposed leaf silently. */
import { describe, expect, it } from 'vitest';
import * as kiln from '@kiln/core';
import { DisposedTensorError, KilnError } from '@kiln/core';
import { useReferenceBackend, values } from './helpers/backend.js';

useReferenceBackend();

function thrown(call: () => unknown): KilnError {
  try {
    call();
  } catch (error) {
    if (KilnError.isInstance(error)) return error;
    throw new Error(`expected a KilnError, got ${String(error)}`);
  }
  throw new Error('expected a KilnError, but the call returned normally');
}

describe('backward refuses to lose the gradient of a disposed leaf', () => {
  it('throws DisposedTensorError naming the leaf and what to do, before touching any gradient', () => {
    const w = kiln.ones([2]).requireGrad();
    const other = kiln.ones([2]).requireGrad();
    using y = kiln.tidy(() => kiln.sum(kiln.add(kiln.mul(w, w), other)));
    w.dispose();
    const error = thrown(() => kiln.backward(y));
    expect(error).toBeInstanceOf(DisposedTensorError);
    expect(error.message).toMatch(new RegExp(`backward: .*#${w.id} f32\\[2\\].*disposed`));
    expect(error.hint).toMatch(/dispose .* after backward|requireGrad\(false\)/);
    // Nothing was accumulated into the other leaf: the call had no effect.
    expect(other.grad).toBeNull();
    other.dispose();
  });

  it('still works when the disposed tensor is no leaf of the graph', async () => {
    using w = kiln.ones([2]).requireGrad();
    const temporary = kiln.mul(w, 3);
    using y = kiln.sum(temporary);
    temporary.dispose();
    kiln.backward(y);
    expect(await values(w.grad!)).toEqual([3, 3]);
    w.grad!.dispose();
  });
});
