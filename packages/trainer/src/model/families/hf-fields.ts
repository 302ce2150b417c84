/**
 * Typed reads of a Hugging Face config.json: each read names the file and the field in its
 * error, optional fields take transformers' documented default, and `refuse` rejects a value
 * kiln does not implement by naming the key and the values it supports.
 */
import { CheckpointError } from '@kiln/core';

/** One config.json object being read, with the file name used in every error. */
export class HfConfigFields {
  /** The parsed object. */
  readonly fields: Record<string, unknown>;
  /** The file the object came from (for messages). */
  readonly source: string;

  /** Wraps `json` (refused unless it is a JSON object). */
  constructor(json: unknown, source: string) {
    if (typeof json !== 'object' || json === null || Array.isArray(json)) {
      throw new CheckpointError(
        `${source}: expected a JSON object (a Hugging Face config.json), got ${Array.isArray(json) ? 'an array' : typeof json}`,
        {
          hint: 'Point at a directory holding the config.json of a Hugging Face causal language model.',
        },
      );
    }
    this.fields = json as Record<string, unknown>;
    this.source = source;
  }

  /** Throws a CheckpointError about `field`. */
  fail(field: string, problem: string, hint: string): never {
    throw new CheckpointError(`${this.source}: field "${field}" ${problem}`, { hint });
  }

  /** The raw value (undefined and null both mean absent). */
  value(field: string): unknown {
    const value = this.fields[field];
    return value === null ? undefined : value;
  }

  /** A positive integer; `fallback` when absent (required when there is none). */
  integer(field: string, fallback?: number): number {
    const value = this.value(field) ?? fallback;
    if (value === undefined) this.fail(field, 'is missing', `The config.json needs "${field}" (a positive integer).`);
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
      this.fail(
        field,
        `must be a positive integer, got ${JSON.stringify(value)}`,
        `Fix "${field}" in the config.json.`,
      );
    }
    return value as number;
  }

  /** A finite number > 0; `fallback` when absent. */
  positive(field: string, fallback: number, value: unknown = this.value(field)): number {
    const resolved = value ?? fallback;
    if (typeof resolved !== 'number' || !Number.isFinite(resolved) || resolved <= 0) {
      this.fail(
        field,
        `must be a finite number > 0, got ${JSON.stringify(resolved)}`,
        `Fix "${field}" in the config.json.`,
      );
    }
    return resolved as number;
  }

  /** A boolean; `fallback` when absent. */
  boolean(field: string, fallback: boolean): boolean {
    const value = this.value(field) ?? fallback;
    if (typeof value !== 'boolean')
      this.fail(field, `must be true or false, got ${JSON.stringify(value)}`, `Fix "${field}" in the config.json.`);
    return value as boolean;
  }

  /** Refuses a present value other than the supported ones, naming them. */
  refuse(field: string, supported: readonly unknown[], why: string): void {
    const value = this.value(field);
    if (value === undefined || supported.some((allowed) => allowed === value)) return;
    this.fail(
      field,
      `is ${JSON.stringify(value)}; kiln implements ${supported.map((allowed) => JSON.stringify(allowed)).join(', ')} only`,
      why,
    );
  }

  /** A token id or list of ids (`bos_token_id`, `eos_token_id`) as a list; empty when absent. */
  tokenIds(field: string): number[] {
    const value = this.value(field);
    if (value === undefined) return [];
    const list = Array.isArray(value) ? value : [value];
    if (list.some((id) => typeof id !== 'number' || !Number.isSafeInteger(id) || id < 0)) {
      this.fail(
        field,
        `must be a token id or a list of them, got ${JSON.stringify(value)}`,
        `Fix "${field}" in the config.json.`,
      );
    }
    return list as number[];
  }
}
