import { parse as parseLossless, stringify as stringifyLossless } from 'lossless-json';
import { ExactNumber } from '../model/post-record.js';
import { JsonStringReader } from './json-string.js';

/*
 * Technique: one string-aware scan finds the number tokens JSON.parse would round (long integers, decimals,
 * exponents) and wraps each into a string literal that starts with a marker character; native JSON.parse then
 * does the real work, and a walk over the result turns marked strings into ExactNumbers. Everything else is
 * left to JSON.parse. An object key written with an escape is handed to JSON.parse as a marked placeholder and
 * decoded by the scan, because V8's JSON.parse (Node 24) can return a wrong key once it has seen another escaped
 * one (after a key that is one escaped backslash, a key that is one escaped quote comes back as a backslash); the
 * walk puts the decoded keys back in place, in their order. A genuine string that could be mistaken for a marked
 * one sends the text to lossless-json instead (slower, always right). Invalid input is reported in lossless-json's
 * words, with a position in the text as received, so that an error reads the same on every Node version. The scan
 * also counts the keys of the text: when the result holds fewer, a key repeats, and lossless-json decides as it
 * does for every text it parses: the same rule whichever way a page goes.
 */

// A Latin-1 character keeps the rewritten text one-byte (two-byte strings slow JSON.parse down); a C1 control
// character is legal raw inside a JSON string but does not occur in real text.
const MARKER = 0x91;
const MARKER_CHAR = String.fromCharCode(MARKER);
const MARKER_ESCAPE = '0091';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const MINUS = 0x2d;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;
const LOWER_E = 0x65;
const UPPER_E = 0x45;
const PLUS = 0x2b;
const COLON = 0x3a;
const LOWER_U = 0x75;

/** Integers of at most this many digits are exact as JavaScript numbers (2^53 has 16 digits). */
const MAX_PLAIN_DIGITS = 15;

/**
 * The text needs lossless-json: a string looks like a marked number, a key written with escapes is invalid, or
 * two spellings of a key name the same key.
 */
class NeedsLosslessParse extends Error {}

/**
 * What the scan found: the rewritten text (null: nothing needed it), how many object keys the text holds, and the
 * decoded keys that placeholders stand for (by index).
 */
interface Scan {
  readonly marked: string | null;
  readonly keys: number;
  readonly escapedKeys: readonly string[];
}

/**
 * Returns the text with every number token that needs exactness rewritten as a marked string, or null when
 * no token needs it (a page without decimals or big ids is then parsed untouched), and the count of keys: JSON.parse
 * keeps the last of repeated keys silently, and fewer keys in its result than in the text tell that one repeats.
 */
function markNumbers(text: string): Scan {
  const length = text.length;
  let out = '';
  let copied = 0;
  let i = 0;
  let keys = 0;
  // The next backslash at or after i (or length): a string contains an escape when it lies before its end.
  let nextBackslash = -1;
  const escapedKeys: string[] = [];
  // Each spelling once: a spelling repeated within an object then shows as a repeated placeholder.
  const placeholders = new Map<string, string>();
  // Decoded here rather than by JSON.parse: see the top of this file.
  const keyReader = new JsonStringReader();
  while (i < length) {
    const code = text.charCodeAt(i);
    if (code === QUOTE) {
      checkNoMarker(text, i);
      const end = stringEnd(text, i);
      // An unterminated string: JSON.parse reports it.
      if (end === -1) break;
      if (nextBackslash < i) {
        nextBackslash = text.indexOf('\\', i + 1);
        if (nextBackslash === -1) nextBackslash = length;
      }
      if (nextBackslash < end && isKey(text, end + 1)) {
        const spelling = text.slice(i, end + 1);
        let placeholder = placeholders.get(spelling);
        if (placeholder === undefined) {
          // A literal JSON.parse would refuse (a bad escape, a raw control character): lossless-json says why.
          const key = keyReader.read(spelling, 0);
          if (key === null) throw new NeedsLosslessParse();
          escapedKeys.push(key);
          placeholder = `"${MARKER_CHAR}${escapedKeys.length - 1}"`;
          placeholders.set(spelling, placeholder);
        }
        out += `${text.slice(copied, i)}${placeholder}`;
        copied = end + 1;
      }
      i = end + 1;
      continue;
    }
    if (code !== MINUS && (code < ZERO || code > NINE)) {
      // Outside strings a colon follows a key and nothing else.
      if (code === COLON) keys += 1;
      i += 1;
      continue;
    }
    const start = i;
    const scanned = scanNumber(text, i);
    i = Math.floor(scanned / 2);
    if ((scanned & 1) === 0 || !inValuePosition(text, i)) continue;
    // Concatenation builds a rope that JSON.parse flattens once; measured faster than collecting and joining parts.
    out += `${text.slice(copied, start)}"${MARKER_CHAR}${text.slice(start, i)}"`;
    copied = i;
  }
  return { marked: copied === 0 ? null : out + text.slice(copied), keys, escapedKeys };
}

