import { stringifyExactJson } from '../api/exact-json.js';
import { DataError, oneLine } from '../errors.js';
import {
  type CustomSegment,
  ExactNumber,
  type FieldValue,
  JsonDocument,
  type MappedPost,
} from '../model/post-record.js';
import { isRecord } from './json-shape.js';

/** Where the records came from, for error messages, and which field holds the post id. */
export interface MappingContext {
  readonly postIdField: string;
  readonly window: { readonly start: string; readonly end: string };
  readonly page: number;
  /** Whether a field is loaded (fieldFilter of the run's selection); absent or null: every field. */
  readonly keep?: ((field: string) => boolean) | null;
}

const SEGMENTS_FIELD = 'custom_segments';
const INT64_MAX = 9223372036854775807n;
const INT64_MIN = -9223372036854775808n;
const INTEGER = /^-?\d+$/;
/** Up to 18 digits always fit in int64; only longer ids need the BigInt range check. */
const ALWAYS_INT64_DIGITS = 18;

/**
 * Maps a page's post records to rows: the id as exact canonical digits (signed 64-bit), every other field kept
 * by its API name (absent stays absent, null stays null, nested values become exact JSON documents), and
 * custom_segments as {name, value} pairs; fields the selection leaves out (`keep`) are dropped. A record whose
 * id is missing or not an int64 integer, or whose custom_segments are malformed, fails the page with
 * DataError('RECORD_INVALID') naming window, page and value.
 */
export function mapRecords(
  records: readonly Record<string, unknown>[],
  context: MappingContext,
): MappedPost[] {
  const out: MappedPost[] = new Array(records.length);
  for (let i = 0; i < records.length; i += 1) {
    out[i] = mapRecord(records[i] as Record<string, unknown>, i, context);
  }
  return out;
}

function mapRecord(record: Record<string, unknown>, index: number, context: MappingContext): MappedPost {
  const idField = context.postIdField;
  const id = canonicalId(record[idField], () => where(context, index));
  const fields: Record<string, FieldValue> = Object.create(null);
  let segments: readonly CustomSegment[] = [];
  const keep = context.keep;
  for (const key in record) {
    if (!Object.hasOwn(record, key) || key === idField) continue;
    // A field left out by the selection goes no further: not even an error message may carry its value.
    if (keep && !keep(key)) continue;
    const value = record[key];
    if (key === SEGMENTS_FIELD) {
      segments = mapSegments(value, () => `${where(context, index)} (post ${id})`);
      continue;
    }
    if (value === undefined) continue;
    try {
      fields[key] = fieldValue(value);
    } catch (error) {
      if (!(error instanceof RangeError)) throw error;
      throw new DataError(
        'RECORD_INVALID',
        `${where(context, index)} (post ${id}): field ${JSON.stringify(key)} nests too deep to be written (${error.message})`,
      );
    }
  }
  return { id, fields, segments };
}

function where(context: MappingContext, index: number): string {
  return `record ${index + 1} of page ${context.page} of window ${context.window.start}..${context.window.end}`;
}

function describe(value: unknown): string {
  if (value === undefined) return 'missing';
  if (value instanceof ExactNumber) return value.text;
  if (typeof value === 'bigint') return value.toString();
  try {
    return oneLine(stringifyExactJson(value), 100);
  } catch {
    return typeof value;
  }
}

function invalidId(value: unknown, at: () => string, why: string): DataError {
  return new DataError('RECORD_INVALID', `${at()}: post id ${describe(value)} ${why}`);
}

/** The id as canonical decimal digits: no leading zeros, no "-0", within signed 64-bit. */
export function canonicalId(value: unknown, at: () => string): string {
  if (typeof value === 'number') {
    if (Number.isSafeInteger(value)) return value === 0 ? '0' : String(value);
    throw invalidId(
      value,
      at,
      Number.isInteger(value) ? 'lost digits before it reached the connector' : 'is not an integer',
    );
  }
  let text: string;
  if (value instanceof ExactNumber) text = value.text;
  else if (typeof value === 'bigint') text = value.toString();
  // Some services send ids as strings; digits only are accepted, so that a string id is the same key as a number.
  else if (typeof value === 'string') text = value;
  else if (value === undefined || value === null) {
    throw new DataError('RECORD_INVALID', `${at()}: post id is ${value === null ? 'null' : 'missing'}`);
  } else throw invalidId(value, at, 'is not an integer');
  if (!INTEGER.test(text)) throw invalidId(value, at, 'is not an integer');
  const negative = text.startsWith('-');
  const digits = (negative ? text.slice(1) : text).replace(/^0+(?=\d)/, '');
  if (digits === '0') return '0';
  const canonical = negative ? `-${digits}` : digits;
  if (digits.length > ALWAYS_INT64_DIGITS) {
    const n = BigInt(canonical);
    if (n > INT64_MAX || n < INT64_MIN) throw invalidId(value, at, 'is outside the signed 64-bit range');
  }
  return canonical;
}

function fieldValue(value: unknown): FieldValue {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      // Plain numbers from parseExactJson are always safe integers; a rounded one is kept as its JavaScript text.
      return Number.isSafeInteger(value) ? value : new ExactNumber(String(value));
    case 'bigint':
      return new ExactNumber(value.toString());
    case 'object':
      if (value === null) return null;
      if (value instanceof ExactNumber || value instanceof JsonDocument) return value;
      return new JsonDocument(stringifyExactJson(value));
    default:
      return new JsonDocument(stringifyExactJson(String(value)));
  }
}

function mapSegments(value: unknown, at: () => string): readonly CustomSegment[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) {
    throw new DataError('RECORD_INVALID', `${at()}: custom_segments is ${describe(value)}, not an array`);
  }
  const out: CustomSegment[] = [];
  const seen = new Set<string>();
  for (const entry of value as unknown[]) {
    const name = isRecord(entry) ? entry.name : undefined;
    const segmentValue = isRecord(entry) ? entry.value : undefined;
    if (typeof name !== 'string' || name === '' || typeof segmentValue !== 'string') {
      throw new DataError(
        'RECORD_INVALID',
        `${at()}: custom_segments entry ${describe(entry)} is not {"name": string, "value": string}`,
      );
    }
    // An exact repeat adds nothing and would collide in the segments table.
    const key = `${name}\u0000${segmentValue}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ name, value: segmentValue });
  }
  return out;
}
