import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseExactJson } from '../../../src/api/exact-json.js';
import { decodePage } from '../../../src/extract/page-decoder.js';
import { type PostMapping, toReportPage } from '../../../src/extract/pager.js';
import { type EncodeStats, encodePage, type PageColumn } from '../../../src/load/copy-encoding.js';
import { ExactNumber, JsonDocument, type MappedPost } from '../../../src/model/post-record.js';
import { documentedPage, page, style, tree, write } from '../../helpers/json-text.js';

/*
 * The one-pass page decoder against the full way (parseExactJson, toReportPage, mapRecords): a page the decoder
 * takes must be read the same, post for post, field for field, in the same order, into the same COPY rows; a page
 * as documented must be taken.
 */

const WINDOW = { start: '2026-11-01', end: '2026-11-07' };

/** The full way, or null where it refuses the page. */
function fullWay(
  text: string,
  mapping: PostMapping,
): { status: unknown; nextPage: string | null; posts: MappedPost[] } | null {
  try {
    const body = parseExactJson(text) as Record<string, unknown>;
    const page = toReportPage(body, 'r', 1, null, text.length, mapping);
    return { status: body.status, nextPage: page.nextPage, posts: page.posts };
  } catch {
    return null;
  }
}

/** A post with its fields' order and its values' classes made visible. */
function shape(post: MappedPost): unknown {
  return {
    id: post.id,
    prototype: Object.getPrototypeOf(post.fields),
    fields: Object.keys(post.fields).map((key) => {
      const value = post.fields[key];
      if (value instanceof ExactNumber) return [key, 'exact', value.text];
      if (value instanceof JsonDocument) return [key, 'json', value.json];
      return [key, typeof value, value];
    }),
    segments: post.segments,
  };
}

function rows(posts: readonly MappedPost[]): string {
  const fields = new Set<string>();
  for (const post of posts) for (const field of Object.keys(post.fields)) fields.add(field);
  const columns: PageColumn[] = [...fields].map((field, i) => ({ field, column: `c${i}`, type: 'jsonb' }));
  const stats: EncodeStats = { nulReplaced: 0, surrogatesReplaced: 0 };
  const text = encodePage(posts, 0, columns, stats);
  return `${text.posts}--\n${text.segments}--\n${stats.nulReplaced} ${stats.surrogatesReplaced}`;
}

/** Checks a page the decoder takes against the full way; returns whether it took it. */
function agrees(text: string, mapping: PostMapping): boolean {
  const decoded = decodePage(text, { ...mapping, page: 1 });
  if (decoded === null) return false;
  const full = fullWay(text, mapping);
  expect(full, `the decoder took a page the full way refuses: ${JSON.stringify(text)}`).not.toBeNull();
  expect(decoded.status).toEqual(typeof full!.status === 'string' ? full!.status : undefined);
  expect(decoded.nextPage).toBe(full!.nextPage);
  expect(decoded.posts.map(shape)).toEqual(full!.posts.map(shape));
  expect(rows(decoded.posts)).toBe(rows(full!.posts));
  return true;
}

const selection = fc.option(fc.constantFrom('likes', '"', 'custom_segments', 'é', '__proto__'), {
  nil: undefined,
});
const mappingOf = (idField: string, dropped: string | undefined): PostMapping => ({
  postIdField: idField,
  window: WINDOW,
  keep: dropped === undefined ? null : (field) => field !== dropped,
});

describe('decodePage against the full way (differential)', () => {
  it('takes every page as documented, and reads it as the full way does', () => {
    fc.assert(
      fc.property(
        fc
          .constantFrom('platform_post_id', 'id', '"')
          .chain((idField) => fc.tuple(fc.constant(idField), documentedPage(idField))),
        selection,
        style,
        ([idField, value], dropped, how) => {
          const text = write(value, how);
          expect(agrees(text, mappingOf(idField, dropped)), `not taken: ${JSON.stringify(text)}`).toBe(true);
        },
      ),
      { numRuns: 600 },
    );
  });

  it('reads any page it takes as the full way does: random, hostile, cut short or changed', () => {
    fc.assert(
      fc.property(
        fc.oneof(page, documentedPage('platform_post_id'), tree),
        selection,
        style,
        fc.nat(),
        fc.constantFrom('', '"', '\\', '}', ']', ',', ':', '1', '.', 'e', '-', 'n'),
        (value, dropped, how, at, c) => {
          const mapping = mappingOf('platform_post_id', dropped);
          const text = write(value, how);
          agrees(text, mapping);
          const i = at % (text.length + 1);
          agrees(text.slice(0, i), mapping);
          agrees(text.slice(0, i) + c + text.slice(i + 1), mapping);
        },
      ),
      { numRuns: 1500 },
    );
  });

  it('takes a wide page with hostile names, long decimals, a nested document and segments', () => {
    const record = (i: number) =>
      `{"platform_post_id":${9_000_000_000_000_000 + i},"a \\"quoted\\" name":"x","caf\\u00e9":1.50,` +
      `"Back\\\\slash":true,"roas":123456789.123456789012345678e-3,"big":92233720368547758070,` +
      `"third_party_data":{"vendor":"v","score":0.1,"tags":["a","b"]},"nothing":null,` +
      `"custom_segments":[{"name":"brand","value":"b${i}"},{"name":"brand","value":"b${i}"}]}`;
    const text = `{"status":"DONE","data":[${[1, 2, 3].map(record).join(',')}],"response_metadata":[{"next_page":null}]}`;
    expect(agrees(text, mappingOf('platform_post_id', undefined))).toBe(true);
    const decoded = decodePage(text, { ...mappingOf('platform_post_id', undefined), page: 1 })!;
    expect(decoded.posts[0]!.segments).toEqual([{ name: 'brand', value: 'b1' }]);
    expect(Object.keys(decoded.posts[0]!.fields)).toEqual([
      'a "quoted" name',
      'café',
      'Back\\slash',
      'roas',
      'big',
      'third_party_data',
      'nothing',
    ]);
  });

  it('leaves to the full way what it does not take: repeated keys, bad ids, bad segments, bad tokens', () => {
    const mapping = { ...mappingOf('id', undefined), page: 1 };
    const pageOf = (records: string, status = '"DONE"') =>
      `{"status":${status},"data":[${records}],"response_metadata":[{"next_page":null}]}`;
    for (const text of [
      pageOf('{"id":1,"a":1,"a":1}'),
      pageOf('{"id":1,"a":1,"\\u0061":2}'),
      pageOf('{"id":1.5}'),
      pageOf('{"id":9223372036854775808}'),
      pageOf('{"a":1}'),
      pageOf('{"id":1,"custom_segments":[{"name":"","value":"v"}]}'),
      pageOf('{"id":1,"custom_segments":{}}'),
      pageOf('1'),
      `${pageOf('{"id":1}')}x`,
      '{"status":"DONE","data":[],"response_metadata":[{"next_page":""}]}',
    ]) {
      expect(decodePage(text, mapping), text).toBeNull();
    }
    // A status is handed back as sent: the caller decides what a page that is not DONE is.
    expect(decodePage(pageOf('{"id":1}', '"IN_PROGRESS"'), mapping)?.status).toBe('IN_PROGRESS');
    expect(decodePage(pageOf('{"id":1}', '5'), mapping)?.status).toBeUndefined();
  });
});
