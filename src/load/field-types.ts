import { isIsoDate } from '../model/dates.js';
import {
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
} from '../model/page-tape.js';
import { ExactNumber, type FieldValue, JsonDocument } from '../model/post-record.js';

/**
 * The column types the loader creates (`date` only for fields documented as dates: declared-types.ts); `other` is
 * any type an operator set by hand (PostgreSQL validates it).
 */
export type ColumnType = 'bigint' | 'numeric' | 'text' | 'boolean' | 'jsonb' | 'date' | 'other';

/** What a value needs: `int64` fits bigint, `bignum` is an integer beyond int64, `decimal` any other number. */
export type ValueKind = 'int64' | 'bignum' | 'decimal' | 'string' | 'boolean' | 'json';

/** How a column takes a value: as it is, after widening bigint to numeric, or not at all. */
export type Fit = 'ok' | 'widen' | 'mismatch';

const INT64_MAX = 9223372036854775807n;
const INT64_MIN = -9223372036854775808n;

/** The kind of a non-null value. */
export function kindOf(value: Exclude<FieldValue, null>): ValueKind {
  switch (typeof value) {
    case 'number':
      return 'int64';
    case 'string':
      return 'string';
    case 'boolean':
      return 'boolean';
    default:
      if (value instanceof ExactNumber) return exactKind(value.text);
      if (value instanceof JsonDocument) return 'json';
      return 'json';
  }
}

/** The kind of a value on a page's tape (its TAPE_* kind), as kindOf gives it for the full way's value. */
export function tapeKindOf(kind: number): ValueKind {
  return TAPE_KINDS[kind]!;
}

const TAPE_KINDS: readonly ValueKind[] = (() => {
  const kinds: ValueKind[] = [];
  kinds[TAPE_STRING] = 'string';
  kinds[TAPE_OWNED_STRING] = 'string';
  kinds[TAPE_ESCAPED_STRING] = 'string';
  kinds[TAPE_INTEGER] = 'int64';
  kinds[TAPE_INT64] = 'int64';
  kinds[TAPE_BIGNUM] = 'bignum';
  kinds[TAPE_DECIMAL] = 'decimal';
  kinds[TAPE_TRUE] = 'boolean';
  kinds[TAPE_FALSE] = 'boolean';
  kinds[TAPE_JSON] = 'json';
  kinds[TAPE_OWNED_JSON] = 'json';
  kinds[TAPE_ESCAPED_JSON] = 'json';
  kinds[TAPE_REWRITTEN_JSON] = 'json';
  return kinds;
})();

function exactKind(text: string): ValueKind {
  if (!/^-?\d+$/.test(text)) return 'decimal';
  const digits = text.startsWith('-') ? text.length - 1 : text.length;
  if (digits <= 18) return 'int64';
  const n = BigInt(text);
  return n <= INT64_MAX && n >= INT64_MIN ? 'int64' : 'bignum';
}

/** The type of a column created for a value of this kind. */
export function columnTypeFor(kind: ValueKind): Exclude<ColumnType, 'other'> {
  switch (kind) {
    case 'int64':
      return 'bigint';
    case 'bignum':
    case 'decimal':
      return 'numeric';
    case 'string':
      return 'text';
    case 'boolean':
      return 'boolean';
    case 'json':
      return 'jsonb';
  }
}

/**
 * Whether a column of `type` can hold a value of `kind` without losing anything. Lossless widenings are
 * accepted: a number in a text column is stored as numeric::text prints it (number-text.ts), any value in a
 * jsonb column as JSON.
 * Everything else (text or a boolean where numbers were seen, an object in a boolean column, …) is a mismatch.
 */
export function fitOf(type: ColumnType, kind: ValueKind): Fit {
  switch (type) {
    case 'bigint':
      return kind === 'int64' ? 'ok' : kind === 'bignum' || kind === 'decimal' ? 'widen' : 'mismatch';
    case 'numeric':
      return kind === 'int64' || kind === 'bignum' || kind === 'decimal' ? 'ok' : 'mismatch';
    case 'text':
      return kind === 'boolean' || kind === 'json' ? 'mismatch' : 'ok';
    case 'boolean':
      return kind === 'boolean' ? 'ok' : 'mismatch';
    case 'date':
      // Which strings are dates is decided per value (isColumnDate): the kind alone cannot tell.
      return kind === 'string' ? 'ok' : 'mismatch';
    case 'jsonb':
    case 'other':
      return 'ok';
  }
}

/** Maps a catalog type name (format_type) to a ColumnType. */
export function columnTypeOf(formatted: string): ColumnType {
  switch (formatted) {
    case 'bigint':
    case 'numeric':
    case 'text':
    case 'boolean':
    case 'jsonb':
    case 'date':
      return formatted;
    default:
      return 'other';
  }
}

/**
 * True for a string a date column takes as the API's date: YYYY-MM-DD, a real calendar date, from year 1.
 * PostgreSQL would also read '04/03/2026' or 'today', each in its own way; only the documented form is loaded.
 */
export function isColumnDate(text: string): boolean {
  return isIsoDate(text) && text >= '0001-01-01';
}
