/*
 * Values → PostgreSQL COPY text format (tab-separated, \N for NULL, backslash escapes).
 * NUL characters and lone surrogates (a `\ud800` escape without its pair): PostgreSQL cannot store U+0000 in text
 * or jsonb, nor a surrogate in UTF-8 text or in jsonb. They are replaced by U+FFFD (the Unicode replacement
 * character) and counted, in text and jsonb columns and in segments alike; the loader logs the counts per page.
 * Failing a whole window for a character no database column can hold would help nobody, and U+FFFD marks the spot
 * visibly.
 */
import { DataError } from '../errors.js';
import { ExactNumber, type FieldValue, JsonDocument, type MappedPost } from '../model/post-record.js';
import type { ColumnType } from './field-types.js';
import { numericText } from './number-text.js';

/** Counters of one encoding pass. */
export interface EncodeStats {
  nulReplaced: number;
  surrogatesReplaced: number;
}

export const COPY_NULL = '\\N';

const SPECIAL = /[\\\n\r\t\0]/;
const SPECIAL_ALL = /[\\\n\r\t\0]/g;
const JSON_UNSTORABLE = /\\\\|\\u0000|\\ud[89a-f][0-9a-f]{2}/g;

/**
 * Escapes text for a COPY text field: backslash, newline, carriage return and tab; NUL and lone surrogates become
 * U+FFFD.
 */
export function escapeCopyText(text: string, stats: EncodeStats): string {
  if (!text.isWellFormed()) text = wellFormed(text, stats);
  if (!SPECIAL.test(text)) return text;
  return text.replace(SPECIAL_ALL, (c) => {
    switch (c) {
      case '\\':
        return '\\\\';
      case '\n':
        return '\\n';
      case '\r':
        return '\\r';
      case '\t':
        return '\\t';
      default:
        stats.nulReplaced++;
        return '\uFFFD';
    }
  });
}

// In JSON text a NUL can only be the escape \u0000 (raw control characters are invalid JSON), and a lone surrogate
// only the escape \udXXX (JSON.stringify writes pairs as they are, a lone one escaped); an escaped backslash (\\)
// is consumed first so that the literal text "\\u0000" is left alone.
function storableJson(json: string, stats: EncodeStats): string {
  if (!json.includes('\\u0000') && !json.includes('\\ud')) return json;
  return json.replace(JSON_UNSTORABLE, (m) => {
    if (m === '\\\\') return m;
    if (m === '\\u0000') stats.nulReplaced++;
    else stats.surrogatesReplaced++;
    return '\\ufffd';
  });
}

/** The text with each lone surrogate replaced by U+FFFD, counted. */
function wellFormed(text: string, stats: EncodeStats): string {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0xd800 || c > 0xdfff) continue;
    const next = text.charCodeAt(i + 1);
    if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) i++;
    else stats.surrogatesReplaced++;
  }
  return text.toWellFormed();
}

/**
 * One value as a COPY text field for a column of `type`. The caller has checked that the column takes the
 * value (field-types.ts `fitOf`); numbers are written as their exact digits, never through a JS double, and in a
 * text column in numeric::text's form.
 */
export function encodeValue(value: FieldValue, type: ColumnType, stats: EncodeStats): string {
  if (value === null) return COPY_NULL;
  switch (typeof value) {
    case 'number':
      return String(value);
    case 'boolean':
      return type === 'jsonb' ? (value ? 'true' : 'false') : value ? 't' : 'f';
    case 'string':
      if (type === 'jsonb') {
        let clean = value.includes('\0') ? replaceNul(value, stats) : value;
        if (!clean.isWellFormed()) clean = wellFormed(clean, stats);
        return escapeCopyText(JSON.stringify(clean), stats);
      }
      return escapeCopyText(value, stats);
    default:
      // In a text column a number is written as numeric::text would print it, the form it has after a numeric
      // column is widened to text (number-text.ts): the order in which strings and numbers came does not show.
      if (value instanceof ExactNumber) return type === 'text' ? numericText(value.text) : value.text;
      if (value instanceof JsonDocument) return encodeJson(value.json, stats);
      return COPY_NULL;
  }
}

/** A JSON document (as stringifyExactJson writes it) as a COPY text field. */
export function encodeJson(json: string, stats: EncodeStats): string {
  return escapeCopyText(storableJson(json, stats), stats);
}