/** A genuine string starting at the quote `i` that could be taken for a marked number sends the text elsewhere. */
function checkNoMarker(text: string, i: number): void {
  const first = text.charCodeAt(i + 1);
  if (first === MARKER) throw new NeedsLosslessParse();
  if (first === BACKSLASH && text.charCodeAt(i + 2) === LOWER_U && text.startsWith(MARKER_ESCAPE, i + 3)) {
    throw new NeedsLosslessParse();
  }
}

/** The index of the quote closing the string that opens at `i`, or -1. */
function stringEnd(text: string, i: number): number {
  let end = text.indexOf('"', i + 1);
  while (end !== -1 && text.charCodeAt(end - 1) === BACKSLASH) {
    let backslashes = 1;
    while (text.charCodeAt(end - 1 - backslashes) === BACKSLASH) backslashes += 1;
    if (backslashes % 2 === 0) break;
    end = text.indexOf('"', end + 1);
  }
  return end;
}

/** Whether a char code is a digit; false past the end of the text, where charCodeAt gives NaN. */
function isDigit(c: number): boolean {
  return c >= ZERO && c <= NINE;
}

/** The index after the digits from `p` on. */
function skipDigits(text: string, p: number): number {
  let c = text.charCodeAt(p);
  while (c >= ZERO && c <= NINE) {
    p += 1;
    c = text.charCodeAt(p);
  }
  return p;
}

/**
 * Reads the number token at `i` (a minus or a digit), validating it: returns where the scan goes on times two,
 * plus one when it is a valid token that needs exactness (more digits than a double keeps, a fraction, an
 * exponent, or -0). Packed into one number, so that the hot loop allocates nothing.
 */
function scanNumber(text: string, i: number): number {
  const negative = text.charCodeAt(i) === MINUS;
  const integerStart = negative ? i + 1 : i;
  let c = text.charCodeAt(integerStart);
  if (!isDigit(c)) return integerStart * 2;
  let p = c === ZERO ? integerStart + 1 : skipDigits(text, integerStart);
  const integerDigits = p - integerStart;
  let exact = integerDigits > MAX_PLAIN_DIGITS || (negative && integerDigits === 1 && c === ZERO);
  c = text.charCodeAt(p);
  if (c === DOT) {
    exact = true;
    c = text.charCodeAt(p + 1);
    if (!isDigit(c)) return (p + 1) * 2;
    p = skipDigits(text, p + 1);
    c = text.charCodeAt(p);
  }
  if (c === LOWER_E || c === UPPER_E) {
    exact = true;
    p += 1;
    c = text.charCodeAt(p);
    if (c === PLUS || c === MINUS) {
      p += 1;
      c = text.charCodeAt(p);
    }
    if (!isDigit(c)) return p * 2;
    p = skipDigits(text, p);
  }
  return p * 2 + (exact ? 1 : 0);
}

/**
 * Only a whole token in a value position is rewritten: a number used as a key or glued to more characters stays,
 * so that JSON.parse still rejects it.
 */
function inValuePosition(text: string, end: number): boolean {
  const c = text.charCodeAt(skipWhitespace(text, end));
  return !(
    c === COLON ||
    (c >= ZERO && c <= NINE) ||
    c === DOT ||
    c === LOWER_E ||
    c === UPPER_E ||
    c === PLUS ||
    c === MINUS
  );
}

/** True when the string that ended just before `after` is an object key: a colon follows it. */
function isKey(text: string, after: number): boolean {
  return text.charCodeAt(skipWhitespace(text, after)) === COLON;
}

