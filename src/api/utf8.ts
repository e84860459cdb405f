/*
 * UTF-8 bodies read as bytes: what a body's text would be, told from its bytes without decoding them.
 */

const BOM_0 = 0xef;
const BOM_1 = 0xbb;
const BOM_2 = 0xbf;
const EMPTY = new Int32Array(0);

/** The bytes as a Buffer, without copying them. */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Valid UTF-8 without its byte order mark: the UTF-8 of the text TextDecoder makes of it (which drops one). */
export function withoutBom(bytes: Buffer): Buffer {
  return bytes[0] === BOM_0 && bytes[1] === BOM_1 && bytes[2] === BOM_2 ? bytes.subarray(3) : bytes;
}

/**
 * The length in UTF-16 units of the text that valid UTF-8 decodes to: one unit per character, two for one of four
 * bytes. Counted four bytes at a time: each byte is one unit, but for a continuation byte (10xxxxxx), and a
 * leading byte of four (11110xxx) adds one.
 */
export function utf16Length(bytes: Uint8Array): number {
  const n = bytes.length;
  let units = n;
  let i = 0;
  const head = Math.min(n, (4 - (bytes.byteOffset & 3)) & 3);
  for (; i < head; i++) units += unitsOf(bytes[i]!);
  const words = (n - i) >>> 2;
  // (No words: i may be short of the alignment an Int32Array needs.)
  const ints = words > 0 ? new Int32Array(bytes.buffer, bytes.byteOffset + i, words) : EMPTY;
  let continuations = 0;
  let fours = 0;
  for (let k = 0; k < words; k++) {
    const w = ints[k]!;
    if ((w & 0x80808080) === 0) continue;
    // The top bit of each byte: set for 10xxxxxx, then for 1111xxxx; summed by a multiplication into the top byte.
    const c = w & ~(w << 1) & 0x80808080;
    continuations += Math.imul(c >>> 7, 0x01010101) >>> 24;
    const f = w & (w << 1) & (w << 2) & (w << 3) & 0x80808080;
    fours += Math.imul(f >>> 7, 0x01010101) >>> 24;
  }
  units += fours - continuations;
  for (i += 4 * words; i < n; i++) units += unitsOf(bytes[i]!);
  return units;
}

function unitsOf(byte: number): number {
  return (byte & 0xc0) === 0x80 ? -1 : byte >= 0xf0 ? 1 : 0;
}
