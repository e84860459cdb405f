/*
 * UTF-8 bodies read as bytes: the text a body would decode to, kept as its bytes.
 */

const BOM_0 = 0xef;
const BOM_1 = 0xbb;
const BOM_2 = 0xbf;

/** The bytes as a Buffer, without copying them. */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Valid UTF-8 without its byte order mark: the UTF-8 of the text TextDecoder makes of it (which drops one). */
export function withoutBom(bytes: Buffer): Buffer {
  return bytes[0] === BOM_0 && bytes[1] === BOM_1 && bytes[2] === BOM_2 ? bytes.subarray(3) : bytes;
}