/** The index of the first character from `p` on that is not JSON whitespace. */
function skipWhitespace(text: string, p: number): number {
  let c = text.charCodeAt(p);
  while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) {
    p += 1;
    c = text.charCodeAt(p);
  }
  return p;
}

/** What a walk over a parsed document carries: the keys counted so far, and the keys placeholders stand for. */
interface Walk {
  keys: number;
  readonly escapedKeys: readonly string[];
}

/**
 * Turns marked strings below `value` (an object or array) into ExactNumbers, counting keys into `walk`; returns
 * the value, or the object rebuilt with its placeholder keys decoded, in their order.
 */
function revive(value: object, walk: Walk): object {
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i += 1) {
      const item: unknown = value[i];
      if (typeof item === 'string') {
        if (item.charCodeAt(0) === MARKER) value[i] = new ExactNumber(item.slice(1));
      } else if (item !== null && typeof item === 'object') {
        value[i] = revive(item, walk);
      }
    }
    return value;
  }
  const record = value as Record<string, unknown>;
  let placeholders = false;
  for (const key in record) {
    walk.keys += 1;
    if (key.charCodeAt(0) === MARKER) placeholders = true;
    const item = record[key];
    if (typeof item === 'string') {
      if (item.charCodeAt(0) === MARKER) setOwn(record, key, new ExactNumber(item.slice(1)));
    } else if (item !== null && typeof item === 'object') {
      setOwn(record, key, revive(item, walk));
    }
  }
  return placeholders ? withKeysDecoded(record, walk.escapedKeys) : record;
}

function withKeysDecoded(record: Record<string, unknown>, escapedKeys: readonly string[]): object {
  const out: Record<string, unknown> = {};
  for (const key in record) {
    const name = key.charCodeAt(0) === MARKER ? escapedKeys[Number(key.slice(1))]! : key;
    // Two spellings of one key: lossless-json decides whether the repeat is harmless.
    if (Object.hasOwn(out, name)) throw new NeedsLosslessParse();
    setOwn(out, name, record[key]);
  }
  return out;
}

/** Object.defineProperty for "__proto__": a plain assignment would replace the prototype. */
function setOwn(record: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') {
    Object.defineProperty(record, key, { value, enumerable: true, writable: true, configurable: true });
  } else {
    record[key] = value;
  }
}

/** How many keys the objects at and below `value` hold. */
function countKeys(value: object): number {
  let keys = 0;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i += 1) {
      const item: unknown = value[i];
      if (item !== null && typeof item === 'object') keys += countKeys(item);
    }
    return keys;
  }
  const record = value as Record<string, unknown>;
  for (const key in record) {
    keys += 1;
    const item = record[key];
    if (item !== null && typeof item === 'object') keys += countKeys(item);
  }
  return keys;
}

function parseNumberExactly(token: string): unknown {
  if (/^-?\d+$/.test(token) && token.replace('-', '').length <= MAX_PLAIN_DIGITS && token !== '-0') {
    return Number(token);
  }
  return new ExactNumber(token);
}

/**
 * Parses JSON text exactly: an integer of at most 15 digits becomes a plain number; every other number token
 * (longer integers, decimals, exponents, -0) becomes an ExactNumber holding the delivered text.
 * Throws SyntaxError on invalid JSON, like JSON.parse, with the same message on every Node version; on a key that
 * an object repeats with another value (`Duplicate key 'k' encountered at position N`), whichever way the text is
 * parsed; and on nesting deeper than the parser's stack.
 */
export function parseExactJson(text: string): unknown {
  try {
    return parseScanned(text);
  } catch (error) {
    if (error instanceof RangeError) {
      throw new SyntaxError(`the JSON nests too deep to be read (${error.message})`, { cause: error });
    }
    throw error;
  }
}

function parseScanned(text: string): unknown {
  try {
    return parseMarked(text);
  } catch (error) {
    if (error instanceof NeedsLosslessParse) return parseLosslessly(text);
    throw error;
  }
}

