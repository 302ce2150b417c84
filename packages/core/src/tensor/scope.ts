/**
 * Memory scopes: `tidy(fn)` disposes every tensor created inside fn except those it returns or
 * `keep`s. Tensors created outside any scope are owned by the caller (dispose or `using`).
 */
import { InvalidArgumentError } from '../errors.js';

/** Anything the scope can dispose. */
export interface ScopedResource {
  /** Releases the resource (idempotent). */
  dispose(): void;
  /** True once disposed. */
  readonly isDisposed: boolean;
}

const scopes: Array<Set<ScopedResource>> = [];

/** Records a new tensor in the innermost scope (no-op outside tidy). */
export function trackInScope(resource: ScopedResource): void {
  scopes[scopes.length - 1]?.add(resource);
}

/** Removes a tensor from every open scope so tidy will not dispose it. */
export function keep<T extends ScopedResource>(resource: T): T {
  for (const scope of scopes) scope.delete(resource);
  return resource;
}

function collectResults(value: unknown, found: Set<ScopedResource>, depth = 0): void {
  if (depth > 8 || value === null || typeof value !== 'object') return;
  if (typeof (value as ScopedResource).dispose === 'function' && 'isDisposed' in (value as object)) {
    found.add(value as ScopedResource);
    return;
  }
  if (Array.isArray(value)) for (const item of value) collectResults(item, found, depth + 1);
  else if (value instanceof Map) for (const item of value.values()) collectResults(item, found, depth + 1);
  else if (Object.getPrototypeOf(value) === Object.prototype) {
    for (const item of Object.values(value)) collectResults(item, found, depth + 1);
  }
}

/**
 * Runs fn and disposes every tensor it created that is not in its result (tensors in returned
 * arrays, Maps and plain objects survive and move to the enclosing scope). fn must be synchronous.
 */
export function tidy<T>(fn: () => T): T {
  const scope = new Set<ScopedResource>();
  scopes.push(scope);
  let result: T;
  try {
    result = fn();
  } catch (error) {
    scopes.pop();
    for (const resource of scope) resource.dispose();
    throw error;
  }
  scopes.pop();
  if (result instanceof Promise) {
    for (const resource of scope) resource.dispose();
    throw new InvalidArgumentError('tidy: the function returned a Promise; tidy only tracks synchronous work', {
      hint: 'Await outside tidy, or dispose tensors yourself (dispose() or `using`).',
    });
  }
  const survivors = new Set<ScopedResource>();
  collectResults(result, survivors);
  for (const resource of scope) {
    if (survivors.has(resource)) trackInScope(resource);
    else resource.dispose();
  }
  return result;
}

/** Number of open tidy scopes (for diagnostics). */
export function scopeDepth(): number {
  return scopes.length;
}
