/**
 * Out-of-range indices on devices without synchronous reads. Core cannot look at indices on the
 * host there without stalling the device, so it checks them on the device, with primitives:
 *
 *  1. valid = (index ≥ 0) · (index < size) (or index = ignoreIndex), an i32 mask;
 *  2. the kernel gets `where(valid, index, 0)`, so nothing ever reads or writes out of bounds,
 *     and the op zeroes what an invalid index produced (gather writes 0, its gradient skips it);
 *  3. the first offending (position, value) is folded into one small i32 flag per backend
 *     [bad, position, value, check id], first error wins;
 *  4. the next read through core — Tensor.data()/item(), toBackend, synchronize() — downloads
 *     the flag first (16 bytes, after the queued work) and throws InvalidArgumentError naming the
 *     op, the index, its position and the valid range, then clears the flag.
 *
 * Backends with downloadSync are checked on the host before the kernel (ops do that), and a
 * backend whose kernels check indices themselves (`capabilities.checksIndices`, docs/kernel-semantics.md's in-kernel
 * rule) is left to do so. The state lives on globalThis so two copies of @kiln/core share it.
 */
import type { BufferHandle, KernelBackend, TensorRef } from './kernel-backend.js';
import { asView, reshaped, scalarBroadcast, stridedView, withScratch, type Scratch } from './compositions/helpers.js';
import type { InvalidArgumentError } from '../errors.js';

/** Builds the error for the first offending index of one kind of check. */
export type IndexErrorFactory = (value: number, position: number) => InvalidArgumentError;

/** What a device-side check needs besides the indices. */
export interface DeviceIndexCheck {
  /** Valid indices are in [0, size). */
  size: number;
  /** A value that is also valid (crossEntropy's ignoreIndex). */
  ignore?: number;
  /** Identifies the kind of check (op, argument, shapes): equal keys share one error factory. */
  key: string;
  /** The error to throw when this check found an offending index. */
  error: IndexErrorFactory;
}

/** The pending checks of one backend: the flag buffer and the error factory of each check id. */
interface PendingChecks {
  /** i32 [bad, position, value, check id]; undefined until the first check. */
  flag: BufferHandle | undefined;
  factories: IndexErrorFactory[];
  ids: Map<string, number>;
}

const STATE_KEY = Symbol.for('kiln.pending-index-checks');
const FLAG_LENGTH = 4;

function pendingChecks(): WeakMap<KernelBackend, PendingChecks> {
  const global = globalThis as Record<symbol, WeakMap<KernelBackend, PendingChecks> | undefined>;
  global[STATE_KEY] ??= new WeakMap();
  return global[STATE_KEY];
}

/** True when core must check indices on the device for `backend` (no downloadSync, no in-kernel checks). */
export function needsDeviceIndexCheck(backend: KernelBackend): boolean {
  return typeof backend.downloadSync !== 'function' && backend.capabilities?.checksIndices !== true;
}

/**
 * Checks `indices` (i32, `count` elements, count > 0) on the device and records the first
 * offending one in the backend's flag. Writes the i32 mask into `valid` and, when given, the
 * indices with every invalid one replaced by 0 into `safe` (both dense, `count` elements).
 */
export function recordDeviceIndexCheck(
  backend: KernelBackend,
  indices: TensorRef,
  count: number,
  check: DeviceIndexCheck,
  valid: TensorRef,
  safe?: TensorRef,
): void {
  withScratch(backend, (scratch) => {
    const flat = reshaped(indices, [count]);
    const all = [count];
    const zero = scalarBroadcast(scratch.constant(0, 'i32'), all);
    const atLeastZero = scratch.binary('greaterEqual', flat, zero, scratch.tensor(all, 'i32'));
    const belowSize = scratch.binary(
      'less',
      flat,
      scalarBroadcast(scratch.constant(check.size, 'i32'), all),
      scratch.tensor(all, 'i32'),
    );
    const validMask = reshaped(valid, all);
    if (check.ignore === undefined) {
      backend.binary('mul', asView(atLeastZero), asView(belowSize), validMask);
    } else {
      const inRange = scratch.binary('mul', atLeastZero, belowSize, scratch.tensor(all, 'i32'));
      const ignored = scratch.binary(
        'equal',
        flat,
        scalarBroadcast(scratch.constant(check.ignore, 'i32'), all),
        scratch.tensor(all, 'i32'),
      );
      backend.binary('maximum', asView(inRange), asView(ignored), validMask);
    }
    if (safe !== undefined) backend.where(asView(validMask), asView(flat), zero, reshaped(safe, all));
    foldIntoFlag(backend, scratch, flat, validMask, count, idOf(backend, check));
  });
}

