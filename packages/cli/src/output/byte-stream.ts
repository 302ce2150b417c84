/**
 * Streams generated tokens as text. Byte-level tokens (vocab 256) are UTF-8 bytes, and a
 * character may span several tokens: a streaming TextDecoder holds partial sequences until they
 * complete (invalid bytes become U+FFFD). Other vocabularies print token ids.
 */

/** Turns token ids into printable text, one token at a time. */
export class TokenTextStream {
  private readonly decoder = new TextDecoder('utf-8', { fatal: false });
  private readonly byteLevel: boolean;
  private first = true;

  constructor(vocabSize: number) {
    this.byteLevel = vocabSize <= 256;
  }

  /** Text to print for the next token (may be '' while a character is incomplete). */
  push(id: number): string {
    if (this.byteLevel) return this.decoder.decode(Uint8Array.of(id), { stream: true });
    const text = this.first ? String(id) : ` ${id}`;
    this.first = false;
    return text;
  }

  /** Text still held back (an incomplete trailing character becomes U+FFFD). */
  flush(): string {
    return this.byteLevel ? this.decoder.decode() : '';
  }
}

/** The ids of `text` for a byte-level model (UTF-8 bytes), or parsed ids ("12 7 99") otherwise. */
export function promptTokens(text: string, vocabSize: number): number[] {
  if (vocabSize <= 256) return [...new TextEncoder().encode(text)];
  return text
    .trim()
    .split(/[\s,]+/)
    .filter(Boolean)
    .map(Number);
}