function parseMarked(text: string): unknown {
  const scan = markNumbers(text);
  let parsed: unknown;
  try {
    parsed = JSON.parse(scan.marked ?? text);
  } catch (error) {
    if (!(error instanceof SyntaxError)) throw error;
    // JSON.parse's wording differs between Node versions, and its position is in the marked text.
    parseLosslessly(text);
    throw error;
  }
  if (parsed === null || typeof parsed !== 'object') {
    return typeof parsed === 'string' && parsed.charCodeAt(0) === MARKER && scan.marked !== null
      ? new ExactNumber(parsed.slice(1))
      : parsed;
  }
  let keys: number;
  if (scan.marked === null) keys = countKeys(parsed);
  else {
    const walk: Walk = { keys: 0, escapedKeys: scan.escapedKeys };
    parsed = revive(parsed, walk);
    keys = walk.keys;
  }
  // A repeated key: lossless-json decides (a repeat with the same value is harmless, another value is refused).
  if (keys !== scan.keys) throw new NeedsLosslessParse();
  return parsed;
}

function parseLosslessly(text: string): unknown {
  return parseLossless(text, null, {
    parseNumber: parseNumberExactly,
    onDuplicateKey: ({ key, position }) => {
      throw new SyntaxError(
        `${pathAt(text, position)} repeats the key ${JSON.stringify(key)} with another value (position ${position})`,
      );
    },
  });
}

/**
 * Where the object holding the character at `position` sits in the document, as a path (`data[2]`,
 * `data[2].third_party_data`, or `the top-level object`). Called for error messages only: the text is valid up to
 * there, and is scanned again from its start.
 */
function pathAt(text: string, position: number): string {
  const stack: { key: string | null; index: number; array: boolean }[] = [];
  let i = 0;
  while (i < position && i < text.length) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const end = stringEnd(text, i);
      if (end === -1 || end >= position) break;
      const top = stack.at(-1);
      if (top !== undefined && !top.array && isKey(text, end + 1)) {
        top.key = String(parseLossless(text.slice(i, end + 1)));
      }
      i = end + 1;
      continue;
    }
    if (c === 0x7b || c === 0x5b) stack.push({ key: null, index: 0, array: c === 0x5b });
    else if (c === 0x7d || c === 0x5d) stack.pop();
    else if (c === 0x2c) {
      const top = stack.at(-1);
      if (top?.array) top.index += 1;
    }
    i += 1;
  }
  // The innermost container is the object whose key repeats; the path leads to it.
  let path = '';
  for (let k = 0; k < stack.length - 1; k += 1) {
    const container = stack[k]!;
    path += container.array ? `[${container.index}]` : `${path === '' ? '' : '.'}${container.key ?? ''}`;
  }
  return path === '' ? 'the top-level object' : path;
}

const EXACT_NUMBER_STRINGIFIER = {
  test: (value: unknown) => value instanceof ExactNumber,
  stringify: (value: unknown) => (value as ExactNumber).text,
};

/** The inverse of parseExactJson: ExactNumbers are written as their delivered digits. */
export function stringifyExactJson(value: unknown): string {
  const text =
    stringifyParsed(value) ?? stringifyLossless(value, null, undefined, [EXACT_NUMBER_STRINGIFIER]);
  if (text === undefined) throw new TypeError(`cannot write ${typeof value} as JSON`);
  return text;
}

const JSON_NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

/**
 * What parseExactJson returns (plain objects and arrays of strings, booleans, null, numbers and ExactNumbers),
 * written as lossless-json writes it but without asking a list of stringifiers about every value: every nested
 * document of every post goes through here. Anything else (undefined, a toJSON, a Date, a class instance, a
 * number that is not finite) returns undefined, for lossless-json to write.
 */
function stringifyParsed(value: unknown): string | undefined {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      return Number.isFinite(value) ? JSON.stringify(value) : undefined;
    case 'object': {
      if (value === null) return 'null';
      if (value instanceof ExactNumber) return JSON_NUMBER.test(value.text) ? value.text : undefined;
      if (Array.isArray(value)) {
        let out = '[';
        for (let i = 0; i < value.length; i += 1) {
          const item = stringifyParsed(value[i]);
          if (item === undefined) return undefined;
          out += i === 0 ? item : `,${item}`;
        }
        return `${out}]`;
      }
      const proto: unknown = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) return undefined;
      const record = value as Record<string, unknown>;
      if (typeof record.toJSON === 'function') return undefined;
      let out = '{';
      let first = true;
      for (const key of Object.keys(record)) {
        const item = stringifyParsed(record[key]);
        if (item === undefined) return undefined;
        out += `${first ? '' : ','}${JSON.stringify(key)}:${item}`;
        first = false;
      }
      return `${out}}`;
    }
    default:
      return undefined;
  }
}
