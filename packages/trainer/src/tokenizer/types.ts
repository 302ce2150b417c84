/**
 * The tokenizer contract every data path and generation uses: the byte tokenizer (kiln's default
 * for models trained from scratch) and Hugging Face tokenizer.json tokenizers implement it.
 */

/** Options of Tokenizer.encode. */
export interface EncodeOptions {
  /** Add the tokenizer's bos (when `addsBos`) and eos (when `addsEos`) ids; default true. */
  addSpecialTokens?: boolean;
}

/** Options of Tokenizer.decode and Tokenizer.createDecoder. */
export interface DecodeOptions {
  /** Leave special tokens (bos, eos, pad, other special added tokens) out of the text; default true. */
  skipSpecialTokens?: boolean;
}

/** Decodes generated ids one at a time; a character split across tokens is emitted once it is complete. */
export interface TokenDecoder {
  /** Text to print for the next id ('' while a character or word is incomplete). */
  push(id: number): string;
  /** Text still held back (an incomplete trailing character becomes U+FFFD); the decoder can go on after it. */
  flush(): string;
}

/** Options of Tokenizer.createDecoder. */
export interface StreamDecoderOptions extends DecodeOptions {
  /** Ids that precede the first pushed id (the prompt's tail), so the first word decodes with its context (leading spaces). */
  context?: ArrayLike<number>;
}

/** Turns text into token ids and back. */
export interface Tokenizer {
  /** 'byte', or the model directory's name / the tokenizer file's name. */
  readonly name: string;
  /** 'byte', or the hex sha256 of tokenizer.json's bytes and the special-token settings: a token file records it. */
  readonly hash: string;
  /** Ids are below this: the model vocabulary plus added and special tokens. */
  readonly vocabSize: number;
  /** Beginning-of-sequence id, or null when the tokenizer has none. */
  readonly bosId: number | null;
  /** End-of-sequence id (joins documents, stops generation), or null when the tokenizer has none. */
  readonly eosId: number | null;
  /** Padding id, or null when the tokenizer has none. */
  readonly padId: number | null;
  /** True when encode (with special tokens) starts with bosId. */
  readonly addsBos: boolean;
  /** True when encode (with special tokens) ends with eosId. */
  readonly addsEos: boolean;
  /** Where it was loaded from: 'byte' or the tokenizer.json path. */
  readonly source: string;
  /** The ids of `text`. */
  encode(text: string, options?: EncodeOptions): number[];
  /** The text of `ids`; never throws for ids inside the vocabulary. */
  decode(ids: ArrayLike<number>, options?: DecodeOptions): string;
  /** A streaming decoder for generation. */
  createDecoder(options?: StreamDecoderOptions): TokenDecoder;
}
