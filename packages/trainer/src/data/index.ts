/** Data loading: token sequences JSON, text/code tokenized with any tokenizer, binary token files, deterministic batches and splits. */
export { loadData, resolveDataTokenizer, splitSizes, type LoadDataOptions, type SplitSizes } from './load-data.js';
export { BYTE_VOCAB_SIZE, encodeBytes, decodeBytes } from './byte-tokens.js';
export { parseSequences, readSequencesFile, type BadRecord, type SequencesLimits } from './sequences-file.js';
export { listDataFiles, type DataFile, type DataFileFilter, type DataFileList } from './data-files.js';
export {
  tokenizeFiles,
  describeExtensions,
  type TokenizeFilesOptions,
  type TokenizeProgress,
  type TokenizedFiles,
  type ExtensionCount,
  type TokenSink,
} from './tokenize-files.js';
export { readTextTokens, type TextTokens, type TokenArray } from './text-tokens.js';
export {
  writeTokenFile,
  openTokenFile,
  TokenFileWriter,
  TOKEN_FILE_EXTENSION,
  TOKEN_FILE_HEADER_BYTES,
  TOKEN_FILE_VERSION,
  type TokenFileInfo,
  type TokenFileReader,
  type TokenFileWriteOptions,
  type TokenizerIdentity,
} from './token-file.js';
export { checkTokenFile, type TokenFileExpectation } from './token-file-check.js';
export {
  WindowTokenSource,
  memoryTokenSource,
  windowStart,
  DATA_STREAM_TAG,
  type SplitName,
  type WindowReader,
} from './token-source.js';
export { dataChangeNotice, dataFingerprint, FINGERPRINT_WINDOWS, type DataFingerprint } from './fingerprint.js';
