/*
 * A page of posts as offsets into its bytes: what extract hands to load when it read the page in one pass
 * (extract/page-decoder.ts), so that load plans and encodes the page without an object per post or per value.
 * Values are mostly ranges of the page's bytes (UTF-8); the few that are not as written (a string with escapes, an
 * id to make canonical) are "owned": decoded once, kept in `owned`, found by index; a document written otherwise
 * than stringifyExactJson writes it is written again into `rewritten`.
 */
import type { MappedPost } from './post-record.js';

/** bytes[start, end) is the string's content: no escape (and so no backslash and no control character). */
export const TAPE_STRING = 0;
/** owned[start] is the decoded string. */
export const TAPE_OWNED_STRING = 1;
/** An integer of at most 15 digits, not -0: its token is what a JavaScript number of it prints. */
export const TAPE_INTEGER = 2;
/** Any other integer token within the signed 64-bit range (-0, 16 to 19 digits). */
export const TAPE_INT64 = 3;
/** An integer token beyond the signed 64-bit range. */
export const TAPE_BIGNUM = 4;
/** A number token with a fraction or an exponent. */
export const TAPE_DECIMAL = 5;
export const TAPE_TRUE = 6;
export const TAPE_FALSE = 7;
/** bytes[start, end) is the document as stringifyExactJson writes it. */
export const TAPE_JSON = 8;
/** owned[start] is the document as stringifyExactJson writes it. */
export const TAPE_OWNED_JSON = 9;
/**
 * bytes[start, end) is the document as stringifyExactJson writes it, escapes included (each one JSON.stringify
 * writes as it is: \" \\ \b \f \n \r \t), which a COPY field must escape.
 */
export const TAPE_ESCAPED_JSON = 10;

/**
 * bytes[start, end) is a string's content as written, escapes included (valid ones: the decoder checked them), for
 * load to write as COPY text straight from its bytes without a string made of it.
 */
export const TAPE_ESCAPED_STRING = 11;

/** rewritten[start, end) is the document as stringifyExactJson writes it, written again by the decoder. */
export const TAPE_REWRITTEN_JSON = 12;

/** Ints per value in `values`: field, kind, start, end. */
export const VALUE_STRIDE = 4;
/** Ints per segment in `segments`: name start, name end, value start, value end. */
export const SEGMENT_STRIDE = 4;

/**
 * A page's posts read in one pass. Null values are not on the tape (a column reads NULL where a post has no
 * value). A range whose start is negative stands for owned[-1 - start] (ids and segments).
 */
export class PageTape {
  #retired = false;

  constructor(
    /** The page's text as UTF-8, valid. */
    readonly bytes: Buffer,
    /** How many posts. */
    readonly length: number,
    /** Per post: start and end of its canonical id's digits. */
    readonly ids: Int32Array,
    /** Per value, in the order of the page: field (index into `fields`), kind (TAPE_*), start, end. */
    readonly values: Int32Array,
    /** Per post and one more: the index of its first value (in values, not ints). */
    readonly postValues: Int32Array,
    /** Per segment of a post, in the order of the page (repeats included). */
    readonly segments: Int32Array,
    /** Per post and one more: the index of its first segment. */
    readonly postSegments: Int32Array,
    readonly owned: readonly string[],
    /** The documents the decoder wrote again, as UTF-8 (TAPE_REWRITTEN_JSON). */
    readonly rewritten: Buffer,
    /**
     * The fields with a value other than null, in the order the full way's posts first show one: by post, and
     * within a post as its record's keys enumerate (array-index names first).
     */
    readonly fields: readonly string[],
    /** Per field: the kinds of its values, as a bit set of 1 << TAPE_*. */
    readonly kinds: Int32Array,
  ) {}

  /**
   * Marks the tape as read for good: its bytes and values go back to their pools (pager.ts readPages) and will hold
   * another page's. Reading it after this is a bug, which encodeTape refuses rather than load another page's rows.
   */
  retire(): void {
    this.#retired = true;
  }

  get retired(): boolean {
    return this.#retired;
  }

  /** The canonical id of a post. */
  id(post: number): string {
    return this.#range(this.ids[2 * post]!, this.ids[2 * post + 1]!);
  }

  /** The string or number text of a value (by its index in values). */
  valueText(value: number): string {
    const at = value * VALUE_STRIDE;
    const kind = this.values[at + 1]!;
    const start = this.values[at + 2]!;
    if (kind === TAPE_OWNED_STRING || kind === TAPE_OWNED_JSON) return this.owned[start]!;
    if (kind === TAPE_ESCAPED_STRING) return escapedString(this.bytes, start, this.values[at + 3]!);
    if (kind === TAPE_REWRITTEN_JSON) return this.rewritten.toString('utf8', start, this.values[at + 3]!);
    return this.bytes.toString('utf8', start, this.values[at + 3]!);
  }

  /** The name or value of a segment (by its index in segments): part 0 the name, 1 the value. */
  segmentText(segment: number, part: 0 | 1): string {
    const at = segment * SEGMENT_STRIDE + 2 * part;
    return this.#range(this.segments[at]!, this.segments[at + 1]!);
  }

  #range(start: number, end: number): string {
    return start < 0 ? this.owned[-1 - start]! : this.bytes.toString('utf8', start, end);
  }
}

/**
 * The decoded text of a string whose content (escapes valid) is bytes[start, end): its literal, quotes included, is
 * JSON, and JSON.parse decodes a string literal as the full way does.
 */
export function escapedString(bytes: Buffer, start: number, end: number): string {
  return JSON.parse(bytes.toString('utf8', start - 1, end + 1)) as string;
}

/** A page's posts: mapped one by one (the full way), or on a tape. */
export type PagePosts = readonly MappedPost[] | PageTape;

/** The ids of a page's posts, in order. */
export function postIds(posts: PagePosts): string[] {
  if (posts instanceof PageTape) return Array.from({ length: posts.length }, (_, i) => posts.id(i));
  return posts.map((post) => post.id);
}
