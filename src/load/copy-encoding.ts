/*
 * Values → PostgreSQL COPY text format (tab-separated, \N for NULL, backslash escapes).
 * NUL characters: PostgreSQL cannot store U+0000 in text or jsonb. They are replaced by U+FFFD (the Unicode
 * replacement character) and counted; the loader logs the count per page. Failing a whole window for a
 * character no database column can hold would help nobody, and U+FFFD marks the spot visibly.
 */
import { DataError } from '../errors.js';
import {
  type CustomSegment,
  ExactNumber,
  type FieldValue,
  JsonDocument,
  type MappedPost,
} from '../model/post-record.js';
import type { ColumnType } from './field-types.js';

/** Counters of one encoding pass. */
export interface EncodeStats {
  nulReplaced: number;
}

export const COPY_NULL = '\\N';

const SPECIAL = /[\\\n\r\t\0]/;
const SPECIAL_ALL = /[\\\n\r\t\0]/g;
const JSON_NUL = /\\\\|\\u0000/g;

/** Escapes text for a COPY text field: backslash, newline, carriage return and tab; NUL becomes U+FFFD. */
export function escapeCopyText(text: string, stats: EncodeStats): string {
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

// In JSON text a NUL can only be the escape \u0000 (raw control characters are invalid JSON); an escaped
// backslash (\\) is consumed first so that the literal text "\\u0000" is left alone.
function jsonWithoutNul(json: string, stats: EncodeStats): string {
  if (!json.includes('\\u0000')) return json;
  return json.replace(JSON_NUL, (m) => {
    if (m === '\\\\') return m;
    stats.nulReplaced++;
    return '\\ufffd';
  });
}

/**
 * One value as a COPY text field for a column of `type`. The caller has checked that the column takes the
 * value (field-types.ts `fitOf`); numbers are written as their exact digits, never through a JS double.
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
        const clean = value.includes('\0') ? replaceNul(value, stats) : value;
        return escapeCopyText(JSON.stringify(clean), stats);
      }
      return escapeCopyText(value, stats);
    default:
      if (value instanceof ExactNumber) return value.text;
      if (value instanceof JsonDocument) return escapeCopyText(jsonWithoutNul(value.json, stats), stats);
      return COPY_NULL;
  }
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
  for (let i = 0; i < posts.length; i++) {
    const post = posts[i]!;
    // The id goes into COPY text unescaped: it must be the canonical digits the contract promises.
    if (!POST_ID.test(post.id)) {
      throw new DataError('RECORD_INVALID', `post id ${JSON.stringify(post.id)} is not a 64-bit integer`);
    }
    const head = `${sequenceOf(page, i)}\t${post.id}`;
    let line = head;
    const fields = post.fields;
    for (let c = 0; c < columns.length; c++) {
      const col = columns[c]!;
      const value = fields[col.field];
      line += value === undefined || value === null ? '\t\\N' : `\t${encodeValue(value, col.type, stats)}`;
    }
    rows[i] = line;
    const list = post.segments;
    for (let k = 0; k < list.length; k++) {
      const segment = list[k]!;
      if (k > 0 && repeats(list, k)) continue;
      segments.push(
        `${head}\t${escapeCopyText(segment.name, stats)}\t${escapeCopyText(segment.value, stats)}`,
      );
    }
  }
  return {
    posts: rows.length > 0 ? `${rows.join('\n')}\n` : '',
    segments: segments.length > 0 ? `${segments.join('\n')}\n` : '',
    segmentRows: segments.length,
  };
}

// A post lists a handful of segments: a quadratic scan is cheaper than a Set, and keeps each pair once.
function repeats(list: readonly CustomSegment[], k: number): boolean {
  const { name, value } = list[k]!;
  for (let j = 0; j < k; j++) {
    const other = list[j]!;
    if (other.name === name && other.value === value) return true;
  }
  return false;
}
