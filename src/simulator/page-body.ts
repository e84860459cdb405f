import { type CorruptionKind, ENVELOPE_KINDS } from './faults.js';

export interface Page {
  /** The report id as JSON: a quoted string, or the digits of a numeric id. */
  readonly idJson: string;
  /** Records' JSON texts. */
  readonly records: readonly string[];
  readonly nextPage: string | null;
}

export interface Body {
  readonly contentType: string;
  readonly text: string;
}

const JSON_TYPE = 'application/json; charset=utf-8';

/** A DONE page as the service sends it. */
export function pageBody(page: Page): Body {
  const next = page.nextPage === null ? 'null' : `"${page.nextPage}"`;
  return {
    contentType: JSON_TYPE,
    text: `{"id":${page.idJson},"status":"DONE","data":[${page.records.join(',')}],"response_metadata":[{"next_page":${next}}]}`,
  };
}

/** Drops the first key (the post id) of a record's JSON text. */
function withoutId(record: string): string {
  const comma = record.indexOf(',"');
  return comma < 0 ? '{}' : `{${record.slice(comma + 1)}`;
}

/** Replaces the first value (the post id) of a record's JSON text with a fraction. */
function withFractionalId(record: string): string {
  const colon = record.indexOf(':');
  const comma = record.indexOf(',"');
  return `${record.slice(0, colon + 1)}12345.5${comma < 0 ? '}' : record.slice(comma)}`;
}

/** The values the record-level corruptions put into a record, for tests to look for. */
export const CORRUPT_VALUES = Object.freeze({
  /** `status` of the repeated record of 'duplicate-id' (real posts are In-Flight or Pre-Flight). */
  duplicateStatus: 'Duplicate',
  /** `platform_asset_id` of 'wrong-type': a string where every other record has an integer. */
  wrongTypeAssetId: 'n/a',
  /** `status` of 'nul-characters'. */
  nulStatus: 'In\u0000Flight\u0000',
  /** `date_captured` of 'not-a-date' (documented as YYYY-MM-DD). */
  notADate: 'not-a-date',
});

/** Characters of the 'huge-string' value at least: 10 MiB. */
export const HUGE_STRING_MIN_LENGTH = 10 * 1024 * 1024;

// Quotes, a backslash, control characters, and 2-, 3- and 4-byte UTF-8: every escape path of JSON and COPY.
const HUGE_STRING_PATTERN = '10 MiB "quoted" back\\slash\ttab\nline é 中 🌟|';
let hugeString: string | undefined;

/**
 * The 'huge-string' value of `creative_link`: the pattern repeated whole (never cut inside a surrogate pair)
 * to at least HUGE_STRING_MIN_LENGTH characters. Built once; the same string on every call.
 */
export function hugeStringValue(): string {
  hugeString ??= HUGE_STRING_PATTERN.repeat(Math.ceil(HUGE_STRING_MIN_LENGTH / HUGE_STRING_PATTERN.length));
  return hugeString;
}
let hugeStringJson: string | undefined;

function hugeStringJsonText(): string {
  hugeStringJson ??= JSON.stringify(hugeStringValue());
  return hugeStringJson;
}

/**
 * Replaces the value of a top-level scalar field of a generator record's JSON text, or appends the field when
 * the record lacks it. Generator records write scalar fields before nested ones, so the first `,"key":` is the
 * top-level one; a string value ends at its first unescaped quote, any other at the next `,` or `}`.
 */
function withField(record: string, key: string, valueJson: string): string {
  const marker = `,${JSON.stringify(key)}:`;
  const at = record.indexOf(marker);
  if (at < 0) return `${record.slice(0, record.lastIndexOf('}'))}${marker}${valueJson}}`;
  const start = at + marker.length;
  let end: number;
  if (record[start] === '"') {
    end = start + 1;
    while (record[end] !== '"') end += record[end] === '\\' ? 2 : 1;
    end += 1;
  } else {
    end = start;
    while (end < record.length && record[end] !== ',' && record[end] !== '}') end += 1;
  }
  return `${record.slice(0, start)}${valueJson}${record.slice(end)}`;
}

