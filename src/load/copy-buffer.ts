/*
 * COPY text written as UTF-8 straight into a buffer: a page's rows are mostly ranges of the page's bytes, and
 * copying them costs no string per value, no concatenation and no copy of the whole text at the end.
 */

import type { BufferPool } from '../model/buffer-pool.js';
import type { EncodeStats } from './copy-encoding.js';

/** Ranges longer than this are copied by Buffer#copy: a loop wins below (a native call costs more). */
const LONG_RANGE = 64;
/** Strings longer than this are written by Buffer#write, which beats a loop over each character. */
const LONG_TEXT = 256;

const BACKSLASH = 0x5c;
const LETTER_U = 0x75;
const LETTER_B = 0x62;
const LETTER_F = 0x66;
const LETTER_N = 0x6e;
const LETTER_R = 0x72;
const LETTER_T = 0x74;

/** An ASCII character into COPY text at `o`: backslash, newline, carriage return and tab escaped; returns the end. */
function copyEscaped(b: Buffer, o: number, c: number): number {
  switch (c) {
    case BACKSLASH:
      b[o++] = BACKSLASH;
      b[o++] = BACKSLASH;
      return o;
    case 0x0a:
      b[o++] = BACKSLASH;
      b[o++] = LETTER_N;
      return o;
    case 0x0d:
      b[o++] = BACKSLASH;
      b[o++] = LETTER_R;
      return o;
    case 0x09:
      b[o++] = BACKSLASH;
      b[o++] = LETTER_T;
      return o;
    default:
      b[o++] = c;
      return o;
  }
}

/** "ufffd" after a backslash. */
const UFFFD = [0x75, 0x66, 0x66, 0x66, 0x64];

/** Whether the four characters at `p` (after "\\u") are "0000" or a surrogate's "d800" to "dfff", lower case. */
function unstorableEscape(source: Buffer, p: number): boolean {
  const a = source[p]!;
  const b = source[p + 1]!;
  const c = source[p + 2]!;
  const d = source[p + 3]!;
  if (a === 0x30) return b === 0x30 && c === 0x30 && d === 0x30;
  return a === 0x64 && ((b >= 0x38 && b <= 0x39) || (b >= 0x61 && b <= 0x66)) && lowerHex(c) && lowerHex(d);
}

function lowerHex(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66);
}

/** The four hex digits at `p` as a number. */
function hex4(source: Buffer, p: number): number {
  let n = 0;
  for (let k = p; k < p + 4; k++) {
    const c = source[k]!;
    n = (n << 4) | (c <= 0x39 ? c - 0x30 : (c | 0x20) - 0x57);
  }
  return n;
}

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

  /**
   * The content of a JSON string, source[start, end) with its escapes (valid ones), as the COPY text field
   * escapeCopyText writes of the decoded string: straight from its bytes, no string made of it. A backslash, newline,
   * carriage return and tab are escaped for COPY; NUL and a surrogate alone become U+FFFD, counted in `stats`.
   */
  jsonString(source: Buffer, start: number, end: number, stats: EncodeStats): void {
    // No escape writes more bytes than it takes: \uXXXX at most three (or four for twelve), \n two.
    this.#reserve(end - start);
    const b = this.#bytes;
    let o = this.#length;
    let p = start;
    while (p < end) {
      const c = source[p]!;
      if (c !== BACKSLASH) {
        b[o++] = c;
        p++;
        continue;
      }
      const e = source[p + 1]!;
      p += 2;
      switch (e) {
        case LETTER_U: {
          let point = hex4(source, p);
          p += 4;
          if (point >= 0xd800 && point <= 0xdbff && source[p] === BACKSLASH && source[p + 1] === LETTER_U) {
            const low = hex4(source, p + 2);
            if (low >= 0xdc00 && low <= 0xdfff) {
              point = 0x10000 + ((point - 0xd800) << 10) + (low - 0xdc00);
              p += 6;
              b[o++] = 0xf0 | (point >> 18);
              b[o++] = 0x80 | ((point >> 12) & 0x3f);
              b[o++] = 0x80 | ((point >> 6) & 0x3f);
              b[o++] = 0x80 | (point & 0x3f);
              break;
            }
          }
          if (point === 0 || (point >= 0xd800 && point <= 0xdfff)) {
            if (point === 0) stats.nulReplaced++;
            else stats.surrogatesReplaced++;
            b[o++] = 0xef;
            b[o++] = 0xbf;
            b[o++] = 0xbd;
          } else if (point < 0x80) o = copyEscaped(b, o, point);
          else if (point < 0x800) {
            b[o++] = 0xc0 | (point >> 6);
            b[o++] = 0x80 | (point & 0x3f);
          } else {
            b[o++] = 0xe0 | (point >> 12);
            b[o++] = 0x80 | ((point >> 6) & 0x3f);
            b[o++] = 0x80 | (point & 0x3f);
          }
          break;
        }
        case LETTER_B:
          b[o++] = 0x08;
          break;
        case LETTER_F:
          b[o++] = 0x0c;
          break;
        case LETTER_N:
          o = copyEscaped(b, o, 0x0a);
          break;
        case LETTER_R:
          o = copyEscaped(b, o, 0x0d);
          break;
        case LETTER_T:
          o = copyEscaped(b, o, 0x09);
          break;
        default:
          // \" \/ \\: the character itself.
          o = copyEscaped(b, o, e);
      }
    }
    this.#length = o;
  }

  /**
   * A JSON document as stringifyExactJson writes it, source[start, end) as UTF-8, as the COPY text field
   * copy-encoding.ts encodeJson writes of its text: straight from its bytes. The escapes \u0000 and a surrogate's
   * alone (\ud800-\udfff, as JSON.stringify writes them) become \ufffd, which jsonb stores, counted in `stats`; an
   * escaped backslash is taken whole first, so that the text "\\u0000" is left alone; then every backslash is
   * doubled for COPY (raw newlines, tabs and NULs cannot occur in JSON text, but are written as escapeCopyText would).
   */
  json(source: Buffer, start: number, end: number, stats: EncodeStats): void {
    // A byte becomes three at most (a NUL, U+FFFD).
    this.#reserve(3 * (end - start));
    const b = this.#bytes;
    let o = this.#length;
    let p = start;
    while (p < end) {
      const c = source[p]!;
      if (c !== BACKSLASH) {
        if (c >= 0x20) b[o++] = c;
        else if (c !== 0) o = copyEscaped(b, o, c);
        else {
          stats.nulReplaced++;
          b[o++] = 0xef;
          b[o++] = 0xbf;
          b[o++] = 0xbd;
        }
        p++;
        continue;
      }
      b[o++] = BACKSLASH;
      b[o++] = BACKSLASH;
      const e = source[p + 1];
      if (e === BACKSLASH) {
        b[o++] = BACKSLASH;
        b[o++] = BACKSLASH;
        p += 2;
      } else if (e === LETTER_U && p + 5 < end && unstorableEscape(source, p + 2)) {
        if (source[p + 2] === 0x30) stats.nulReplaced++;
        else stats.surrogatesReplaced++;
        for (const x of UFFFD) b[o++] = x;
        p += 6;
      } else p++;
    }
    this.#length = o;
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
