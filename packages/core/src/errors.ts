/**
 * Typed errors. Every KilnError has a stable `code` and a `hint` telling the user how to fix it.
 * `KilnError.isInstance(x)` works across two installed copies of @kiln/core (it checks a
 * Symbol.for marker, not the prototype chain).
 */
const KILN_ERROR_MARKER = Symbol.for('kiln.error');

/** Stable machine-readable error codes. */
export type KilnErrorCode =
  | 'KILN_ERROR'
  | 'SHAPE_MISMATCH'
  | 'DTYPE_MISMATCH'
  | 'INVALID_ARGUMENT'
  | 'BACKEND_UNAVAILABLE'
  | 'BACKEND_API_VERSION'
  | 'BACKEND_CONTRACT'
  | 'UNSUPPORTED_KERNEL'
  | 'OUT_OF_MEMORY'
  | 'DISPOSED_TENSOR'
  | 'CONFIG_ERROR'
  | 'DATA_ERROR'
  | 'CHECKPOINT_ERROR'
  | 'RUN_LOCKED'
  | 'NON_FINITE'
  | 'MISSING_DEPENDENCY'
  | 'GRAPH_CAPTURE';

/** Options shared by every KilnError constructor. */
export interface KilnErrorOptions {
  /** How to fix it, as a sentence. */
  hint?: string;
  /** The underlying error, if any. */
  cause?: unknown;
}

/** Base class of every error kiln throws on purpose. */
export class KilnError extends Error {
  /** Stable code for programs. */
  readonly code: KilnErrorCode;
  /** How to fix it. */
  readonly hint: string | undefined;
  // biome-ignore lint/correctness/noUnusedPrivateClassMembers: read through the symbol by KilnError.isInstance, across copies of @kiln/core
  private readonly [KILN_ERROR_MARKER] = true;

  constructor(message: string, code: KilnErrorCode = 'KILN_ERROR', options: KilnErrorOptions = {}) {
    super(options.hint ? `${message}\n  hint: ${options.hint}` : message, { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.hint = options.hint;
  }

  /** True for any KilnError, including one thrown by another copy of @kiln/core. */
  static isInstance(value: unknown): value is KilnError {
    return (
      typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[KILN_ERROR_MARKER] === true
    );
  }
}

/** Shapes that do not fit the operation (broadcasting, matmul inner dims, reshape sizes…). */
export class ShapeError extends KilnError {
  constructor(message: string, options: KilnErrorOptions = {}) {
    super(message, 'SHAPE_MISMATCH', options);
  }
}

/** A dtype the operation does not accept, or two dtypes that do not match. */
export class DTypeError extends KilnError {
  constructor(message: string, options: KilnErrorOptions = {}) {
    super(message, 'DTYPE_MISMATCH', options);
  }
}

/** An argument out of range or of the wrong kind (axis, index, option value…). */
export class InvalidArgumentError extends KilnError {
  constructor(message: string, options: KilnErrorOptions = {}) {
    super(message, 'INVALID_ARGUMENT', options);
  }
}

/** One backend attempt recorded during resolution. */
export interface BackendAttempt {
  /** Backend name. */
  name: string;
  /** Why it was not used. */
  reason: string;
}

/** No requested backend could be used; lists every backend tried and why. */
export class BackendUnavailableError extends KilnError {
  /** Every backend considered, with the reason it was not used. */
  readonly attempts: readonly BackendAttempt[];
  constructor(message: string, attempts: readonly BackendAttempt[] = [], options: KilnErrorOptions = {}) {
    const detail = attempts.map((attempt) => `\n  - ${attempt.name}: ${attempt.reason}`).join('');
    super(message + detail, 'BACKEND_UNAVAILABLE', options);
    this.attempts = attempts;
  }
}

/** A plugin built against another KernelBackend interface version. */
export class BackendApiVersionError extends KilnError {
  constructor(message: string, options: KilnErrorOptions = {}) {
    super(message, 'BACKEND_API_VERSION', options);
  }
}

/** A plugin broke the BackendPlugin contract: create() returned no backend, or one with another name than the plugin's. */
export class BackendContractError extends KilnError {
  constructor(message: string, options: KilnErrorOptions = {}) {
    super(message, 'BACKEND_CONTRACT', options);
  }
}

/** The backend has no kernel for this (kernel, dtype) and the fallback policy forbids composing one. */
export class UnsupportedKernelError extends KilnError {
  constructor(message: string, options: KilnErrorOptions = {}) {
    super(message, 'UNSUPPORTED_KERNEL', options);
  }
}

/** A backend could not capture work into a device graph (KernelBackend.captureGraph); the backend stays usable eagerly. */
export class GraphCaptureError extends KilnError {
  constructor(message: string, options: KilnErrorOptions = {}) {
    super(message, 'GRAPH_CAPTURE', options);
  }
}

/** The device could not allocate memory. */
export class OutOfMemoryError extends KilnError {
  /** Bytes the failed allocation asked for. */
  readonly requestedBytes: number;
  constructor(message: string, requestedBytes: number, options: KilnErrorOptions = {}) {
    super(message, 'OUT_OF_MEMORY', {
      hint: options.hint ?? 'Reduce the batch size or model size, or free tensors you no longer need (tidy, dispose).',
      cause: options.cause,
    });
    this.requestedBytes = requestedBytes;
  }
}

/** A tensor was used after dispose(). */
export class DisposedTensorError extends KilnError {
  constructor(message: string, options: KilnErrorOptions = {}) {
    super(message, 'DISPOSED_TENSOR', options);
  }
}

/** A configuration value is wrong. */
export class ConfigError extends KilnError {
  constructor(message: string, options: KilnErrorOptions = {}) {
    super(message, 'CONFIG_ERROR', options);
  }
}

/** Input data is malformed (names the file and record). */
export class DataError extends KilnError {
  constructor(message: string, options: KilnErrorOptions = {}) {
    super(message, 'DATA_ERROR', options);
  }
}

/** A checkpoint or safetensors file is malformed or inconsistent. */
export class CheckpointError extends KilnError {
  constructor(message: string, options: KilnErrorOptions = {}) {
    super(message, 'CHECKPOINT_ERROR', options);
  }
}

/** Another process holds the run directory (a second trainer, or a resume while a run still writes). */
export class RunLockedError extends KilnError {
  constructor(message: string, options: KilnErrorOptions = {}) {
    super(message, 'RUN_LOCKED', options);
  }
}

/** A computation produced NaN or ±Infinity where a finite number is required (an evaluation loss, a logit while generating). */
export class NonFiniteError extends KilnError {
  constructor(message: string, options: KilnErrorOptions = {}) {
    super(message, 'NON_FINITE', options);
  }
}

/** An optional package that a kiln feature needs is not installed (or cannot be loaded from here). */
export class MissingDependencyError extends KilnError {
  /** The npm package to install. */
  readonly packageName: string;

  constructor(packageName: string, message: string, options: KilnErrorOptions = {}) {
    super(message, 'MISSING_DEPENDENCY', options);
    this.packageName = packageName;
  }
}
