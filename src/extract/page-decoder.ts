/*
 * A page of a DONE report read in one pass from its text to mapped posts: no document tree, no marked numbers, no
 * second walk. It takes the pages the service sends (valid JSON, each key once, ids and segments as documented)
 * and hands back null for anything else; the caller then reads the page the full way (exact-json.ts, pager.ts,
 * record-mapping.ts), which decides what the page holds and words every error. So this pass never has to be right
 * about a page it refuses, only about the pages it takes: for those its posts are the full way's, value for value
 * and key for key (the differential test holds it to that).
 */
import { parseExactJson, stringifyExactJson } from '../api/exact-json.js';
import { JsonStringReader } from '../api/json-string.js';
import {
  type CustomSegment,
  ExactNumber,
  type FieldValue,
  JsonDocument,
  type MappedPost,
} from '../model/post-record.js';
import { canonicalId, type MappingContext } from './record-mapping.js';

/** What a page decoded in one pass holds: its status as sent (undefined when absent), next page and posts. */
export interface DecodedPage {
  readonly status: string | undefined;
  readonly nextPage: string | null;
  readonly posts: MappedPost[];
}

const MAX_POSTS = 1000;
/** Deeper documents are left to the full parser, which knows its own stack. */
const MAX_DEPTH = 512;
const SEGMENTS_FIELD = 'custom_segments';

const QUOTE = 0x22;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const MINUS = 0x2d;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;
const PLUS = 0x2b;

/** Thrown inside the pass for a page it does not take; never leaves this module. */
class NotTaken extends Error {}

const notTaken = new NotTaken();

/** A key of the page, once per spelling: its decoded name and what the mapping does with it. */
interface Key {
  /** The key as written, quotes included. */
  readonly spelling: string;
  readonly name: string;
  /** One number per name, whatever its spelling: a record's keys are checked for repeats by it. */
  readonly slot: number;
  readonly role: 'id' | 'segments' | 'field' | 'dropped';
}

/**
 * Decodes a report page in one pass; null where the full way must read it (it is not JSON, a key repeats, an id
 * or the segments are not as documented, data holds more than a page may, and so on).
 */
export function decodePage(text: string, context: MappingContext): DecodedPage | null {
  try {
    return new PageDecoder(text, context).page();
  } catch (error) {
    if (error === notTaken) return null;
    throw error;
  }
}

class PageDecoder {
  readonly #text: string;
  readonly #context: MappingContext;
  #i = 0;
  readonly #keys = new Map<string, Key>();
  readonly #slots = new Map<string, number>();
  /** For each slot, the last record (counted from 1) that held its key. */
  readonly #seenIn: number[] = [];
  /** The keys of the record before, in order: the next record almost always repeats them. */
  #shape: Key[] = [];
  readonly #strings = new JsonStringReader();
  /** See #irregular. */
  #oddities = 0;
  #spaces = 0;

  constructor(text: string, context: MappingContext) {
    this.#text = text;
    this.#context = context;
  }

