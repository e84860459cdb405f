/** Characters a JSON string holds as they are: anything but the quote, the backslash and control characters. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: JSON refuses raw control characters in a string, so the scan stops at them.
const PLAIN = /[^"\\\u0000-\u001f]*/y;
const HEX = /^[0-9a-fA-F]{4}$/;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const LOWER_U = 0x75;
const ESCAPES: Readonly<Record<number, string>> = {
  34: '"',
  92: '\\',
  47: '/',
  98: '\b',
  102: '\f',
  110: '\n',
  114: '\r',
  116: '\t',
};

/**
 * Reads JSON string literals out of a text, decoding their escapes as JSON.parse does. One reader per text being
 * read: it keeps its own copy of the scanning expression, whose position is state.
 */
export class JsonStringReader {
  readonly #plain = new RegExp(PLAIN);
  /** After a successful read: the index just past the closing quote. */
  end = 0;
  /** How many of the strings read held an escape. */
  escapes = 0;

  /**
   * The string whose opening quote is at `quote`, decoded; null when it is not a valid JSON string (a bad escape,
   * a raw control character, no closing quote).
   */
  read(text: string, quote: number): string | null {
    const plain = this.#plain;
    const start = quote + 1;
    plain.lastIndex = start;
    plain.test(text);
    let end = plain.lastIndex;
    let c = text.charCodeAt(end);
    if (c === QUOTE) {
      this.end = end + 1;
      return text.slice(start, end);
    }
    let out = text.slice(start, end);
    if (c === BACKSLASH) this.escapes++;
    while (c === BACKSLASH) {
      const escaped = text.charCodeAt(end + 1);
      if (escaped === LOWER_U) {
        const hex = text.slice(end + 2, end + 6);
        if (!HEX.test(hex)) return null;
        out += String.fromCharCode(Number.parseInt(hex, 16));
        end += 6;
      } else {
        const decoded = ESCAPES[escaped];
        if (decoded === undefined) return null;
        out += decoded;
        end += 2;
      }
      plain.lastIndex = end;
      plain.test(text);
      out += text.slice(end, plain.lastIndex);
      end = plain.lastIndex;
      c = text.charCodeAt(end);
    }
    // A raw control character, or the end of the text.
    if (c !== QUOTE) return null;
    this.end = end + 1;
    return out;
  }
}
