/**
 * Tokenizers: `loadTokenizer(pathOrByte)` gives a {@link Tokenizer} — `'byte'` (UTF-8 bytes,
 * vocabulary 256, kiln's default for models trained from scratch), a Hugging Face tokenizer.json,
 * or a model directory holding one (with tokenizer_config.json / special_tokens_map.json).
 *
 * ```ts
 * const tokenizer = await loadTokenizer('models/SmolLM2-135M'); // or 'tokenizer.json', or 'byte'
 * tokenizer.encode('def f(x):');             // ids, bos added when tokenizer.addsBos
 * tokenizer.decode(ids);                     // special tokens skipped by default
 * const stream = tokenizer.createDecoder({ context: promptIds });
 * for (const id of generated) process.stdout.write(stream.push(id));
 * process.stdout.write(stream.flush());
 * ```
 * `name` and `hash` identify it (a token file records both); `vocabSize`, `bosId`, `eosId`,
 * `padId`, `addsBos`, `addsEos` describe it. Errors are {@link TokenizerError} (a DataError).
 * `modelTokenizer(modelDir, config)` finds a model's own tokenizer (or that of the model it was
 * fine-tuned from) and refuses a Hugging Face model that has none.
 */
export { loadTokenizer } from './load.js';
export { TOKENIZER_FILE } from './files.js';
export { adapterBaseOf, baseModelDirectoryOf, MAX_BASE_HOPS, tokenizerDirectoryOf } from './model-lineage.js';
export { modelTokenizer } from './model-tokenizer.js';
export { byteTokenizer, BYTE_TOKENIZER_NAME } from './byte-tokenizer.js';
export { TokenizerError } from './errors.js';
export type { Tokenizer, TokenDecoder, EncodeOptions, DecodeOptions, StreamDecoderOptions } from './types.js';
