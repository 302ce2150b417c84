/** Data loading: token sequences JSON, byte-level text/code, binary token files, deterministic batches and splits. */
export { loadData, splitSizes, type LoadDataOptions, type SplitSizes } from './load-data.js';
export { BYTE_VOCAB_SIZE, encodeBytes, decodeBytes } from './byte-tokens.js';
export { parseSequences, readSequencesFile, type BadRecord, type SequencesLimits } from './sequences-file.js';
export { readTextTree, SKIPPED_DIRECTORIES, type TextTree } from './text-files.js';
export {
  writeTokenFile, openTokenFile, TOKEN_FILE_EXTENSION, TOKEN_FILE_HEADER_BYTES, TOKEN_FILE_VERSION,
  type TokenFileInfo, type TokenFileReader,
} from './token-file.js';
export {
  WindowTokenSource, memoryTokenSource, windowStart, DATA_STREAM_TAG, type SplitName, type WindowReader,
} from './token-source.js';
