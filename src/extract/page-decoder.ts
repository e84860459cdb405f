/*
 * A page of a DONE report read in one pass from its bytes (UTF-8) to a tape of its posts (model/page-tape.ts): no document
 * tree, no object per post or per value, numbers kept as their tokens. It takes the pages the service sends (valid
 * JSON, each key once, ids and segments as documented) and hands back null for anything else; the caller then
 * reads the page the full way (exact-json.ts, pager.ts, record-mapping.ts), which decides what the page holds and
 * words every error. So this pass never has to be right about a page it refuses, only about the pages it takes:
 * for those its tape is the full way's posts, value for value and key for key, and load writes the same rows from
 * it (the differential test holds it to that). Reading the bytes, not a text decoded from them, spares the decoding,
 * the text (most of a load's garbage) and load's encoding of it back to UTF-8: a string without escapes is its
 * bytes, already COPY text.
 */
import { isUtf8 } from 'node:buffer';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { parseExactJson, stringifyExactJson } from '../api/exact-json.js';
import { JsonStringReader } from '../api/json-string.js';
import type { BufferPool } from '../model/buffer-pool.js';
import {
  escapedString,
  PageTape,
  SEGMENT_STRIDE,
  TAPE_BIGNUM,
  TAPE_DECIMAL,
  TAPE_ESCAPED_JSON,
  TAPE_ESCAPED_STRING,
  TAPE_FALSE,
  TAPE_INT64,
  TAPE_INTEGER,
  TAPE_JSON,
  TAPE_OWNED_JSON,
  TAPE_OWNED_STRING,
  TAPE_REWRITTEN_JSON,
  TAPE_STRING,
  TAPE_TRUE,
  VALUE_STRIDE,
} from '../model/page-tape.js';
import { canonicalId, type MappingContext } from './record-mapping.js';

/** What a page decoded in one pass holds: its status as sent (undefined when absent), next page and posts. */
export interface DecodedPage {
  readonly status: string | undefined;
  readonly nextPage: string | null;
  readonly posts: PageTape;
  /**
   * How many of its values the pass handed to the full parser (exact-json.ts) one by one: nested documents holding
   * a key repeated within one of their objects. The rest of the page is the pass's own.
   */
  readonly valuesTheFullWay: number;
}

const MAX_POSTS = 1000;
/** Deeper documents are left to the full parser, which knows its own stack. */
const MAX_DEPTH = 512;
/** Objects within a value with more keys are left to the full parser: their keys are checked for repeats one by one. */
const MAX_MEMBERS = 256;
/** How many keys of the record before are tried, from the place of the last one found, before a key is looked up. */
const LOOKAHEAD = 4;
const SEGMENTS_FIELD = 'custom_segments';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
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

const INT64_MAX_DIGITS = '9223372036854775807';
const INT64_MIN_DIGITS = '9223372036854775808';

/** Thrown inside the pass for a page it does not take; never leaves this module. */
class NotTaken extends Error {}

const notTaken = new NotTaken();

/** A key of the page, once per spelling: its decoded name and what the mapping does with it. */
interface Key {
  /** The key as written, quotes included (a copy: the page's bytes are not kept by it). */
  readonly spelling: Uint8Array;
  readonly name: string;
  /** One number per name, whatever its spelling: a record's keys are checked for repeats by it. */
  readonly slot: number;
  readonly role: 'id' | 'segments' | 'field' | 'dropped';
  /**
   * A key stringifyExactJson would not write as it is spelled where it stands: written with an escape, not
   * well-formed, or one that may be an array index (V8 puts those first).
   */
  readonly odd: boolean;
  /**
   * The name as JSON.stringify writes it, as UTF-8, and whether it is an array index (#rewrite writes documents
   * with them).
   */
  readonly json: Buffer;
  readonly index: boolean;
}

/** A list of ints that grows: the tape's values and segments, four ints each. */
class Ints {
  #ints: Int32Array;
  length = 0;

  /** `pool`: where the ints' memory comes from (only the first array: one grown is rare, and garbage). */
  constructor(capacity: number, pool?: BufferPool) {
    this.#ints =
      pool === undefined ? new Int32Array(capacity) : new Int32Array(pool.take(capacity * 4), 0, capacity);
  }

  push(a: number, b: number, c: number, d: number): void {
    let ints = this.#ints;
    const n = this.length;
    if (n + 4 > ints.length) {
      const grown = new Int32Array(ints.length * 2);
      grown.set(ints);
      this.#ints = ints = grown;
    }
    ints[n] = a;
    ints[n + 1] = b;
    ints[n + 2] = c;
    ints[n + 3] = d;
    this.length = n + 4;
  }

  done(): Int32Array {
    return this.#ints.subarray(0, this.length);
  }
}

/** Bytes that grow: the documents the decoder writes again (TAPE_REWRITTEN_JSON). */
class Bytes {
  #bytes = Buffer.allocUnsafeSlow(16 * 1024);
  length = 0;

