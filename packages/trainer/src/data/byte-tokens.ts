/**
 * Byte-level tokenization: a token is one UTF-8 byte (vocabulary 256). Any text round-trips;
 * decoding never throws (invalid UTF-8 and ids outside 0..255 become U+FFFD).
 */

/** Vocabulary size of byte-level tokens. */
export const BYTE_VOCAB_SIZE = 256;

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: false });

/** UTF-8 bytes of U+FFFD, written for ids that are not bytes. */
const REPLACEMENT_BYTES = [0xef, 0xbf, 0xbd];

/** The UTF-8 bytes of `text` as token ids. */
export function encodeBytes(text: string): Int32Array {
  return Int32Array.from(encoder.encode(text));
}

/** Text of byte-level token ids; invalid sequences decode as replacement characters. */
export function decodeBytes(ids: ArrayLike<number>): string {
  const bytes: number[] = [];
  for (let index = 0; index < ids.length; index++) {
    const id = ids[index];
    if (Number.isInteger(id) && id >= 0 && id < BYTE_VOCAB_SIZE) bytes.push(id);
    else bytes.push(...REPLACEMENT_BYTES);
  }
  return decoder.decode(Uint8Array.from(bytes));
}
