/*
 * A page's tape (model/page-tape.ts) → the COPY text of its posts and segments, as UTF-8, in one pass over its
 * values. A value on the tape is mostly a range of the page's bytes that is already its COPY field, copied as it
 * is: a JSON string without escapes holds no backslash and no control character (JSON refuses them raw), a number
 * token is its own digits, a compact document is what stringifyExactJson writes. Where today's rules change a value's form (a
 * number in a text column in numeric::text's form, a string in a jsonb column quoted, a decoded string or a
 * rewritten document escaped), the value goes through copy-encoding.ts, which stays the reference: the rows are
 * encodePage's for the same posts, byte for byte (the decoder's differential test holds them to that).
 */

import { BufferPool } from '../model/buffer-pool.js';
import {
  escapedString,
  type PageTape,
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
import { CopyBuffer } from './copy-buffer.js';
import {
  type EncodeStats,
  encodeJson,
  encodeObject,
  encodeValue,
  escapeCopyText,
  type PageColumn,
  sequenceOf,
} from './copy-encoding.js';
import type { ColumnType } from './field-types.js';
import { numericText } from './number-text.js';

const TAB = 0x09;
const NEWLINE = 0x0a;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const LETTER_N = 0x4e;

/** A page's COPY text as UTF-8: posts (`_seq`, `_id`, then the columns) and segments (`_seq`, `_id`, name, value). */
export interface EncodedPage {
  readonly posts: Buffer;
  readonly segments: Buffer;
  readonly segmentRows: number;
}

/**
 * Where a window's pages take the memory of their COPY text: a page is encoded while the one before it is written,
 * so two pages' are in use at once. A page's text goes back once written (give).
 */
export class CopyPools {
  readonly posts = new BufferPool(2);
  readonly segments = new BufferPool(2);

  /** Gives back a page's COPY text: nothing writes it any more. */
  give(page: { readonly posts: Buffer; readonly segments: Buffer }): void {
    this.posts.give(page.posts);
    this.segments.give(page.segments);
  }
}

/**
 * The COPY text of a tape's posts and segments, as encodePage writes it for the same posts (a pair repeated
 * within a post is written once, compared as written). `pools`: where its memory comes from.
 */
export function encodeTape(
  tape: PageTape,
  page: number,
  columns: readonly PageColumn[],
  stats: EncodeStats,
  pools?: CopyPools,
): EncodedPage {
  // Its bytes and values may hold another page's by now: rows of that page under this one's numbers would load.
  if (tape.retired) throw new Error(`page ${page + 1} was encoded after its memory was given back`);
  const { bytes, values, postValues, owned } = tape;
  // Each field's column in the page's COPY (-1: none), and the value of each column in the post being written.
  const columnOf = new Int32Array(tape.fields.length).fill(-1);
  const byName = new Map<string, number>();
  for (let f = 0; f < tape.fields.length; f++) byName.set(tape.fields[f]!, f);
  const types: ColumnType[] = [];
  const extra = columns.at(-1)?.fields;
  const plain = extra === undefined ? columns.length : columns.length - 1;
  for (let c = 0; c < plain; c++) {
    const f = byName.get(columns[c]!.field);
    if (f !== undefined) columnOf[f] = c;
    types.push(columns[c]!.type);
  }
  // The fields kept in the extra column, by their place in it (-1: not kept there).
  const extraOf = new Int32Array(extra === undefined ? 0 : tape.fields.length).fill(-1);
  for (let k = 0; k < (extra?.length ?? 0); k++) {
    const f = byName.get(extra![k]!);
    if (f !== undefined) extraOf[f] = k;
  }
  const slots = new Int32Array(plain);
  // A page's rows take half its bytes or so: its keys, quotes and commas are not written.
  const out = new CopyBuffer(Math.ceil(0.6 * bytes.length) + 64 * tape.length, pools?.posts);
  const segments = new CopyBuffer(tape.postSegments[tape.length]! * 64, pools?.segments);
  let segmentRows = 0;
  const rowStarts: number[] = [];
  for (let i = 0; i < tape.length; i++) {
    const sequence = sequenceOf(page, i);
    out.integer(sequence);
    out.byte(TAB);
    writeId(out, tape, i);
    slots.fill(-1);
    for (let v = postValues[i]!; v < postValues[i + 1]!; v++) {
      const c = columnOf[values[v * VALUE_STRIDE]!]!;
      if (c >= 0) slots[c] = v;
    }
    for (let c = 0; c < slots.length; c++) {
      out.byte(TAB);
      const v = slots[c]!;
      if (v < 0) {
        out.byte(BACKSLASH);
        out.byte(LETTER_N);
        continue;
      }
      const at = v * VALUE_STRIDE;
      const kind = values[at + 1]!;
      const start = values[at + 2]!;
      const end = values[at + 3]!;
      const type = types[c]!;
      switch (kind) {
        case TAPE_STRING:
          if (type === 'jsonb') {
            out.byte(QUOTE);
            out.bytes(bytes, start, end);
            out.byte(QUOTE);
          } else out.bytes(bytes, start, end);
          break;
        case TAPE_INTEGER:
        case TAPE_JSON:
          out.bytes(bytes, start, end);
          break;
        case TAPE_INT64:
        case TAPE_BIGNUM:
        case TAPE_DECIMAL:
          // In a text column a number takes numeric::text's form (copy-encoding.ts encodeValue).
          if (type === 'text') out.text(numericText(bytes.toString('latin1', start, end)));
          else out.bytes(bytes, start, end);
          break;
        case TAPE_TRUE:
          out.text(type === 'jsonb' ? 'true' : 't');
          break;
        case TAPE_FALSE:
          out.text(type === 'jsonb' ? 'false' : 'f');
          break;
        case TAPE_OWNED_STRING:
          out.text(encodeValue(owned[start]!, type, stats));
          break;
        case TAPE_ESCAPED_STRING:
          // Every column type but jsonb takes a string as escapeCopyText writes it (encodeValue).
          if (type === 'jsonb') out.text(encodeValue(escapedString(bytes, start, end), type, stats));
          else out.jsonString(bytes, start, end, stats);
          break;
        case TAPE_OWNED_JSON:
          out.text(encodeJson(owned[start]!, stats));
          break;
        case TAPE_ESCAPED_JSON:
          out.json(bytes, start, end, stats);
          break;
        case TAPE_REWRITTEN_JSON:
          out.json(tape.rewritten, start, end, stats);
          break;
      }
    }
    if (extra !== undefined) {
      out.byte(TAB);
      out.text(extraObject(tape, i, extra, extraOf, stats));
    }
    out.byte(NEWLINE);
    if (tape.postSegments[i + 1]! > tape.postSegments[i]!) {
      segmentRows += writeSegments(segments, tape, i, sequence, rowStarts, stats);
    }
  }
  return { posts: out.done(), segments: segments.done(), segmentRows };
}

/** The COPY field of a post's values of the fields kept in the extra column, as encodePage writes it. */
function extraObject(
  tape: PageTape,
  post: number,
  names: readonly string[],
  extraOf: Int32Array,
  stats: EncodeStats,
): string {
  const { values, postValues } = tape;
  const found: (string | undefined)[] = new Array(names.length);
  for (let v = postValues[post]!; v < postValues[post + 1]!; v++) {
    const k = extraOf[values[v * VALUE_STRIDE]!]!;
    if (k >= 0) found[k] = valueJson(tape, v);
  }
  return encodeObject(names, found, stats);
}

/** A value of the tape as JSON text (undefined for null), as copy-encoding.ts jsonOf writes the decoded value. */
function valueJson(tape: PageTape, v: number): string | undefined {
  const { bytes, values, owned } = tape;
  const at = v * VALUE_STRIDE;
  const start = values[at + 2]!;
  const end = values[at + 3]!;
  switch (values[at + 1]!) {
    case TAPE_STRING:
      // A string without escapes: its bytes between quotes are its JSON text.
      return `"${bytes.toString('utf8', start, end)}"`;
    case TAPE_INTEGER:
    case TAPE_INT64:
    case TAPE_BIGNUM:
    case TAPE_DECIMAL:
      return bytes.toString('latin1', start, end);
    case TAPE_TRUE:
      return 'true';
    case TAPE_FALSE:
      return 'false';
    case TAPE_OWNED_STRING:
      return JSON.stringify(owned[start]!);
    case TAPE_ESCAPED_STRING:
      return JSON.stringify(escapedString(bytes, start, end));
    case TAPE_OWNED_JSON:
      return owned[start]!;
    case TAPE_JSON:
    case TAPE_ESCAPED_JSON:
      return bytes.toString('utf8', start, end);
    case TAPE_REWRITTEN_JSON:
      return tape.rewritten.toString('utf8', start, end);
    default:
      return undefined;
  }
}

function writeId(out: CopyBuffer, tape: PageTape, post: number): void {
  const start = tape.ids[2 * post]!;
  if (start >= 0) out.bytes(tape.bytes, start, tape.ids[2 * post + 1]!);
  else out.text(tape.owned[-1 - start]!);
}

/**
 * The segment rows of a post; returns how many. A row written before within the post is not written again; the
 * counters then count it as encodePage does, which never sees a pair repeated as decoded (the mapping drops it)
 * but escapes a pair that only becomes a repeat once written ("a\u0000" after "a\uFFFD").
 */
function writeSegments(
  out: CopyBuffer,
  tape: PageTape,
  post: number,
  sequence: number,
  rowStarts: number[],
  stats: EncodeStats,
): number {
  const first = tape.postSegments[post]!;
  const last = tape.postSegments[post + 1]!;
  // Counted, not emptied: an array whose length is set to 0 lets its storage go, to grow it again post after post.
  let rows = 0;
  for (let s = first; s < last; s++) {
    const start = out.length;
    const nul = stats.nulReplaced;
    const surrogates = stats.surrogatesReplaced;
    out.integer(sequence);
    out.byte(TAB);
    writeId(out, tape, post);
    writePart(out, tape, s, 0, stats);
    writePart(out, tape, s, 1, stats);
    if (written(out, rowStarts, rows, start)) {
      out.truncate(start);
      if (
        (nul !== stats.nulReplaced || surrogates !== stats.surrogatesReplaced) &&
        repeated(tape, first, s)
      ) {
        stats.nulReplaced = nul;
        stats.surrogatesReplaced = surrogates;
      }
      continue;
    }
    out.byte(NEWLINE);
    rowStarts[rows++] = start;
  }
  return rows;
}

function writePart(out: CopyBuffer, tape: PageTape, segment: number, part: 0 | 1, stats: EncodeStats): void {
  out.byte(TAB);
  const at = segment * SEGMENT_STRIDE + 2 * part;
  const start = tape.segments[at]!;
  if (start >= 0) out.bytes(tape.bytes, start, tape.segments[at + 1]!);
  else out.text(escapeCopyText(tape.owned[-1 - start]!, stats));
}

/**
 * True when the row being written from `row` to the end is one of the post's `rows` rows before it (each ends in
 * \n).
 */
function written(out: CopyBuffer, rowStarts: readonly number[], rows: number, row: number): boolean {
  const length = out.length - row;
  for (let j = 0; j < rows; j++) {
    const end = j + 1 < rows ? rowStarts[j + 1]! : row;
    if (end - 1 - rowStarts[j]! === length && out.same(rowStarts[j]!, row, length)) return true;
  }
  return false;
}

/** True when segment `s` of a post repeats, as decoded, one before it (from `first`). */
function repeated(tape: PageTape, first: number, s: number): boolean {
  const name = tape.segmentText(s, 0);
  const value = tape.segmentText(s, 1);
  for (let k = first; k < s; k++) {
    if (tape.segmentText(k, 0) === name && tape.segmentText(k, 1) === value) return true;
  }
  return false;
}