  #reserve(n: number): Buffer {
    if (this.length + n > this.#bytes.length) {
      const grown = Buffer.allocUnsafeSlow(Math.max(2 * this.#bytes.length, this.length + n));
      this.#bytes.copy(grown, 0, 0, this.length);
      this.#bytes = grown;
    }
    return this.#bytes;
  }

  byte(c: number): void {
    this.#reserve(1)[this.length++] = c;
  }

  /** source[start, end) as it is. */
  bytes(source: Uint8Array, start: number, end: number): void {
    const b = this.#reserve(end - start);
    let p = this.length;
    for (let i = start; i < end; i++) b[p++] = source[i]!;
    this.length = p;
  }

  /** A string as UTF-8. */
  text(text: string): void {
    this.length += this.#reserve(3 * text.length).write(text, this.length);
  }

  /** The bytes from `start` on, copied out, and forgotten here. */
  cut(start: number): Buffer {
    const cut = Buffer.from(this.#bytes.subarray(start, this.length));
    this.length = start;
    return cut;
  }

  done(): Buffer {
    return this.#bytes.subarray(0, this.length);
  }
}

/**
 * A list emptied record after record by its count alone: an array whose length is set to 0 lets its storage go
 * and grows it again, which for the keys of every record of a page was most of the pass's garbage.
 */
class ReusedList<T> {
  readonly items: T[] = [];
  length = 0;

  push(item: T): void {
    this.items[this.length++] = item;
  }

  includes(item: T): boolean {
    for (let i = 0; i < this.length; i++) if (this.items[i] === item) return true;
    return false;
  }
}

/** Posts decoded between two turns of the event loop: a slice takes about a millisecond. */
const POSTS_PER_SLICE = 128;

/**
 * Decodes a report page in one pass from the UTF-8 of its text; null where the full way must read it (it is not
 * valid UTF-8 or not JSON, a key repeats, an id or the segments are not as documented, data holds more than a page
 * may, and so on).
 */
export async function decodePage(
  bytes: Buffer,
  context: MappingContext,
  tapes?: BufferPool,
): Promise<DecodedPage | null> {
  // Strings are copied to COPY as their bytes: those must be UTF-8 (the client hands no other, and this costs
  // little next to the pass).
  if (!isUtf8(bytes)) return null;
  const decoder = new PageDecoder(bytes, context, tapes);
  try {
    const steps = decoder.page();
    for (;;) {
      const step = steps.next();
      if (step.done) return step.value;
      // The previous page's transaction goes on between slices: each of its round trips waits for one to end.
      await nextTurn();
    }
  } catch (error) {
    // No tape was made: nothing reads its values.
    tapes?.give(decoder.values);
    if (error === notTaken) return null;
    throw error;
  }
}

class PageDecoder {
  readonly #bytes: Buffer;
  readonly #context: MappingContext;
  #i = 0;
  /** The page's keys by a hash of their spelling (see #lookup). */
  readonly #keys = new Map<number, Key[]>();
  /** Where #keyFrom found its key in the keys it was given, plus one. */
  #found = 0;
  /** For each depth of the objects within a value, the slots of the keys of the one open (reused: no set each). */
  readonly #members: ReusedList<number>[] = [];
  /** The containers #skipValue has open, innermost last: the slots of an object's keys, null for an array. */
  readonly #open = new ReusedList<ReusedList<number> | null>();
  readonly #slots = new Map<string, number>();
  /** For each slot, the last record (counted from 1) that held its key. */
  readonly #seenIn: number[] = [];
  /** The keys of the record before, in order: the next record almost always repeats them. */
  #shape = new ReusedList<Key>();
  /** The keys of the record being read (the lists swap: no list per record). */
  #reading = new ReusedList<Key>();
  /** The keys of the segment before, and of the segment being read. */
  #segmentShape = new ReusedList<Key>();
  #segmentReading = new ReusedList<Key>();
  readonly #strings = new JsonStringReader();
  /** See #irregular. */
  #oddities = 0;
  /** Keys repeated within an object of a field's value, counted (and not refused) while #inField. */
  #repeats = 0;
  #inField = false;
  /** Values handed to the full parser one by one (DecodedPage.valuesTheFullWay). */
  #valuesTheFullWay = 0;
  /** Strings passed over within values that hold an escape JSON.stringify writes as it is (see #canonicalString). */
  #canonicalEscapes = 0;
  #spaces = 0;

  // The tape being written.
  readonly #ids = new Int32Array(2 * MAX_POSTS);
  readonly #values: Ints;
  readonly #postValues = new Int32Array(MAX_POSTS + 1);
  readonly #segments = new Ints(1024);
  readonly #postSegments = new Int32Array(MAX_POSTS + 1);
  readonly #owned: string[] = [];
  readonly #rewritten = new Bytes();
  /** For each slot, its field on the tape, or -1 before a value other than null came. */
  readonly #fieldOf: number[] = [];
  readonly #fields: string[] = [];
  readonly #kinds: number[] = [];
  /** For each field, the post that first held a value of it. */
  readonly #firstPost: number[] = [];
  /** Some field has an array index for a name: the full way enumerates such keys first. */
  #indexNames = false;
  /** The range of the string or number last read. */
  #start = 0;
  #end = 0;

  constructor(bytes: Buffer, context: MappingContext, tapes?: BufferPool) {
    this.#bytes = bytes;
    this.#context = context;
    // Pages of posts hold a value in every 30 to 40 bytes: room for them without growing, and not much more (the
    // tape lives until the page is encoded).
    this.#values = new Ints(VALUE_STRIDE * Math.max(256, Math.ceil(bytes.length / 24)), tapes);
  }

  /** The values written so far (the tape's, once done). */
  get values(): Int32Array {
    return this.#values.done();
  }

  /** Yields every POSTS_PER_SLICE posts, for pending I/O to be served meanwhile (decodePage). */
  *page(): Generator<void, DecodedPage> {
    let status: string | undefined;
    let nextPage: string | null | undefined;
    let posts: number | undefined;
    const seen = new Set<string>();
    this.#expect(OPEN_BRACE);
    if (!this.#closes(CLOSE_BRACE)) {
      do {
        const name = this.#key().name;
        if (seen.has(name)) throw notTaken;
        seen.add(name);
        if (name === 'data') posts = yield* this.#posts();
        else if (name === 'response_metadata') nextPage = this.#metadata();
        else if (name === 'status') {
          const at = this.#skipWhitespace();
          if (this.#bytes[at] === QUOTE) status = this.#string();
          else this.#skipValue();
        } else this.#skipValue();
      } while (this.#next(CLOSE_BRACE));
    }
    if (this.#skipWhitespace() !== this.#bytes.length) throw notTaken;
    if (posts === undefined || nextPage === undefined) throw notTaken;
    return { status, nextPage, posts: this.#tape(posts), valuesTheFullWay: this.#valuesTheFullWay };
  }

  #tape(posts: number): PageTape {
    const values = this.#values.done();
    let fields = this.#fields;
    let kinds = this.#kinds;
    if (this.#indexNames) {
      // The full way's posts are objects: a key that is an array index comes before the others, in numeric order.
      const first = this.#firstPost;
      const index = fields.map((name) => (isArrayIndex(name) ? Number(name) : -1));
      const order = fields.map((_, f) => f);
      order.sort((a, b) => {
        if (first[a] !== first[b]) return first[a]! - first[b]!;
        const x = index[a]!;
        const y = index[b]!;
        if (x >= 0 || y >= 0) return x < 0 ? 1 : y < 0 ? -1 : x - y;
        return a - b;
      });
      const renumber = new Int32Array(order.length);
      for (let f = 0; f < order.length; f++) renumber[order[f]!] = f;
      for (let v = 0; v < values.length; v += VALUE_STRIDE) values[v] = renumber[values[v]!]!;
      fields = order.map((f) => this.#fields[f]!);
      kinds = order.map((f) => this.#kinds[f]!);
    }
    return new PageTape(
      this.#bytes,
      posts,
      this.#ids.subarray(0, 2 * posts),
      values,
      this.#postValues.subarray(0, posts + 1),
      this.#segments.done(),
      this.#postSegments.subarray(0, posts + 1),
      this.#owned,
      this.#rewritten.done(),
      fields,
      Int32Array.from(kinds),
    );
  }

  /** data: an array of at most a page's posts, each an object; returns how many. */
  *#posts(): Generator<void, number> {
    let count = 0;
    this.#expect(OPEN_BRACKET);
    if (!this.#closes(CLOSE_BRACKET)) {
      do {
        if (count === MAX_POSTS) throw notTaken;
        this.#post(count);
        count++;
        if (count % POSTS_PER_SLICE === 0) yield;
      } while (this.#next(CLOSE_BRACKET));
    }
    this.#postValues[count] = this.#values.length / VALUE_STRIDE;
    this.#postSegments[count] = this.#segments.length / SEGMENT_STRIDE;
    return count;
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
        // Decoded from the bytes: the token, which outlives its page (the pager keeps every token of the report to
        // find a cycle), holds on to nothing of it.
        else if (this.#bytes[this.#skipWhitespace()] === QUOTE) next = this.#string();
        else if (this.#literal('null')) next = null;
        else throw notTaken;
      } while (this.#next(CLOSE_BRACE));
    }
    if (next === undefined || next === '') throw notTaken;
    while (this.#next(CLOSE_BRACKET)) this.#skipValue();
    return next;
  }

  #post(index: number): void {
    let id = false;
    const shape = this.#shape;
    const keys = this.#reading;
    keys.length = 0;
    let from = 0;
    this.#postValues[index] = this.#values.length / VALUE_STRIDE;
    this.#postSegments[index] = this.#segments.length / SEGMENT_STRIDE;
    this.#expect(OPEN_BRACE);
    if (!this.#closes(CLOSE_BRACE)) {
      do {
        const key = this.#keyFrom(shape, from);
        from = this.#found;
        if (this.#seenIn[key.slot] === index + 1) {
          this.#repeatedField(key, index);
          continue;
        }
        this.#seenIn[key.slot] = index + 1;
        keys.push(key);
        switch (key.role) {
          case 'id':
            this.#id(index);
            id = true;
            break;
          case 'segments':
            this.#segmentList();
            break;
          case 'dropped':
            this.#skipValue();
            break;
          default:
            this.#value(key, index);
        }
      } while (this.#next(CLOSE_BRACE));
    }
    if (!id) throw notTaken;
    this.#reading = shape;
    this.#shape = keys;
  }

  /**
   * A key the record holds already: the full way keeps its first value when the repeat is the same value (the same
   * type and text, as lossless-json compares them), and refuses the page otherwise. A repeat this pass cannot tell
   * equal (another spelling of a number, an object's keys in another order, an id, the segments) is the full way's.
   */
  #repeatedField(key: Key, post: number): void {
    if (key.role !== 'field') throw notTaken;
    const values = this.#values;
    const mark = values.length;
    const known = this.#fieldOf[key.slot]!;
    const kinds = known >= 0 ? this.#kinds[known]! : 0;
    const theFullWay = this.#valuesTheFullWay;
    this.#value(key, post);
    const added = values.length > mark;
    const field = this.#fieldOf[key.slot]!;
    let earlier = -1;
    if (field >= 0) {
      const ints = values.done();
      for (let v = this.#postValues[post]! * VALUE_STRIDE; v < mark; v += VALUE_STRIDE) {
        if (ints[v] === field) {
          earlier = v;
          break;
        }
      }
    }
    if (!added && earlier < 0) return;
    if (!added || earlier < 0 || !this.#sameValue(earlier, mark)) throw notTaken;
    // The repeat leaves no trace: not on the tape, nor in its field's kinds, nor in the count of the full way's values.
    values.length = mark;
    this.#kinds[field] = kinds;
    this.#valuesTheFullWay = theFullWay;
  }

  /** Whether the values at ints `a` and `b` of the tape read the same: the same class of value and text. */
  #sameValue(a: number, b: number): boolean {
    const ints = this.#values.done();
    const ka = ints[a + 1]!;
    const kb = ints[b + 1]!;
    const group = (kind: number) =>
      kind === TAPE_STRING || kind === TAPE_OWNED_STRING || kind === TAPE_ESCAPED_STRING
        ? 0
        : kind === TAPE_JSON ||
            kind === TAPE_OWNED_JSON ||
            kind === TAPE_ESCAPED_JSON ||
            kind === TAPE_REWRITTEN_JSON
          ? 1
          : kind === TAPE_TRUE || kind === TAPE_FALSE
            ? kind
            : 2;
    if (group(ka) !== group(kb)) return false;
    // A boolean's range is no text of its own.
    if (ka === TAPE_TRUE || ka === TAPE_FALSE) return true;
    return this.#text(ints, a) === this.#text(ints, b);
  }

  #text(ints: Int32Array, v: number): string {
    const kind = ints[v + 1]!;
    const start = ints[v + 2]!;
    if (kind === TAPE_OWNED_STRING || kind === TAPE_OWNED_JSON) return this.#owned[start]!;
    if (kind === TAPE_ESCAPED_STRING) return escapedString(this.#bytes, start, ints[v + 3]!);
    if (kind === TAPE_REWRITTEN_JSON) return this.#rewritten.done().toString('utf8', start, ints[v + 3]!);
    return this.#bytes.toString('utf8', start, ints[v + 3]!);
  }

  /**
   * The key at the cursor and its colon: first looked for among `shape`, the keys of the record before, from
   * `from` on (records mostly repeat their keys, some left out), then among all keys of the page.
   */
  #keyFrom(shape: ReusedList<Key>, from: number): Key {
    const bytes = this.#bytes;
    const at = this.#skipWhitespace();
    const last = Math.min(shape.length, from + LOOKAHEAD);
    for (let k = from; k < last; k++) {
      const guess = shape.items[k]!;
      if (spelledAt(bytes, at, guess.spelling)) {
        this.#i = at + guess.spelling.length;
        this.#found = k + 1;
        this.#expectColon();
        return guess;
      }
    }
    this.#found = from;
    return this.#key();
  }

  /** The key at the cursor and its colon. */
  #key(): Key {
    const at = this.#skipWhitespace();
    const bytes = this.#bytes;
    if (bytes[at] !== QUOTE) throw notTaken;
    let key = this.#lookup(at);
    if (key !== undefined) this.#i = at + key.spelling.length;
    else {
      const name = this.#string();
      const spelling = new Uint8Array(bytes.subarray(at, this.#i));
      let slot = this.#slots.get(name);
      if (slot === undefined) {
        slot = this.#slots.size;
        this.#slots.set(name, slot);
        this.#fieldOf[slot] = -1;
      }
      const first = name.charCodeAt(0);
      const odd = (first >= ZERO && first <= NINE) || !name.isWellFormed() || spelling.includes(BACKSLASH);
      key = {
        spelling,
        name,
        slot,
        role: this.#role(name),
        odd,
        json: Buffer.from(JSON.stringify(name)),
        index: isArrayIndex(name),
      };
      const hash = spellingHash(spelling, 0);
      const bucket = this.#keys.get(hash);
      if (bucket === undefined) this.#keys.set(hash, [key]);
      else bucket.push(key);
    }
    this.#expectColon();
    return key;
  }

  /** The key of the page spelled as the one whose opening quote is at `at`, found without a string made of it. */
  #lookup(at: number): Key | undefined {
    const bytes = this.#bytes;
    const bucket = this.#keys.get(spellingHash(bytes, at));
    if (bucket === undefined) return undefined;
    for (let k = 0; k < bucket.length; k++) {
      const key = bucket[k]!;
      if (spelledAt(bytes, at, key.spelling)) return key;
    }
    return undefined;
  }

  #role(name: string): Key['role'] {
    const { postIdField, keep } = this.#context;
    if (name === postIdField) return 'id';
    // A field left out by the selection goes no further.
    if (keep && !keep(name)) return 'dropped';
    return name === SEGMENTS_FIELD ? 'segments' : 'field';
  }

  /** The post's id: a number token in canonical form is its own range; anything else is made canonical. */
  #id(index: number): void {
    const bytes = this.#bytes;
    const at = this.#skipWhitespace();
    const c = bytes[at]!;
    let value: string;
    if (c === QUOTE) value = this.#string();
    else if (c === MINUS || (c >= ZERO && c <= NINE)) {
      const kind = this.#number();
      const start = this.#start;
      const end = this.#end;
      // -0 is the one integer token within the range that is not canonical.
      if (kind === TAPE_INTEGER || (kind === TAPE_INT64 && end - start !== 2)) {
        this.#ids[2 * index] = start;
        this.#ids[2 * index + 1] = end;
        return;
      }
      value = bytes.toString('latin1', start, end);
    } else throw notTaken;
    let id: string;
    try {
      id = canonicalId(value, () => `record ${index + 1}`);
    } catch {
      throw notTaken;
    }
    this.#ids[2 * index] = -1 - this.#owned.length;
    this.#ids[2 * index + 1] = 0;
    this.#owned.push(id);
  }

  /** custom_segments: null, or an array of {"name": non-empty string, "value": string}; repeats are load's. */
  #segmentList(): void {
    if (this.#literal('null')) return;
    this.#expect(OPEN_BRACKET);
    if (this.#closes(CLOSE_BRACKET)) return;
    do this.#segment();
    while (this.#next(CLOSE_BRACKET));
  }

  #segment(): void {
    let nameStart = 0;
    let nameEnd = 0;
    let valueStart = 0;
    let valueEnd = 0;
    let name = false;
    let value = false;
    const shape = this.#segmentShape;
    const keys = this.#segmentReading;
    keys.length = 0;
    let from = 0;
    this.#expect(OPEN_BRACE);
    if (!this.#closes(CLOSE_BRACE)) {
      do {
        const key = this.#keyFrom(shape, from);
        from = this.#found;
        for (let k = 0; k < keys.length; k++) if (keys.items[k]!.slot === key.slot) throw notTaken;
        keys.push(key);
        const isName = key.name === 'name';
        if (!isName && key.name !== 'value') {
          this.#skipValue();
          continue;
        }
        const at = this.#skipWhitespace();
        if (this.#bytes[at] !== QUOTE) throw notTaken;
        let start: number;
        let end: number;
        if (this.#stringValue(at) === TAPE_STRING) {
          start = this.#start;
          end = this.#end;
          if (isName && start === end) throw notTaken;
        } else {
          if (isName && this.#owned[this.#start] === '') throw notTaken;
          start = -1 - this.#start;
          end = 0;
        }
        if (isName) {
          nameStart = start;
          nameEnd = end;
          name = true;
        } else {
          valueStart = start;
          valueEnd = end;
          value = true;
        }
      } while (this.#next(CLOSE_BRACE));
    }
    if (!name || !value) throw notTaken;
    this.#segmentReading = shape;
    this.#segmentShape = keys;
    this.#segments.push(nameStart, nameEnd, valueStart, valueEnd);
  }

  /** A field's value onto the tape; null adds nothing. */
  #value(key: Key, post: number): void {
    const bytes = this.#bytes;
    const at = this.#skipWhitespace();
    const c = bytes[at]!;
    let kind: number;
    if (c === QUOTE) kind = this.#fieldString(at);
    else if (c === MINUS || (c >= ZERO && c <= NINE)) kind = this.#number();
    else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      const before = this.#irregular();
      const escapes = this.#canonicalEscapes;
      const repeats = this.#repeats;
      this.#inField = true;
      this.#skipValue();
      this.#inField = false;
      const end = this.#i;
      this.#start = at;
      this.#end = end;
      // Written compactly, without escapes other than JSON.stringify's own, lone surrogates or keys V8 would put
      // first, a document is already what stringifyExactJson would write of it.
      if (this.#irregular() === before)
        kind = this.#canonicalEscapes === escapes ? TAPE_JSON : TAPE_ESCAPED_JSON;
      else if (this.#repeats === repeats) {
        // Read again, written as stringifyExactJson writes what parseExactJson makes of it, as bytes.
        this.#i = at;
        const from = this.#rewritten.length;
        this.#rewrite(this.#rewritten);
        this.#start = from;
        this.#end = this.#rewritten.length;
        this.#i = end;
        kind = TAPE_REWRITTEN_JSON;
      } else {
        // A key repeats within one of its objects: lossless-json decides whether that is harmless.
        let json: string;
        try {
          json = stringifyExactJson(parseExactJson(bytes.toString('utf8', at, end)));
        } catch {
          throw notTaken;
        }
        this.#valuesTheFullWay++;
        kind = TAPE_OWNED_JSON;
        this.#start = this.#owned.length;
        this.#owned.push(json);
      }
    } else if (this.#literal('true')) kind = TAPE_TRUE;
    else if (this.#literal('false')) kind = TAPE_FALSE;
    else if (this.#literal('null')) return;
    else throw notTaken;
    let field = this.#fieldOf[key.slot]!;
    if (field < 0) {
      field = this.#fields.length;
      this.#fieldOf[key.slot] = field;
      this.#fields.push(key.name);
      this.#kinds.push(0);
      this.#firstPost.push(post);
      if (!this.#indexNames && isArrayIndex(key.name)) this.#indexNames = true;
    }
    this.#kinds[field]! |= 1 << kind;
    this.#values.push(field, kind, this.#start, this.#end);
  }

  /**
   * The value at the cursor, already validated by #skipValue and holding no repeated key, written into `out` as
   * stringifyExactJson writes what parseExactJson reads of it: no whitespace, strings as JSON.stringify writes
   * their decoded text, numbers as their tokens, an object's keys that are array indexes first, in numeric order
   * (V8's order).
   */
  #rewrite(out: Bytes): void {
    const bytes = this.#bytes;
    const at = this.#skipWhitespace();
    const c = bytes[at]!;
    if (c === QUOTE) {
      const end = this.#canonicalString(at);
      if (end >= 0) {
        this.#i = end + 1;
        out.bytes(bytes, at, end + 1);
      } else out.text(JSON.stringify(this.#string()));
      return;
    }
    if (c === OPEN_BRACKET) {
      this.#i = at + 1;
      out.byte(OPEN_BRACKET);
      if (!this.#closes(CLOSE_BRACKET)) {
        this.#rewrite(out);
        while (this.#next(CLOSE_BRACKET)) {
          out.byte(COMMA);
          this.#rewrite(out);
        }
      }
      out.byte(CLOSE_BRACKET);
      return;
    }
    if (c === OPEN_BRACE) {
      this.#i = at + 1;
      out.byte(OPEN_BRACE);
      if (!this.#closes(CLOSE_BRACE)) {
        const first = out.length;
        // Each member's start and the array index its key is (-1: none).
        const members: number[] = [];
        let indexes = false;
        do {
          if (out.length > first) out.byte(COMMA);
          const key = this.#key();
          if (key.index) indexes = true;
          members.push(out.length, key.index ? Number(key.name) : -1);
          out.bytes(key.json, 0, key.json.length);
          out.byte(COLON);
          this.#rewrite(out);
        } while (this.#next(CLOSE_BRACE));
        if (indexes) reorder(out, first, members);
      }
      out.byte(CLOSE_BRACE);
      return;
    }
    if (c === MINUS || (c >= ZERO && c <= NINE)) {
      this.#number();
      out.bytes(bytes, this.#start, this.#end);
      return;
    }
    if (this.#literal('true')) out.text('true');
    else if (this.#literal('false')) out.text('false');
    else if (this.#literal('null')) out.text('null');
    else throw notTaken;
  }

  /**
   * The string at `at` (its opening quote): TAPE_STRING with its content's range when it is as written, else
   * TAPE_OWNED_STRING with its decoded text owned (#start its index). The cursor moves past its closing quote.
   */
  #stringValue(at: number): number {
    const end = this.#plainString(at);
    if (end >= 0) {
      this.#i = end + 1;
      this.#start = at + 1;
      this.#end = end;
      return TAPE_STRING;
    }
    this.#i = at;
    const decoded = this.#string();
    this.#start = this.#owned.length;
    this.#owned.push(decoded);
    return TAPE_OWNED_STRING;
  }

  /**
   * A field's string at `at` (its opening quote): TAPE_STRING when it holds no escape, else TAPE_ESCAPED_STRING once
   * its escapes are checked; its content's range either way, no string made of it. The cursor moves past it.
   */
  #fieldString(at: number): number {
    const bytes = this.#bytes;
    let p = at + 1;
    let kind = TAPE_STRING;
    for (;;) {
      const c = bytes[p]!;
      if (c === QUOTE) break;
      if (c < 0x20 || p >= bytes.length) throw notTaken;
      if (c !== BACKSLASH) {
        p++;
        continue;
      }
      kind = TAPE_ESCAPED_STRING;
      const e = bytes[p + 1];
      if (e === 0x75) {
        for (let k = p + 2; k < p + 6; k++) if (!isHex(bytes[k])) throw notTaken;
        p += 6;
      } else if (
        e === QUOTE ||
        e === BACKSLASH ||
        e === 0x2f ||
        e === 0x62 ||
        e === 0x66 ||
        e === 0x6e ||
        e === 0x72 ||
        e === 0x74
      ) {
        p += 2;
      } else throw notTaken;
    }
    this.#i = p + 1;
    this.#start = at + 1;
    this.#end = p;
    return kind;
  }

  /**
   * The index of the closing quote of the string whose opening quote is at `at` when it holds no escape, and so
   * is its own content (valid UTF-8 holds no surrogate alone); else -1.
   */
  #plainString(at: number): number {
    const bytes = this.#bytes;
    let p = at + 1;
    let c = bytes[p]!;
    while (c !== QUOTE && c !== BACKSLASH && c >= 0x20) c = bytes[++p]!;
    return c === QUOTE ? p : -1;
  }

  /**
   * Like #plainString, for a string that may also hold the escapes JSON.stringify writes as they are (\" \\ \b
   * \f \n \r \t; each such string counted in #canonicalEscapes); -1 for any other escape.
   */
  #canonicalString(at: number): number {
    const bytes = this.#bytes;
    let p = at + 1;
    let escaped = false;
    let c = bytes[p]!;
    while (c !== QUOTE && c >= 0x20) {
      if (c === BACKSLASH) {
        const e = bytes[p + 1];
        if (
          e !== QUOTE &&
          e !== BACKSLASH &&
          e !== 0x62 &&
          e !== 0x66 &&
          e !== 0x6e &&
          e !== 0x72 &&
          e !== 0x74
        ) {
          return -1;
        }
        escaped = true;
        p++;
      }
      c = bytes[++p]!;
    }
    if (c !== QUOTE) return -1;
    if (escaped) this.#canonicalEscapes++;
    return p;
  }

  /** Validates and passes over any JSON value; a key repeated in one of its objects is the full way's to judge. */
  #skipValue(): void {
    const bytes = this.#bytes;
    const open = this.#open;
    open.length = 0;
    for (;;) {
      const at = this.#skipWhitespace();
      const c = bytes[at]!;
      if (c === OPEN_BRACE || c === OPEN_BRACKET) {
        this.#i = at + 1;
        if (open.length === MAX_DEPTH) throw notTaken;
        if (this.#closes(c === OPEN_BRACE ? CLOSE_BRACE : CLOSE_BRACKET)) {
          if (!this.#afterValue(open)) return;
          continue;
        }
        let keys: ReusedList<number> | null = null;
        if (c === OPEN_BRACE) {
          keys = this.#members[open.length] ??= new ReusedList<number>();
          keys.length = 0;
        }
        open.push(keys);
        if (keys !== null) this.#memberKey(keys);
        continue;
      }
      if (c === QUOTE) {
        const end = this.#canonicalString(at);
        if (end >= 0) this.#i = end + 1;
        else if (!this.#string().isWellFormed()) this.#oddities++;
      } else if (c === MINUS || (c >= ZERO && c <= NINE)) this.#number();
      else if (!(this.#literal('true') || this.#literal('false') || this.#literal('null'))) throw notTaken;
      if (!this.#afterValue(open)) return;
    }
  }

  /** After a value inside containers: the next member's start, or the containers it closes; false when done. */
  #afterValue(open: ReusedList<ReusedList<number> | null>): boolean {
    while (open.length > 0) {
      const keys = open.items[open.length - 1] as ReusedList<number> | null;
      if (this.#next(keys === null ? CLOSE_BRACKET : CLOSE_BRACE)) {
        if (keys !== null) this.#memberKey(keys);
        return true;
      }
      open.length--;
    }
    return false;
  }

  /** A key of an object being passed over, once. */
  #memberKey(keys: ReusedList<number>): void {
    const key = this.#key();
    if (keys.length === MAX_MEMBERS) throw notTaken;
    if (keys.includes(key.slot)) {
      // Within a field's value, the value alone goes the full way (#value); elsewhere the page.
      if (!this.#inField) throw notTaken;
      this.#repeats++;
      this.#oddities++;
    }
    keys.push(key.slot);
    if (key.odd) this.#oddities++;
  }

  /**
   * A count that grows with everything a compact copy of a document would not keep as stringifyExactJson writes
   * it: whitespace, escapes, lone surrogates, keys that may be array indexes.
   */
  #irregular(): number {
    return this.#oddities + this.#spaces + this.#strings.escapes;
  }

  /**
   * The string at the cursor (its opening quote), decoded (a string of its own, made from the bytes); the cursor
   * moves past its closing quote.
   */
  #string(): string {
    const bytes = this.#bytes;
    const at = this.#skipWhitespace();
    // The closing quote: the first not escaped. JsonStringReader then reads the literal as the full way does.
    let p = at + 1;
    const n = bytes.length;
    while (p < n && bytes[p] !== QUOTE) p += bytes[p] === BACKSLASH ? 2 : 1;
    if (p >= n) throw notTaken;
    const literal = bytes.toString('utf8', at, p + 1);
    const value = this.#strings.read(literal, 0);
    if (value === null || this.#strings.end !== literal.length) throw notTaken;
    this.#i = p + 1;
    return value;
  }

  /**
   * The number token at the cursor, validated as JSON's grammar has it: its kind (TAPE_INTEGER to TAPE_DECIMAL),
   * its range in #start and #end.
   */
  #number(): number {
    const bytes = this.#bytes;
    const start = this.#i;
    let p = start;
    if (bytes[p] === MINUS) p++;
    const first = p;
    let c = bytes[p]!;
    if (c === ZERO) p++;
    else if (c >= 0x31 && c <= NINE) p = digitsFrom(bytes, p + 1);
    else throw notTaken;
    const digits = p - first;
    let kind: number;
    c = bytes[p]!;
    if (c !== DOT && c !== 0x65 && c !== 0x45) {
      if (digits <= 15) kind = TAPE_INTEGER;
      else kind = digits <= 18 ? TAPE_INT64 : digits > 19 ? TAPE_BIGNUM : int64Or19(bytes, start, first);
      // -0: a JavaScript number of it prints 0.
      if (digits === 1 && first > start && bytes[first] === ZERO) kind = TAPE_INT64;
    } else {
      kind = TAPE_DECIMAL;
      if (c === DOT) {
        const end = digitsFrom(bytes, p + 1);
        if (end === p + 1) throw notTaken;
        p = end;
        c = bytes[p]!;
      }
      if (c === 0x65 || c === 0x45) {
        p++;
        c = bytes[p]!;
        if (c === PLUS || c === MINUS) p++;
        const end = digitsFrom(bytes, p);
        if (end === p) throw notTaken;
        p = end;
      }
    }
    this.#i = p;
    this.#start = start;
    this.#end = p;
    return kind;
  }

  /** True (and past it) for `word`, a literal of ASCII letters, at the cursor. */
  #literal(word: string): boolean {
    const at = this.#skipWhitespace();
    const bytes = this.#bytes;
    for (let k = 0; k < word.length; k++) if (bytes[at + k] !== word.charCodeAt(k)) return false;
    this.#i = at + word.length;
    return true;
  }

  #expect(c: number): void {
    const at = this.#skipWhitespace();
    if (this.#bytes[at] !== c) throw notTaken;
    this.#i = at + 1;
  }

  #expectColon(): void {
    this.#expect(COLON);
  }

  /** True (and past it) when the container closes here, at its start. */
  #closes(close: number): boolean {
    const at = this.#skipWhitespace();
    if (this.#bytes[at] !== close) return false;
    this.#i = at + 1;
    return true;
  }

  /** After a member: true for a comma (another member follows), false for the container's end. */
  #next(close: number): boolean {
    const at = this.#skipWhitespace();
    const c = this.#bytes[at];
    this.#i = at + 1;
    if (c === COMMA) return true;
    if (c === close) return false;
    throw notTaken;
  }

  /** Moves the cursor past JSON whitespace; returns it. */
  #skipWhitespace(): number {
    const bytes = this.#bytes;
    let i = this.#i;
    let c = bytes[i];
    while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = bytes[++i];
    if (i !== this.#i) {
      this.#spaces++;
      this.#i = i;
    }
    return i;
  }
}

/**
 * Writes again the members of the object written into `out` from `first` on (`members`: each one's start and the
 * array index its key is, -1 for none), the array indexes first in numeric order, as V8 orders an object's keys.
 */
function reorder(out: Bytes, first: number, members: readonly number[]): void {
  const written = out.cut(first);
  const count = members.length / 2;
  const order = Array.from({ length: count }, (_, k) => k);
  order.sort((a, b) => {
    const x = members[2 * a + 1]!;
    const y = members[2 * b + 1]!;
    if (x >= 0 || y >= 0) return x < 0 ? 1 : y < 0 ? -1 : x - y;
    return a - b;
  });
  for (let k = 0; k < count; k++) {
    const m = order[k]!;
    const start = members[2 * m]! - first;
    // A member ends at the comma before the next one, or at the end.
    const end = m + 1 < count ? members[2 * (m + 1)]! - first - 1 : written.length;
    if (k > 0) out.byte(COMMA);
    out.bytes(written, start, end);
  }
}

/** True when the bytes at `at` are `spelling`. */
function spelledAt(bytes: Uint8Array, at: number, spelling: Uint8Array): boolean {
  const n = spelling.length;
  if (at + n > bytes.length) return false;
  for (let k = 0; k < n; k++) if (bytes[at + k] !== spelling[k]) return false;
  return true;
}

/**
 * A hash of the spelling of a key, from its opening quote at `at` to its closing quote (an escaped quote
 * included); 0 when the bytes end first (no key has that hash: the caller then reads the key as a string).
 */
function spellingHash(bytes: Uint8Array, at: number): number {
  let h = 1;
  const n = bytes.length;
  for (let p = at + 1; p < n; p++) {
    let c = bytes[p]!;
    if (c === QUOTE) return h === 0 ? 1 : h;
    if (c === BACKSLASH) {
      if (p + 1 === n) return 0;
      h = (Math.imul(h, 31) + c) | 0;
      c = bytes[++p]!;
    }
    h = (Math.imul(h, 31) + c) | 0;
  }
  return 0;
}

/** TAPE_INT64 or TAPE_BIGNUM for an integer token of 19 digits (from `first`, after any minus at `start`). */
function int64Or19(bytes: Uint8Array, start: number, first: number): number {
  const limit = first > start ? INT64_MIN_DIGITS : INT64_MAX_DIGITS;
  for (let k = 0; k < 19; k++) {
    const d = bytes[first + k]! - limit.charCodeAt(k);
    if (d !== 0) return d < 0 ? TAPE_INT64 : TAPE_BIGNUM;
  }
  return TAPE_INT64;
}

/** True for a name V8 keeps as an array index: an object enumerates such keys first, in numeric order. */
function isArrayIndex(name: string): boolean {
  const n = name.length;
  if (n === 0 || n > 10) return false;
  if (name.charCodeAt(0) === ZERO) return n === 1;
  for (let k = 0; k < n; k++) {
    const c = name.charCodeAt(k);
    if (c < ZERO || c > NINE) return false;
  }
  return Number(name) <= 4294967294;
}

function isHex(c: number | undefined): boolean {
  return (
    c !== undefined && ((c >= ZERO && c <= NINE) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66))
  );
}

function digitsFrom(bytes: Uint8Array, p: number): number {
  let c = bytes[p]!;
  while (c >= ZERO && c <= NINE) c = bytes[++p]!;
  return p;
}
