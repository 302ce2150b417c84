/**
 * A small JSON reader over raw bytes for the sequences file: it scans numbers and skips any other
 * value without building objects, so a large token_sequences.json costs little more than its
 * tokens, and every syntax error names the file, line and column (JSON.parse's messages do not
 * always carry a position).
 */
import { DataError } from '@kiln/core';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;

const latin1 = new TextDecoder('latin1');

function isDigit(byte: number): boolean {
  return byte >= 0x30 && byte <= 0x39;
}

/** Reads JSON values from `bytes`; `position` is the next unread byte. */
export class JsonCursor {
  /** Next unread byte. */
  position = 0;

  constructor(
    private readonly bytes: Uint8Array,
    private readonly file: string,
  ) {}

  /** The byte at the position, or -1 at the end. */
  peek(): number {
    return this.position < this.bytes.length ? this.bytes[this.position] : -1;
  }

  /** True at the end of the input. */
  atEnd(): boolean {
    return this.position >= this.bytes.length;
  }

  /** Moves past spaces, tabs and line breaks. */
  skipWhitespace(): void {
    const bytes = this.bytes;
    let position = this.position;
    while (position < bytes.length) {
      const byte = bytes[position];
      if (byte !== 0x20 && byte !== 0x0a && byte !== 0x0d && byte !== 0x09) break;
      position++;
    }
    this.position = position;
  }

  /** Consumes `byte` or fails naming what was expected. */
  expect(byte: number, expected: string): void {
    if (this.peek() !== byte) this.fail(expected);
    this.position++;
  }

  /** True when the next byte can start a number. */
  atNumber(): boolean {
    const byte = this.peek();
    return byte === MINUS || isDigit(byte);
  }

  /** Reads one JSON number (strict grammar) and returns its value. */
  readNumber(): number {
    const start = this.position;
    if (this.peek() === MINUS) this.position++;
    if (!isDigit(this.peek())) this.fail('a digit');
    if (this.peek() === 0x30) this.position++;
    else while (isDigit(this.peek())) this.position++;
    if (this.peek() === DOT) {
      this.position++;
      if (!isDigit(this.peek())) this.fail('a digit after the decimal point');
      while (isDigit(this.peek())) this.position++;
    }
    if (this.peek() === 0x65 || this.peek() === 0x45) {
      this.position++;
      if (this.peek() === PLUS || this.peek() === MINUS) this.position++;
      if (!isDigit(this.peek())) this.fail('a digit in the exponent');
      while (isDigit(this.peek())) this.position++;
    }
    return Number(latin1.decode(this.bytes.subarray(start, this.position)));
  }

  /** Skips any JSON value (iteratively, so deep nesting cannot overflow the stack) and describes it. */
  skipValue(): string {
    this.skipWhitespace();
    const start = this.position;
    const closers: number[] = [];
    for (;;) {
      this.skipWhitespace();
      const byte = this.peek();
      if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
        const closer = byte === OPEN_BRACE ? CLOSE_BRACE : CLOSE_BRACKET;
        this.position++;
        this.skipWhitespace();
        if (this.peek() === closer) {
          this.position++;
        } else {
          closers.push(closer);
          if (closer === CLOSE_BRACE) this.skipKey();
          continue;
        }
      } else {
        this.skipScalar();
      }
      // After a value: close finished containers, or move to the next element.
      let next = false;
      while (closers.length > 0 && !next) {
        this.skipWhitespace();
        const closer = closers[closers.length - 1];
        if (this.peek() === COMMA) {
          this.position++;
          if (closer === CLOSE_BRACE) this.skipKey();
          next = true;
        } else if (this.peek() === closer) {
          this.position++;
          closers.pop();
        } else {
          this.fail(`',' or '${String.fromCharCode(closer)}'`);
        }
      }
      if (closers.length === 0) return this.describe(start);
    }
  }

  /** Fails with the file, line and column of the position. */
  fail(expected: string): never {
    const { line, column } = this.lineColumn(this.position);
    const found = this.atEnd() ? 'the end of the file' : `'${String.fromCharCode(this.peek())}'`;
    throw new DataError(`${this.file}:${line}:${column}: JSON syntax error: expected ${expected}, got ${found}`, {
      hint: 'The sequences file must be a JSON array of arrays of token ids, e.g. [[1, 2, 3], [4, 5]].',
    });
  }

  /** 1-based line and column of a byte position. */
  lineColumn(position: number): { line: number; column: number } {
    let line = 1;
    let lineStart = 0;
    for (let index = 0; index < position && index < this.bytes.length; index++) {
      if (this.bytes[index] === 0x0a) {
        line++;
        lineStart = index + 1;
      }
    }
    return { line, column: position - lineStart + 1 };
  }

  private skipKey(): void {
    this.skipWhitespace();
    if (this.peek() !== QUOTE) this.fail('a quoted key');
    this.skipString();
    this.skipWhitespace();
    this.expect(COLON, "':'");
  }

  private skipScalar(): void {
    const byte = this.peek();
    if (byte === QUOTE) {
      this.skipString();
      return;
    }
    if (this.atNumber()) {
      this.readNumber();
      return;
    }
    for (const literal of ['true', 'false', 'null']) {
      if (this.matches(literal)) {
        this.position += literal.length;
        return;
      }
    }
    this.fail('a JSON value');
  }

  private skipString(): void {
    this.position++;
    const bytes = this.bytes;
    while (this.position < bytes.length) {
      const byte = bytes[this.position];
      if (byte === QUOTE) {
        this.position++;
        return;
      }
      if (byte < 0x20) this.fail('a closing quote before the line break');
      this.position += byte === BACKSLASH ? 2 : 1;
    }
    this.fail('a closing quote');
  }

  private matches(literal: string): boolean {
    for (let index = 0; index < literal.length; index++) {
      if (this.bytes[this.position + index] !== literal.charCodeAt(index)) return false;
    }
    return true;
  }

  /** A short description of the value that starts at `start` and ends at the position. */
  private describe(start: number): string {
    const first = this.bytes[start];
    if (first === OPEN_BRACE) return 'an object';
    if (first === OPEN_BRACKET) return 'a list';
    const text = new TextDecoder().decode(this.bytes.subarray(start, Math.min(this.position, start + 40)));
    return this.position - start > 40 ? `${text}…` : text;
  }
}
