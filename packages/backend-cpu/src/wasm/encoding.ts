/**
 * The WebAssembly binary format's primitive encodings: LEB128 integers, IEEE floats, names and
 * length-prefixed vectors. A ByteWriter grows as bytes are appended.
 * Reference: the WebAssembly core specification, section 5 (binary format).
 */

/** An append-only byte buffer. */
export class ByteWriter {
  private bytes = new Uint8Array(256);
  private length = 0;

  /** Number of bytes written so far. */
  get size(): number {
    return this.length;
  }

  /** Appends one byte (0…255). */
  byte(value: number): this {
    if (this.length === this.bytes.length) this.reserve(1);
    this.bytes[this.length++] = value;
    return this;
  }

  /** Appends raw bytes. */
  raw(values: ArrayLike<number>): this {
    this.reserve(values.length);
    for (let i = 0; i < values.length; i++) this.bytes[this.length++] = values[i];
    return this;
  }

  /** Appends an unsigned LEB128 integer (u32). */
  u32(value: number): this {
    let remaining = value >>> 0;
    do {
      const low = remaining & 0x7f;
      remaining >>>= 7;
      this.byte(remaining === 0 ? low : low | 0x80);
    } while (remaining !== 0);
    return this;
  }

  /** Appends a signed LEB128 integer (i32). */
  i32(value: number): this {
    let remaining = value | 0;
    for (;;) {
      const low = remaining & 0x7f;
      remaining >>= 7;
      const done = (remaining === 0 && (low & 0x40) === 0) || (remaining === -1 && (low & 0x40) !== 0);
      this.byte(done ? low : low | 0x80);
      if (done) return this;
    }
  }

  /** Appends a little-endian IEEE single. */
  f32(value: number): this {
    const bits = new Uint8Array(new Float32Array([value]).buffer);
    return this.raw(bits);
  }

  /** Appends a little-endian IEEE double. */
  f64(value: number): this {
    const bits = new Uint8Array(new Float64Array([value]).buffer);
    return this.raw(bits);
  }

  /** Appends a UTF-8 name with its length. */
  name(text: string): this {
    const encoded = new TextEncoder().encode(text);
    return this.u32(encoded.length).raw(encoded);
  }

  /** Appends another writer's bytes prefixed by their length (a section or a function body). */
  sized(content: ByteWriter): this {
    return this.u32(content.size).raw(content.toBytes());
  }

  /** The bytes written (a copy). */
  toBytes(): Uint8Array {
    return this.bytes.slice(0, this.length);
  }

  private reserve(extra: number): void {
    if (this.length + extra <= this.bytes.length) return;
    const grown = new Uint8Array(Math.max(this.bytes.length * 2, this.length + extra));
    grown.set(this.bytes.subarray(0, this.length));
    this.bytes = grown;
  }
}
