/**
 * Streaming decode for tokenizers whose pieces are not whole characters (byte-level BPE, byte
 * fallback): the decoder keeps a window of ids, decodes it with and without the newest ids and
 * emits the difference once it no longer ends in U+FFFD (an incomplete UTF-8 sequence). Decoding
 * with the preceding ids as context keeps word-initial spaces that a decoder strips at the start
 * of a text (Metaspace). Only the ids since the last emitted text are kept.
 */
import type { TokenDecoder } from './types.js';

const REPLACEMENT = '\uFFFD';

/** A TokenDecoder over a whole-sequence `decode`. */
export class WindowedStreamDecoder implements TokenDecoder {
  private ids: number[];
  /** Start of the ids whose text was already emitted (kept as context). */
  private prefixStart = 0;
  /** Ids before this were emitted. */
  private readStart: number;

  constructor(
    private readonly decode: (ids: number[]) => string,
    context: ArrayLike<number> = [],
  ) {
    // A few ids of context are enough for spacing; more only cost time.
    this.ids = Array.from(context).slice(-4);
    this.readStart = this.ids.length;
  }

  push(id: number): string {
    this.ids.push(id);
    const before = this.decode(this.ids.slice(this.prefixStart, this.readStart));
    const after = this.decode(this.ids.slice(this.prefixStart));
    // A UTF-8 character spans at most 4 bytes: a replacement character that persists longer is real.
    const pending = this.ids.length - this.readStart;
    if (after.endsWith(REPLACEMENT) && pending < 4) return '';
    this.advance();
    return after.length > before.length ? after.slice(before.length) : '';
  }

  flush(): string {
    if (this.readStart === this.ids.length) return '';
    const before = this.decode(this.ids.slice(this.prefixStart, this.readStart));
    const after = this.decode(this.ids.slice(this.prefixStart));
    this.advance();
    return after.length > before.length ? after.slice(before.length) : '';
  }

  private advance(): void {
    this.prefixStart = this.readStart;
    this.readStart = this.ids.length;
    // Drop ids no longer needed as context.
    if (this.prefixStart > 0) {
      this.ids = this.ids.slice(this.prefixStart);
      this.readStart -= this.prefixStart;
      this.prefixStart = 0;
    }
  }
}
