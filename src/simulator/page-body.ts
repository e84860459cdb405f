import type { CorruptionKind } from './faults.js';

export interface Page {
  readonly id: string;
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
    text: `{"id":"${page.id}","status":"DONE","data":[${page.records.join(',')}],"response_metadata":[{"next_page":${next}}]}`,
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

/** A page malformed in the given way; the response status stays 200. `idKeyJson`: the id field name as JSON. */
export function corruptPageBody(kind: CorruptionKind, page: Page, idKeyJson: string): Body {
  const records = page.records;
  const next = page.nextPage === null ? 'null' : `"${page.nextPage}"`;
  const head = `{"id":"${page.id}","status":"DONE"`;
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
  }
}