/** The page with its first record changed by `change`; an empty page gets one record `{id: 1}` changed. */
function withFirstRecord(page: Page, idKeyJson: string, change: (record: string) => string): Body {
  const [first = `{${idKeyJson}:1}`, ...rest] = page.records;
  return pageBody({ ...page, records: [change(first), ...rest] });
}

/** A corruption of the page around its records. */
type EnvelopeKind = (typeof ENVELOPE_KINDS)[number];

function isEnvelopeKind(kind: CorruptionKind): kind is EnvelopeKind {
  return (ENVELOPE_KINDS as readonly CorruptionKind[]).includes(kind);
}

/** A page malformed in the given way; the response status stays 200. `idKeyJson`: the id field name as JSON. */
export function corruptPageBody(kind: CorruptionKind, page: Page, idKeyJson: string): Body {
  return isEnvelopeKind(kind) ? corruptEnvelope(kind, page) : corruptRecords(kind, page, idKeyJson);
}

function corruptEnvelope(kind: EnvelopeKind, page: Page): Body {
  const records = page.records;
  const next = page.nextPage === null ? 'null' : `"${page.nextPage}"`;
  const head = `{"id":${page.idJson},"status":"DONE"`;
  switch (kind) {
    case 'data-not-array':
      return {
        contentType: JSON_TYPE,
        text: `${head},"data":${records[0] ?? '{}'},"response_metadata":[{"next_page":${next}}]}`,
      };
    case 'too-many-records': {
      const padded = [...records];
      for (let i = 0; padded.length <= 1000; i++)
        padded.push(records[i % Math.max(records.length, 1)] ?? '{}');
      return pageBody({ ...page, records: padded });
    }
    case 'missing-response-metadata':
      return { contentType: JSON_TYPE, text: `${head},"data":[${records.join(',')}]}` };
    case 'next-page-not-string':
      return {
        contentType: JSON_TYPE,
        text: `${head},"data":[${records.join(',')}],"response_metadata":[{"next_page":4711}]}`,
      };
    case 'truncated-json': {
      const text = pageBody(page).text;
      return { contentType: JSON_TYPE, text: text.slice(0, Math.max(1, Math.floor(text.length / 2))) };
    }
    case 'html-200':
      return {
        contentType: 'text/html; charset=utf-8',
        text: '<!DOCTYPE html><html><head><title>Maintenance</title></head><body><h1>We will be back soon</h1></body></html>',
      };
  }
}

function corruptRecords(kind: Exclude<CorruptionKind, EnvelopeKind>, page: Page, idKeyJson: string): Body {
  const records = page.records;
  switch (kind) {
    case 'record-without-id':
      return pageBody({
        ...page,
        records: records.length === 0 ? ['{}'] : [withoutId(records[0] ?? '{}'), ...records.slice(1)],
      });
    case 'non-integer-id':
      return pageBody({
        ...page,
        records:
          records.length === 0
            ? [`{${idKeyJson}:12345.5}`]
            : [withFractionalId(records[0] ?? '{}'), ...records.slice(1)],
      });
    case 'duplicate-id': {
      // The repeat differs from the original, so that which occurrence was kept shows in the loaded row.
      const first = records[0] ?? `{${idKeyJson}:1}`;
      const repeat = withField(first, 'status', JSON.stringify(CORRUPT_VALUES.duplicateStatus));
      return pageBody({
        ...page,
        records: records.length >= 2 ? [...records.slice(0, -1), repeat] : [first, repeat],
      });
    }
    case 'wrong-type':
      return withFirstRecord(page, idKeyJson, (record) =>
        withField(record, 'platform_asset_id', JSON.stringify(CORRUPT_VALUES.wrongTypeAssetId)),
      );
    case 'nul-characters':
      return withFirstRecord(page, idKeyJson, (record) =>
        withField(record, 'status', JSON.stringify(CORRUPT_VALUES.nulStatus)),
      );
    case 'huge-string':
      return withFirstRecord(page, idKeyJson, (record) =>
        withField(record, 'creative_link', hugeStringJsonText()),
      );
    case 'not-a-date':
      return withFirstRecord(page, idKeyJson, (record) =>
        withField(record, 'date_captured', JSON.stringify(CORRUPT_VALUES.notADate)),
      );
  }
}
