/**
 * A run's data, summarised so that a resume can tell whether it reads the same tokens: the size
 * of each split and the SHA-256 of a sample of its windows (drawn with the run's seed, the way
 * training batches are). Appending, removing or editing files changes the sizes or, almost
 * always, the sample; reading the whole corpus again is not needed.
 */
import { createHash } from 'node:crypto';
import type { LoadedData, TokenSource } from '../contracts.js';

/** Windows of each split hashed into DataFingerprint.sample. */
export const FINGERPRINT_WINDOWS = 64;

/** What state.json records of a run's data (see the file header). */
export interface DataFingerprint {
  /** Tokens in the training split. */
  trainTokens: number;
  /** Tokens in the validation split. */
  validationTokens: number;
  /** SHA-256 (hex) of FINGERPRINT_WINDOWS windows of each split. */
  sample: string;
}

/** The fingerprint of `data` read in windows of `contextLength` with `seed`. */
export function dataFingerprint(data: LoadedData, contextLength: number, seed: number): DataFingerprint {
  const hash = createHash('sha256');
  const add = (source: TokenSource): void => {
    const { inputs, targets } = source.batch(0, FINGERPRINT_WINDOWS, contextLength, seed);
    hash.update(new Uint8Array(inputs.buffer, inputs.byteOffset, inputs.byteLength));
    hash.update(new Uint8Array(targets.buffer, targets.byteOffset, targets.byteLength));
  };
  add(data.train);
  add(data.validation);
  return {
    trainTokens: data.train.tokenCount,
    validationTokens: data.validation.tokenCount,
    sample: hash.digest('hex'),
  };
}

/** The sentence for a resume whose data differs from the checkpoint's, or undefined when it is the same. */
export function dataChangeNotice(
  saved: DataFingerprint,
  now: DataFingerprint,
  resumedStep: number,
): string | undefined {
  if (
    saved.sample === now.sample &&
    saved.trainTokens === now.trainTokens &&
    saved.validationTokens === now.validationTokens
  )
    return undefined;
  const sizes =
    saved.trainTokens === now.trainTokens && saved.validationTokens === now.validationTokens
      ? `the same split sizes, other tokens`
      : `training split ${saved.trainTokens} tokens then, ${now.trainTokens} now; validation split ${saved.validationTokens} then, ${now.validationTokens} now`;
  return `the data differs from what the run read before its checkpoint (${sizes}): steps after ${resumedStep} train on the new data, and validation losses from here on are not comparable with earlier ones`;
}
