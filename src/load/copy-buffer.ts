/*
 * COPY text written as UTF-8 straight into a buffer: a page's rows are mostly ranges of the page's bytes, and
 * copying them costs no string per value, no concatenation and no copy of the whole text at the end.
 */

import type { BufferPool } from '../model/buffer-pool.js';

/** Ranges longer than this are copied by Buffer#copy: a loop wins below (a native call costs more). */
const LONG_RANGE = 64;
/** Strings longer than this are written by Buffer#write, which beats a loop over each character. */
const LONG_TEXT = 256;

/** A growing buffer of UTF-8 bytes. */
export class CopyBuffer {
  #bytes: Buffer;
  #length = 0;
  readonly #pool: BufferPool | undefined;

  /** `pool`: where its memory comes from, and where a buffer it outgrew goes back. */
  constructor(capacity: number, pool?: BufferPool) {
    this.#pool = pool;
    this.#bytes = this.#allocate(Math.max(capacity, 1024));
  }

  /** Bytes written so far. */
  get length(): number {
    return this.#length;
  }

  /** Forgets what was written after `length`. */
  truncate(length: number): void {
    this.#length = length;
  }

  /** The bytes written (a view: the buffer is not written to again). */
  done(): Buffer {
    return this.#bytes.subarray(0, this.#length);
  }

  /** An ASCII character. */
  byte(c: number): void {
    this.#reserve(1);
    this.#bytes[this.#length++] = c;
  }

  /** source[start, end) as it is. */
  bytes(source: Buffer, start: number, end: number): void {
    const n = end - start;
    this.#reserve(n);
    const b = this.#bytes;
    let p = this.#length;
    if (n > LONG_RANGE) source.copy(b, p, start, end);
    else for (let i = start; i < end; i++) b[p++] = source[i]!;
    this.#length += n;
  }

  /** A string as UTF-8; a surrogate alone as U+FFFD, as Buffer.from writes it. */
  text(text: string): void {
    const end = text.length;
    this.#reserve(3 * end);
    const b = this.#bytes;
    let p = this.#length;
    if (end > LONG_TEXT) {
      this.#length = p + b.write(text, p);
      return;
    }
    for (let i = 0; i < end; i++) {
      const c = text.charCodeAt(i);
      if (c < 0x80) {
        b[p++] = c;
      } else if (c < 0x800) {
        b[p++] = 0xc0 | (c >> 6);
        b[p++] = 0x80 | (c & 0x3f);
      } else if (c < 0xd800 || c > 0xdfff) {
        b[p++] = 0xe0 | (c >> 12);
        b[p++] = 0x80 | ((c >> 6) & 0x3f);
        b[p++] = 0x80 | (c & 0x3f);
      } else {
        const d = i + 1 < end ? text.charCodeAt(i + 1) : 0;
        if (c <= 0xdbff && d >= 0xdc00 && d <= 0xdfff) {
          const point = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
          b[p++] = 0xf0 | (point >> 18);
          b[p++] = 0x80 | ((point >> 12) & 0x3f);
          b[p++] = 0x80 | ((point >> 6) & 0x3f);
          b[p++] = 0x80 | (point & 0x3f);
          i++;
        } else {
          b[p++] = 0xef;
          b[p++] = 0xbf;
          b[p++] = 0xbd;
        }
      }
    }
    this.#length = p;
  }

  /** A non-negative safe integer in decimal digits. */
  integer(n: number): void {
    let digits = 1;
    for (let m = n; m >= 10; m = Math.floor(m / 10)) digits++;
    this.#reserve(digits);
    const b = this.#bytes;
    let p = this.#length + digits;
    this.#length = p;
    let m = n;
    do {
      b[--p] = 0x30 + (m % 10);
      m = Math.floor(m / 10);
    } while (m > 0);
  }

  /** True when the `length` bytes at `a` are the `length` bytes at `b`. */
  same(a: number, b: number, length: number): boolean {
    const bytes = this.#bytes;
    for (let k = 0; k < length; k++) if (bytes[a + k] !== bytes[b + k]) return false;
    return true;
  }

  #reserve(n: number): void {
    const need = this.#length + n;
    if (need <= this.#bytes.length) return;
    const grown = this.#allocate(Math.max(need, 2 * this.#bytes.length));
    this.#bytes.copy(grown, 0, 0, this.#length);
    this.#pool?.give(this.#bytes);
    this.#bytes = grown;
  }

  #allocate(bytes: number): Buffer {
    return this.#pool === undefined ? Buffer.allocUnsafeSlow(bytes) : Buffer.from(this.#pool.take(bytes));
  }
}