  page(): DecodedPage {
    let status: string | undefined;
    let nextPage: string | null | undefined;
    let posts: MappedPost[] | undefined;
    const seen = new Set<string>();
    this.#expect(OPEN_BRACE);
    if (!this.#closes(CLOSE_BRACE)) {
      do {
        const name = this.#key().name;
        if (seen.has(name)) throw notTaken;
        seen.add(name);
        if (name === 'data') posts = this.#posts();
        else if (name === 'response_metadata') nextPage = this.#metadata();
        else if (name === 'status') {
          const at = this.#skipWhitespace();
          if (this.#text.charCodeAt(at) === QUOTE) status = this.#string();
          else this.#skipValue();
        } else this.#skipValue();
      } while (this.#next(CLOSE_BRACE));
    }
    if (this.#skipWhitespace() !== this.#text.length) throw notTaken;
    if (posts === undefined || nextPage === undefined) throw notTaken;
    return { status, nextPage, posts };
  }

  /** data: an array of at most a page's posts, each an object. */
  #posts(): MappedPost[] {
    const posts: MappedPost[] = [];
    this.#expect(OPEN_BRACKET);
    if (this.#closes(CLOSE_BRACKET)) return posts;
    do {
      if (posts.length === MAX_POSTS) throw notTaken;
      posts.push(this.#post(posts.length));
    } while (this.#next(CLOSE_BRACKET));
    return posts;
  }

  /** response_metadata: an array whose first element is an object with next_page a non-empty string or null. */
  #metadata(): string | null {
    let next: string | null | undefined;
    this.#expect(OPEN_BRACKET);
    this.#expect(OPEN_BRACE);
    const seen = new Set<string>();
    if (!this.#closes(CLOSE_BRACE)) {
      do {
        const name = this.#key().name;
        if (seen.has(name)) throw notTaken;
        seen.add(name);
        if (name !== 'next_page') this.#skipValue();
        else if (this.#text.charCodeAt(this.#skipWhitespace()) === QUOTE) next = detached(this.#string());
        else if (this.#literal('null')) next = null;
        else throw notTaken;
      } while (this.#next(CLOSE_BRACE));
    }
    if (next === undefined || next === '') throw notTaken;
    while (this.#next(CLOSE_BRACKET)) this.#skipValue();
    return next;
  }

  #post(index: number): MappedPost {
    const fields: Record<string, FieldValue> = Object.create(null);
    let id: string | undefined;
    let segments: readonly CustomSegment[] = [];
    const shape = this.#shape;
    const keys: Key[] = [];
    this.#expect(OPEN_BRACE);
    if (!this.#closes(CLOSE_BRACE)) {
      do {
        const key = this.#keyLike(shape[keys.length]);
        // A key repeated within the record: the full way decides whether the repeat is harmless.
        if (this.#seenIn[key.slot] === index + 1) throw notTaken;
        this.#seenIn[key.slot] = index + 1;
        keys.push(key);
        switch (key.role) {
          case 'id':
            id = this.#id(index);
            break;
          case 'segments':
            segments = this.#segments();
            break;
          case 'dropped':
            this.#skipValue();
            break;
          default:
            fields[key.name] = this.#value();
        }
      } while (this.#next(CLOSE_BRACE));
    }
    if (id === undefined) throw notTaken;
    this.#shape = keys;
    return { id, fields, segments };
  }

  /** The key at the cursor, found by its spelling; `guess`, the key in this place in the record before, first. */
  #keyLike(guess: Key | undefined): Key {
    const text = this.#text;
    const at = this.#skipWhitespace();
    if (guess !== undefined && text.startsWith(guess.spelling, at)) {
      this.#i = at + guess.spelling.length;
      this.#expectColon();
      return guess;
    }
    return this.#key();
  }

  /** The key at the cursor and its colon. */
  #key(): Key {
    const at = this.#skipWhitespace();
    const text = this.#text;
    if (text.charCodeAt(at) !== QUOTE) throw notTaken;
    const name = this.#string();
    const spelling = text.slice(at, this.#i);
    let key = this.#keys.get(spelling);
    if (key === undefined) {
      let slot = this.#slots.get(name);
      if (slot === undefined) {
        slot = this.#slots.size;
        this.#slots.set(name, slot);
      }
      key = { spelling, name, slot, role: this.#role(name) };
      this.#keys.set(spelling, key);
    }
    this.#expectColon();
    return key;
  }

  #role(name: string): Key['role'] {
    const { postIdField, keep } = this.#context;
    if (name === postIdField) return 'id';
    // A field left out by the selection goes no further.
    if (keep && !keep(name)) return 'dropped';
    return name === SEGMENTS_FIELD ? 'segments' : 'field';
  }

  #id(index: number): string {
    const at = this.#skipWhitespace();
    const c = this.#text.charCodeAt(at);
    let value: unknown;
    if (c === QUOTE) value = this.#string();
    else if (c === MINUS || (c >= ZERO && c <= NINE)) value = this.#number();
    else throw notTaken;
    try {
      return canonicalId(value, () => `record ${index + 1}`);
    } catch {
      throw notTaken;
    }
  }

  /** custom_segments: null, or an array of {"name": non-empty string, "value": string}; each pair once. */
  #segments(): readonly CustomSegment[] {
    if (this.#literal('null')) return [];
    const out: CustomSegment[] = [];
    this.#expect(OPEN_BRACKET);
    if (this.#closes(CLOSE_BRACKET)) return out;
    let seen: Set<string> | undefined;
    do {
      const segment = this.#segment();
      // An exact repeat adds nothing and would collide in the segments table.
      if (out.length > 0) {
        if (seen === undefined) {
          seen = new Set();
          for (const s of out) seen.add(`${s.name}\u0000${s.value}`);
        }
        const key = `${segment.name}\u0000${segment.value}`;
        if (seen.has(key)) continue;
        seen.add(key);
      }
      out.push(segment);
    } while (this.#next(CLOSE_BRACKET));
    return out;
  }

  #segment(): CustomSegment {
    let name: string | undefined;
    let value: string | undefined;
    const seen = new Set<string>();
    this.#expect(OPEN_BRACE);
    if (!this.#closes(CLOSE_BRACE)) {
      do {
        const key = this.#key().name;
        if (seen.has(key)) throw notTaken;
        seen.add(key);
        const quoted = this.#text.charCodeAt(this.#skipWhitespace()) === QUOTE;
        if (key === 'name' && quoted) name = this.#string();
        else if (key === 'value' && quoted) value = this.#string();
        else if (key === 'name' || key === 'value') throw notTaken;
        else this.#skipValue();
      } while (this.#next(CLOSE_BRACE));
    }
    if (name === undefined || name === '' || value === undefined) throw notTaken;
    return { name, value };
  }

  /** A field's value as record-mapping.ts makes it. */
  #value(): FieldValue {
    const text = this.#text;
    const at = this.#skipWhitespace();
    const c = text.charCodeAt(at);
    if (c === QUOTE) return this.#string();
    if (c === MINUS || (c >= ZERO && c <= NINE)) {
      const token = this.#number();
      return isPlainInteger(token) ? Number(token) : new ExactNumber(token);
    }
    if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      const before = this.#irregular();
      this.#skipValue();
      const slice = text.slice(at, this.#i);
      // Written compactly, without escapes, lone surrogates or keys V8 would put first, a document is already what
      // stringifyExactJson would write of it.
      if (this.#irregular() === before) return new JsonDocument(slice);
      try {
        return new JsonDocument(stringifyExactJson(parseExactJson(slice)));
      } catch {
        throw notTaken;
      }
    }
    if (this.#literal('true')) return true;
    if (this.#literal('false')) return false;
    if (this.#literal('null')) return null;
    throw notTaken;
  }

  /** Validates and passes over any JSON value; a key repeated in one of its objects is the full way's to judge. */
  #skipValue(): void {
    const text = this.#text;
    // The keys of each container opened, innermost last; null for an array.
    const open: (Set<string> | null)[] = [];
    for (;;) {
      const at = this.#skipWhitespace();
      const c = text.charCodeAt(at);
      if (c === OPEN_BRACE || c === OPEN_BRACKET) {
        this.#i = at + 1;
        if (open.length === MAX_DEPTH) throw notTaken;
        if (this.#closes(c === OPEN_BRACE ? CLOSE_BRACE : CLOSE_BRACKET)) {
          if (!this.#afterValue(open)) return;
          continue;
        }
        const keys = c === OPEN_BRACE ? new Set<string>() : null;
        open.push(keys);
        if (keys !== null) this.#memberKey(keys);
        continue;
      }
      if (c === QUOTE) {
        if (!this.#string().isWellFormed()) this.#oddities++;
      } else if (c === MINUS || (c >= ZERO && c <= NINE)) this.#number();
      else if (!(this.#literal('true') || this.#literal('false') || this.#literal('null'))) throw notTaken;
      if (!this.#afterValue(open)) return;
    }
  }

  /** After a value inside containers: the next member's start, or the containers it closes; false when done. */
  #afterValue(open: (Set<string> | null)[]): boolean {
    while (open.length > 0) {
      const keys = open.at(-1)!;
      if (this.#next(keys === null ? CLOSE_BRACKET : CLOSE_BRACE)) {
        if (keys !== null) this.#memberKey(keys);
        return true;
      }
      open.pop();
    }
    return false;
  }

  /** A key of an object being passed over, once. */
  #memberKey(keys: Set<string>): void {
    const name = this.#key().name;
    if (keys.has(name)) throw notTaken;
    keys.add(name);
    const first = name.charCodeAt(0);
    if ((first >= ZERO && first <= NINE) || !name.isWellFormed()) this.#oddities++;
  }

  /**
   * A count that grows with everything a compact copy of a document would not keep as stringifyExactJson writes
   * it: whitespace, escapes, lone surrogates, keys that may be array indexes.
   */
  #irregular(): number {
    return this.#oddities + this.#spaces + this.#strings.escapes;
  }

  /** The string at the cursor (its opening quote), decoded; the cursor moves past its closing quote. */
  #string(): string {
    const value = this.#strings.read(this.#text, this.#skipWhitespace());
    if (value === null) throw notTaken;
    this.#i = this.#strings.end;
    return value;
  }

  /** The number token at the cursor, validated as JSON's grammar has it. */
  #number(): string {
    const text = this.#text;
    const start = this.#i;
    let p = start;
    if (text.charCodeAt(p) === MINUS) p++;
    let c = text.charCodeAt(p);
    if (c === ZERO) p++;
    else if (c >= 0x31 && c <= NINE) p = digitsFrom(text, p + 1);
    else throw notTaken;
    c = text.charCodeAt(p);
    if (c === DOT) {
      const end = digitsFrom(text, p + 1);
      if (end === p + 1) throw notTaken;
      p = end;
      c = text.charCodeAt(p);
    }
    if (c === 0x65 || c === 0x45) {
      p++;
      c = text.charCodeAt(p);
      if (c === PLUS || c === MINUS) p++;
      const end = digitsFrom(text, p);
      if (end === p) throw notTaken;
      p = end;
    }
    this.#i = p;
    return text.slice(start, p);
  }

  #literal(word: string): boolean {
    const at = this.#skipWhitespace();
    if (!this.#text.startsWith(word, at)) return false;
    this.#i = at + word.length;
    return true;
  }

  #expect(c: number): void {
    const at = this.#skipWhitespace();
    if (this.#text.charCodeAt(at) !== c) throw notTaken;
    this.#i = at + 1;
  }

  #expectColon(): void {
    this.#expect(COLON);
  }

  /** True (and past it) when the container closes here, at its start. */
  #closes(close: number): boolean {
    const at = this.#skipWhitespace();
    if (this.#text.charCodeAt(at) !== close) return false;
    this.#i = at + 1;
    return true;
  }

  /** After a member: true for a comma (another member follows), false for the container's end. */
  #next(close: number): boolean {
    const at = this.#skipWhitespace();
    const c = this.#text.charCodeAt(at);
    this.#i = at + 1;
    if (c === COMMA) return true;
    if (c === close) return false;
    throw notTaken;
  }

  /** Moves the cursor past JSON whitespace; returns it. */
  #skipWhitespace(): number {
    const text = this.#text;
    let i = this.#i;
    let c = text.charCodeAt(i);
    while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = text.charCodeAt(++i);
    if (i !== this.#i) {
      this.#spaces++;
      this.#i = i;
    }
    return i;
  }
}

/**
 * A copy of a string that does not hold on to the page's text. V8 makes a longer slice a view into the string it
 * was cut from, and the next page token outlives its page (the pager keeps every token of the report to find a
 * cycle): as a view, it kept each page's whole text alive until the report was read.
 */
function detached(slice: string): string {
  return `${slice} `.slice(0, -1);
}

function digitsFrom(text: string, p: number): number {
  let c = text.charCodeAt(p);
  while (c >= ZERO && c <= NINE) c = text.charCodeAt(++p);
  return p;
}

/** An integer of at most 15 digits (not -0): exact as a JavaScript number, as parseExactJson returns it. */
function isPlainInteger(token: string): boolean {
  const digits = token.charCodeAt(0) === MINUS ? token.length - 1 : token.length;
  if (digits > 15 || token === '-0') return false;
  for (let i = token.length - digits; i < token.length; i++) {
    const c = token.charCodeAt(i);
    if (c < ZERO || c > NINE) return false;
  }
  return true;
}