/** The check id of `check` on `backend` (equal keys share one). */
function idOf(backend: KernelBackend, check: DeviceIndexCheck): number {
  const state = stateFor(backend);
  let id = state.ids.get(check.key);
  if (id === undefined) {
    id = state.factories.length;
    state.factories.push(check.error);
    state.ids.set(check.key, id);
  }
  return id;
}

function stateFor(backend: KernelBackend): PendingChecks {
  const checks = pendingChecks();
  let state = checks.get(backend);
  if (state === undefined) {
    state = { flag: undefined, factories: [], ids: new Map() };
    checks.set(backend, state);
  }
  return state;
}

/** flag = flag[0] ≠ 0 ? flag : [any invalid, first invalid position, its value, id]. */
function foldIntoFlag(
  backend: KernelBackend,
  scratch: Scratch,
  flat: TensorRef,
  valid: TensorRef,
  count: number,
  id: number,
): void {
  // argmin of the mask is its first 0 (the first invalid position), or 0 when every index is valid.
  const position = reshaped(scratch.reduce('argmin', valid, 1, count, 1, scratch.tensor([1, 1], 'i32')), [1]);
  const smallest = reshaped(scratch.reduce('min', valid, 1, count, 1, scratch.tensor([1, 1], 'i32')), [1]);
  const bad = scratch.binary('sub', scratch.constant(1, 'i32'), smallest, scratch.tensor([1], 'i32'));
  const value = scratch.tensor([1], 'i32');
  backend.gather(flat, position, value, 1, count, 1);
  const candidate = scratch.tensor([FLAG_LENGTH], 'i32');
  [bad, position, value, scratch.constant(id, 'i32')].forEach((part, index) =>
    backend.copy(asView(part), stridedView(candidate, [1], [1], index)),
  );
  const state = stateFor(backend);
  const merged: TensorRef = { buffer: backend.alloc(FLAG_LENGTH * 4), shape: [FLAG_LENGTH], dtype: 'i32' };
  try {
    if (state.flag === undefined) {
      backend.copy(asView(candidate), asView(merged));
    } else {
      const flag: TensorRef = { buffer: state.flag, shape: [FLAG_LENGTH], dtype: 'i32' };
      backend.where(stridedView(flag, [FLAG_LENGTH], [0], 0), asView(flag), asView(candidate), merged);
    }
  } catch (error) {
    backend.free(merged.buffer);
    throw error;
  }
  if (state.flag !== undefined) backend.free(state.flag);
  state.flag = merged.buffer;
}

/**
 * Settles the device-side index checks of `backend`: downloads its flag (after the queued work),
 * clears it, and throws the InvalidArgumentError of the first out-of-range index recorded since
 * the last settle. Called by every read through core; a no-op when nothing is pending.
 */
export async function settleIndexChecks(backend: KernelBackend): Promise<void> {
  const checks = pendingChecks();
  const state = checks.get(backend);
  if (state === undefined) return;
  checks.delete(backend);
  if (state.flag === undefined) return;
  const flag = state.flag;
  let bytes: Uint8Array;
  try {
    bytes = await backend.download(flag);
  } finally {
    backend.free(flag);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, FLAG_LENGTH * 4);
  const [bad, position, value, id] = [0, 1, 2, 3].map((index) => view.getInt32(index * 4, true));
  if (bad !== 0) throw state.factories[id](value, position);
}

/** True when `backend` has device-side index checks not yet settled (they hold one 16-byte flag buffer). */
export function hasPendingIndexChecks(backend: KernelBackend): boolean {
  return pendingChecks().get(backend)?.flag !== undefined;
}
