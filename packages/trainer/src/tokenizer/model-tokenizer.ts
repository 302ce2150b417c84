/**
 * The tokenizer a model directory reads text with: its own tokenizer.json, else that of the model
 * it derives from (model-lineage.ts). kiln's byte-level models have none and read UTF-8 bytes; a
 * Hugging Face family model without one is refused, since feeding it bytes would train or score
 * it on ids it never saw.
 */
import { join } from 'node:path';
import type { ModelConfig } from '../contracts.js';
import { TokenizerError } from './errors.js';
import { TOKENIZER_FILE } from './files.js';
import { loadTokenizer } from './load.js';
import { baseModelDirectoryOf, tokenizerDirectoryOf } from './model-lineage.js';
import type { Tokenizer } from './types.js';

/**
 * The tokenizer of the model at `modelPath` whose config is `config`: `override` (a directory, a
 * tokenizer.json or 'byte') when given, else tokenizerDirectoryOf's, else undefined for kiln's
 * byte-level models. Refuses (TokenizerError, a DataError) a Hugging Face family model with no tokenizer and
 * a tokenizer with ids past the model's vocabulary, naming both files.
 */
export async function modelTokenizer(
  modelPath: string,
  config: Pick<ModelConfig, 'architecture' | 'vocabSize'>,
  override?: string,
): Promise<Tokenizer | undefined> {
  const source = override ?? (await tokenizerDirectoryOf(modelPath));
  if (source === undefined) {
    if (config.architecture === undefined) return undefined;
    const derived = (await baseModelDirectoryOf(modelPath)) !== undefined;
    throw new TokenizerError(
      `${modelPath} has no ${TOKENIZER_FILE}${derived ? ' (nor has any model it was fine-tuned from)' : ''}, and this ${config.architecture.family} model needs its tokenizer`,
      {
        hint: `Put the model's ${TOKENIZER_FILE} and tokenizer_config.json in ${modelPath}, or pass --tokenizer <dir|tokenizer.json> (data.tokenizer in a config); --tokenizer byte reads text as UTF-8 bytes on purpose.`,
      },
    );
  }
  const tokenizer = await loadTokenizer(source);
  if (tokenizer.vocabSize > config.vocabSize) {
    throw new TokenizerError(
      `the tokenizer ${tokenizer.source} has ${tokenizer.vocabSize} ids but the model ${join(modelPath, 'config.json')} has vocab_size ${config.vocabSize}`,
      {
        hint: 'Use the tokenizer the model was trained with (the one in its directory), or pass the matching --tokenizer.',
      },
    );
  }
  return tokenizer;
}
