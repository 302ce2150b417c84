/** The typed error of tokenizer loading and use. */
import { DataError, type KilnErrorOptions } from '@kiln/core';

/** How to choose a tokenizer, for hints. */
export const TOKENIZER_CHOICE_HINT = 'Pass --tokenizer <model dir|tokenizer.json|byte> (config key data.tokenizer).';

/** A tokenizer file is missing, unreadable, malformed or uses a feature kiln does not support. */
export class TokenizerError extends DataError {
  constructor(message: string, options: KilnErrorOptions = {}) {
    super(message, options);
  }
}
