/**
 * The byte tokenizer as a Tokenizer: a token is one UTF-8 byte (vocabulary 256), no special
 * tokens; documents are concatenated as they are.
 */
import { BYTE_VOCAB_SIZE, decodeBytes, encodeBytes } from '../data/byte-tokens.js';
import type { TokenDecoder, Tokenizer } from './types.js';

/** Name and hash of the byte tokenizer (what a token file records). */
export const BYTE_TOKENIZER_NAME = 'byte';

class ByteDecoder implements TokenDecoder {
  private readonly decoder = new TextDecoder('utf-8', { fatal: false });

  push(id: number): string {
    if (!Number.isInteger(id) || id < 0 || id >= BYTE_VOCAB_SIZE) return this.decoder.decode() + '\uFFFD';
    return this.decoder.decode(Uint8Array.of(id), { stream: true });
  }

  flush(): string {
    return this.decoder.decode();
  }
}

/** The byte tokenizer. */
export const byteTokenizer: Tokenizer = Object.freeze({
  name: BYTE_TOKENIZER_NAME,
  hash: BYTE_TOKENIZER_NAME,
  vocabSize: BYTE_VOCAB_SIZE,
  bosId: null,
  eosId: null,
  padId: null,
  addsBos: false,
  addsEos: false,
  source: BYTE_TOKENIZER_NAME,
  encode: (text: string): number[] => Array.from(encodeBytes(text)),
  decode: (ids: ArrayLike<number>): string => decodeBytes(ids),
  createDecoder: (): TokenDecoder => new ByteDecoder(),
});