function replaceNul(text: string, stats: EncodeStats): string {
  return text.replace(/\0/g, () => {
    stats.nulReplaced++;
    return '\uFFFD';
  });
}

/** A column of a page's COPY: the field it comes from, its column and the column's type. */
export interface PageColumn {
  readonly field: string;
  readonly column: string;
  readonly type: ColumnType;
  /**
   * Set on the last column only, a jsonb column: it holds these fields of a post (those without a column of their
   * own) as one object keyed by field name, in this order; NULL for a post that has none of them.
   */
  readonly fields?: readonly string[];
}

/** A value as JSON text: numbers as their exact digits, documents as they are. */
export function jsonOf(value: Exclude<FieldValue, null>): string {
  switch (typeof value) {
    case 'number':
      return String(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'string':
      return JSON.stringify(value);
    default:
      if (value instanceof ExactNumber) return value.text;
      if (value instanceof JsonDocument) return value.json;
      return 'null';
  }
}

/** The COPY field of a post's fields without columns: `{"name":value,…}` (names with values), or NULL for none. */
export function encodeObject(
  names: readonly string[],
  values: readonly (string | undefined)[],
  stats: EncodeStats,
): string {
  let json = '';
  for (let k = 0; k < names.length; k++) {
    const value = values[k];
    if (value === undefined) continue;
    json += `${json === '' ? '{' : ','}${JSON.stringify(names[k]!)}:${value}`;
  }
  return json === '' ? COPY_NULL : encodeJson(`${json}}`, stats);
}

/** Rows per page at most: the stage orders occurrences by `_seq` = page × 2^20 + position in the page. */
const POST_ID = /^-?\d{1,19}$/;

export const MAX_PAGE_ROWS = 1 << 20;

/** The stage's order key of a post: later pages and later positions win duplicates. */
export function sequenceOf(page: number, position: number): number {
  return page * MAX_PAGE_ROWS + position;
}

/**
 * The COPY text of a page's posts (`_seq`, `_id`, then `columns`) and of their segments (`_seq`, `_id`,
 * name, value; a pair repeated within a post is written once), each built in one pass.
 */
export function encodePage(
  posts: readonly MappedPost[],
  page: number,
  columns: readonly PageColumn[],
  stats: EncodeStats,
): { posts: string; segments: string; segmentRows: number } {
  const rows: string[] = new Array(posts.length);
  const segments: string[] = [];
  const extra = columns.at(-1)?.fields;
  const plain = extra === undefined ? columns.length : columns.length - 1;
  for (let i = 0; i < posts.length; i++) {
    const post = posts[i]!;
    // The id goes into COPY text unescaped: it must be the canonical digits the contract promises.
    if (!POST_ID.test(post.id)) {
      throw new DataError('RECORD_INVALID', `post id ${JSON.stringify(post.id)} is not a 64-bit integer`);
    }
    const head = `${sequenceOf(page, i)}\t${post.id}`;
    let line = head;
    const fields = post.fields;
    for (let c = 0; c < plain; c++) {
      const col = columns[c]!;
      const value = fields[col.field];
      line += value === undefined || value === null ? '\t\\N' : `\t${encodeValue(value, col.type, stats)}`;
    }
    if (extra !== undefined) {
      const values = extra.map((name) => {
        const value = fields[name];
        return value === undefined || value === null ? undefined : jsonOf(value);
      });
      line += `\t${encodeObject(extra, values, stats)}`;
    }
    rows[i] = line;
    // A pair is written once per post, compared as written: "a\u0000" and "a\uFFFD" are one pair once NUL is
    // replaced, and would collide in the segments' key.
    const list = post.segments;
    const first = segments.length;
    for (let k = 0; k < list.length; k++) {
      const segment = list[k]!;
      const line = `${head}\t${escapeCopyText(segment.name, stats)}\t${escapeCopyText(segment.value, stats)}`;
      if (k > 0 && written(segments, first, line)) continue;
      segments.push(line);
    }
  }
  return {
    posts: rows.length > 0 ? `${rows.join('\n')}\n` : '',
    segments: segments.length > 0 ? `${segments.join('\n')}\n` : '',
    segmentRows: segments.length,
  };
}

// A post lists a handful of segments: a quadratic scan is cheaper than a Set, and keeps each pair once.
function written(segments: readonly string[], first: number, line: string): boolean {
  for (let j = first; j < segments.length; j++) if (segments[j] === line) return true;
  return false;
}
