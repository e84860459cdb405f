import { isUtf8 } from 'node:buffer';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseExactJson } from '../../../src/api/exact-json.js';
import { withoutBom } from '../../../src/api/utf8.js';
import { decodePage } from '../../../src/extract/page-decoder.js';
import { type PostMapping, toReportPage } from '../../../src/extract/pager.js';
import { type EncodeStats, encodePage, type PageColumn } from '../../../src/load/copy-encoding.js';
import { declaredTypes } from '../../../src/load/declared-types.js';
import type { ColumnType } from '../../../src/load/field-types.js';
import { type PagePlan, planPage, type Registry } from '../../../src/load/schema-evolution.js';
import { encodeTape } from '../../../src/load/tape-encoding.js';
import {
  type PagePosts,
  type PageTape,
  postIds,
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
} from '../../../src/model/page-tape.js';
import {
  type CustomSegment,
  ExactNumber,
  type FieldValue,
  JsonDocument,
  type MappedPost,
} from '../../../src/model/post-record.js';
import { documentedPage, page, style, tree, withRepeats, write } from '../../helpers/json-text.js';

/*
 * The one-pass page decoder against the full way (parseExactJson, toReportPage, mapRecords): a page the decoder
 * takes must be read the same, post for post, field for field, in the same order; load must plan the same columns
 * from its tape and write the same COPY rows (posts and segments, byte for byte) with the same counts of
 * characters replaced, whatever the columns' types; a page as documented must be taken. The decoder reads a page's
 * bytes as the client hands them (the body when it is valid UTF-8, else the UTF-8 of the text decoded from it), the
 * full way the text.
 */

const WINDOW = { start: '2026-11-01', end: '2026-11-07' };
const PLACE = { window: '2026-11-01..2026-11-07', page: 1 };
const EMPTY: Registry = { byField: new Map(), taken: new Set() };
const TYPES: readonly ColumnType[] = ['bigint', 'numeric', 'text', 'boolean', 'jsonb', 'date', 'other'];

/** A body as the client hands it on: its text, and the UTF-8 of that text the decoder reads. */
interface Received {
  readonly text: string;
  readonly utf8: Buffer;
}

/**
 * What the client makes of a body's bytes in a charset (client.ts getDeferredJson): the text TextDecoder makes of
 * them (bytes not valid replaced by U+FFFD), and the bytes as received when they are valid UTF-8 in UTF-8 (without
 * the byte order mark the text leaves out), else the UTF-8 of the text.
 */
function received(bytes: Buffer, charset = 'utf-8'): Received {
  const text = new TextDecoder(charset).decode(bytes);
  const utf8 = charset === 'utf-8' && isUtf8(bytes) ? withoutBom(bytes) : Buffer.from(text, 'utf8');
  expect(utf8.toString('utf8')).toBe(text);
  return { text, utf8 };
}

/**
 * A text as a service can send it: a surrogate alone, which no UTF-8 holds (the text would be sent with U+FFFD in
 * its place), written as its escape, as JSON.stringify writes it. The writer puts one only within a string.
 */
function sendable(text: string): string {
  return text.replace(/\p{Cs}/gu, (c) => `\\u${c.charCodeAt(0).toString(16)}`);
}

/** The full way, or null where it refuses the page. */
function fullWay(
  text: string,
  mapping: PostMapping,
): { status: unknown; nextPage: string | null; posts: MappedPost[] } | null {
  try {
    const body = parseExactJson(text) as Record<string, unknown>;
    const page = toReportPage(body, 'r', 1, null, text.length, mapping);
    return { status: body.status, nextPage: page.nextPage, posts: page.posts as MappedPost[] };
  } catch {
    return null;
  }
}

/** The posts a tape holds, as the full way maps them (nulls left out, segments each once as decoded). */
function postsOf(tape: PageTape): MappedPost[] {
  const posts: MappedPost[] = [];
  for (let i = 0; i < tape.length; i++) {
    const fields: Record<string, FieldValue> = Object.create(null);
    for (let v = tape.postValues[i]!; v < tape.postValues[i + 1]!; v++) {
      const at = v * VALUE_STRIDE;
      const name = tape.fields[tape.values[at]!]!;
      const kind = tape.values[at + 1]!;
      const text = tape.valueText(v);
      if (kind === TAPE_STRING || kind === TAPE_OWNED_STRING || kind === TAPE_ESCAPED_STRING)
        fields[name] = text;
      else if (kind === TAPE_INTEGER) fields[name] = Number(text);
      else if (kind === TAPE_INT64 || kind === TAPE_BIGNUM || kind === TAPE_DECIMAL)
        fields[name] = new ExactNumber(text);
      else if (kind === TAPE_TRUE || kind === TAPE_FALSE) fields[name] = kind === TAPE_TRUE;
      else if (
        kind === TAPE_JSON ||
        kind === TAPE_OWNED_JSON ||
        kind === TAPE_ESCAPED_JSON ||
        kind === TAPE_REWRITTEN_JSON
      )
        fields[name] = new JsonDocument(text);
      else throw new Error(`kind ${kind}`);
    }
    const segments: CustomSegment[] = [];
    for (let s = tape.postSegments[i]!; s < tape.postSegments[i + 1]!; s++) {
      const segment = { name: tape.segmentText(s, 0), value: tape.segmentText(s, 1) };
      if (!segments.some((x) => x.name === segment.name && x.value === segment.value)) segments.push(segment);
    }
    posts.push({ id: tape.id(i), fields, segments });
  }
  return posts;
}

/** A post with its fields' order and its values' classes made visible; nulls left out (a tape has none). */
function shape(post: MappedPost): unknown {
  return {
    id: post.id,
    prototype: Object.getPrototypeOf(post.fields),
    fields: Object.keys(post.fields)
      .filter((key) => post.fields[key] !== null)
      .map((key) => {
        const value = post.fields[key];
        if (value instanceof ExactNumber) return [key, 'exact', value.text];
        if (value instanceof JsonDocument) return [key, 'json', value.json];
        return [key, typeof value, value];
      }),
    segments: post.segments,
  };
}

/** A page's plan, or the message of the error planning it fails with. */
function plan(posts: PagePosts, declared: boolean): PagePlan | string {
  try {
    return planPage(posts, EMPTY, PLACE, declared ? declaredTypes('platform_post_id') : new Map());
  } catch (error) {
    return (error as Error).message;
  }
}

/** The COPY rows and counters of a page's posts: the reference from mapped posts, or from a tape. */
function rows(posts: PagePosts, columns: readonly PageColumn[]): string {
  const stats: EncodeStats = { nulReplaced: 0, surrogatesReplaced: 0 };
  let text: { posts: string; segments: string; segmentRows: number };
  if (Array.isArray(posts)) text = encodePage(posts as MappedPost[], 3, columns, stats);
  else {
    const encoded = encodeTape(posts as PageTape, 3, columns, stats);
    // As bytes, then decoded: a character written wrong shows, and so would invalid UTF-8 (as U+FFFD).
    text = {
      posts: encoded.posts.toString('utf8'),
      segments: encoded.segments.toString('utf8'),
      segmentRows: encoded.segmentRows,
    };
    expect(Buffer.from(text.posts, 'utf8').equals(encoded.posts)).toBe(true);
    expect(Buffer.from(text.segments, 'utf8').equals(encoded.segments)).toBe(true);
  }
  return `${text.posts}--\n${text.segments}--\n${text.segmentRows} ${stats.nulReplaced} ${stats.surrogatesReplaced}`;
}

/** Column types for a page's fields: all one type, each its plan's, or each any (even one that refuses it). */
function columnSets(fields: readonly string[], planned: PagePlan | string, seed: number): PageColumn[][] {
  const sets: PageColumn[][] = TYPES.map((type) =>
    fields.map((field, i) => ({ field, column: `c${i}`, type })),
  );
  sets.push(
    fields.map((field, i) => ({ field, column: `c${i}`, type: TYPES[(seed + i * 7) % TYPES.length]! })),
  );
  if (typeof planned !== 'string') {
    sets.push([...planned.fields].map(([field, type], i) => ({ field, column: `c${i}`, type })));
  }
  // Half the fields in columns, the other half in one jsonb object, as fields beyond the column budget are.
  const half = Math.floor(fields.length / 2);
  if (fields.length > half) {
    sets.push([
      ...fields
        .slice(0, half)
        .map((field, i) => ({ field, column: `c${i}`, type: TYPES[(seed + i) % TYPES.length]! })),
      { field: '', column: 'extra', type: 'jsonb', fields: fields.slice(half) },
    ]);
  }
  return sets;
}

/**
 * Pages each way took, and the values of the pages taken that the decoder handed to the full parser one by one: the
 * decoder declining every page would make the comparison an empty one.
 */
interface Tally {
  fast: number;
  full: number;
  values: number;
  valuesTheFullWay: number;
}

const newTally = (): Tally => ({ fast: 0, full: 0, values: 0, valuesTheFullWay: 0 });

/** Checks a page the decoder takes against the full way; returns whether it took it. */
async function agrees(
  body: string | Received,
  mapping: PostMapping,
  seed = 0,
  tally?: Tally,
): Promise<boolean> {
  const { text, utf8 } = typeof body === 'string' ? received(Buffer.from(body, 'utf8')) : body;
  const decoded = await decodePage(utf8, { ...mapping, page: 1 });
  if (tally !== undefined) {
    if (decoded === null) tally.full++;
    else {
      tally.fast++;
      tally.values += decoded.posts.values.length / VALUE_STRIDE;
      tally.valuesTheFullWay += decoded.valuesTheFullWay;
    }
  }
  if (decoded === null) return false;
  const full = fullWay(text, mapping);
  expect(full, `the decoder took a page the full way refuses: ${JSON.stringify(text)}`).not.toBeNull();
  const tape = decoded.posts;
  expect(decoded.status).toEqual(typeof full!.status === 'string' ? full!.status : undefined);
  expect(decoded.nextPage).toBe(full!.nextPage);
  expect(tape.length).toBe(full!.posts.length);
  expect(postIds(tape)).toEqual(full!.posts.map((post) => post.id));
  expect(postsOf(tape).map(shape)).toEqual(full!.posts.map(shape));
  for (const declared of [false, true]) {
    const planned = plan(full!.posts, declared);
    const fromTape = plan(tape, declared);
    if (typeof planned === 'string') expect(fromTape).toBe(planned);
    else {
      expect(typeof fromTape).toBe('object');
      expect([...(fromTape as PagePlan).fields]).toEqual([...planned.fields]);
      expect((fromTape as PagePlan).changes).toEqual(planned.changes);
    }
    const fields = typeof planned === 'string' ? [...tape.fields] : [...planned.fields.keys()];
    for (const columns of columnSets(fields, planned, seed)) {
      expect(rows(tape, columns)).toBe(rows(full!.posts, columns));
    }
  }
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
  it('takes every page as documented, and reads it as the full way does', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc
          .constantFrom('platform_post_id', 'id', '"')
          .chain((idField) => fc.tuple(fc.constant(idField), documentedPage(idField))),
        selection,
        style,
        async ([idField, value], dropped, how) => {
          const text = sendable(write(value, how));
          expect(await agrees(text, mappingOf(idField, dropped)), `not taken: ${JSON.stringify(text)}`).toBe(
            true,
          );
        },
      ),
      { numRuns: 600 },
    );
  });

  it('reads any page it takes as the full way does: random, hostile, cut short or changed', async () => {
    const tally = newTally();
    const count = async (body: string | Received, mapping: PostMapping, at: number) => {
      await agrees(body, mapping, at, tally);
    };
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(page, documentedPage('platform_post_id'), tree),
        selection,
        style,
        fc.nat(),
        fc.constantFrom('', '"', '\\', '}', ']', ',', ':', '1', '.', 'e', '-', 'n', 'é', '日', '😀'),
        async (value, dropped, how, at, c) => {
          const mapping = mappingOf('platform_post_id', dropped);
          const text = write(value, how);
          await count(text, mapping, at);
          const i = at % (text.length + 1);
          await count(text.slice(0, i), mapping, at);
          await count(text.slice(0, i) + c + text.slice(i + 1), mapping, at);
          // Cut or changed within a character's bytes: not UTF-8 any more, read as the client reads it.
          const bytes = Buffer.from(text, 'utf8');
          const j = at % (bytes.length + 1);
          await count(received(bytes.subarray(0, j)), mapping, at);
          const byte = Buffer.from([[0x80, 0xc3, 0xe6, 0xf0, 0xff][at % 5]!]);
          await count(
            received(Buffer.concat([bytes.subarray(0, j), byte, bytes.subarray(j + 1)])),
            mapping,
            at,
          );
        },
      ),
      { numRuns: 1500 },
    );
    // Most of these pages are cut or changed, which the fast decoder declines; it still takes a real share.
    expect(tally.fast, JSON.stringify(tally)).toBeGreaterThan((tally.fast + tally.full) / 10);
    expect(tally.full, JSON.stringify(tally)).toBeGreaterThan(0);
  });

  it('takes pages whose records or nested values repeat a key with the same value, and reads them as the full way does', async () => {
    // A key written twice with one value is no reason to read the whole page the slow way: the full way keeps it
    // once. A nested value with such a repeat is the one value read the full way, not its page.
    const tally = newTally();
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(documentedPage('platform_post_id'), page),
        fc.array(fc.nat(), { minLength: 1, maxLength: 16 }),
        selection,
        style,
        fc.nat(),
        async (value, picks, dropped, how, at) => {
          const text = sendable(write(withRepeats(value, picks), how));
          await agrees(text, mappingOf('platform_post_id', dropped), at, tally);
        },
      ),
      { numRuns: 800 },
    );
    expect(tally.fast, JSON.stringify(tally)).toBeGreaterThan((tally.fast + tally.full) / 2);
    expect(tally.valuesTheFullWay, JSON.stringify(tally)).toBeGreaterThan(0);
    // Only the values with a repeat inside go the full way.
    expect(tally.valuesTheFullWay, JSON.stringify(tally)).toBeLessThan(tally.values / 4);
    const mapping = mappingOf('id', undefined);
    for (const records of [
      '{"id":1,"a":1,"a":1}',
      '{"id":1,"a":"x","\\u0061":"\\u0078","b":null,"b":null}',
      '{"id":1,"a":1.50,"b":2,"a":1.50,"d":{"k":[1,{"k":2}]},"d":{"k":[1,{"k":2}]}}',
      '{"id":1,"d":{"k":1,"k":1,"j":"\\u00e9"}},{"id":2,"d":{ "k" : [ 1 ] }}',
    ]) {
      const text = `{"status":"DONE","data":[${records}],"response_metadata":[{"next_page":null}]}`;
      expect(await agrees(text, mapping), text).toBe(true);
    }
  });

  it('reads pages in UTF-8 of every length, bytes that are not UTF-8 and other charsets as the full way reads their text', async () => {
    // Bytes UTF-8 refuses: a continuation alone, a lead without its continuations, an overlong form, a surrogate,
    // past U+10FFFF, a byte never used.
    const invalid = fc.constantFrom(
      [0x80],
      [0xc3],
      [0xe6, 0x97],
      [0xf0, 0x9f, 0x98],
      [0xc0, 0xaf],
      [0xed, 0xa0, 0x80],
      [0xf4, 0x90, 0x80, 0x80],
      [0xff],
    );
    let taken = 0;
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(documentedPage('platform_post_id'), page),
        style,
        fc.constantFrom('utf-8', 'bom', 'invalid', 'windows-1252', 'utf-16le'),
        invalid,
        fc.nat(),
        async (value, how, encoding, bad, at) => {
          const text = write(value, how);
          const utf8 = Buffer.from(text, 'utf8');
          let body: Received;
          if (encoding === 'bom') body = received(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), utf8]));
          else if (encoding === 'invalid') {
            // Within a string where there is one, so that the page stays JSON.
            const quotes = [...utf8.keys()].filter((k) => utf8[k] === 0x22);
            const k = quotes.length > 0 ? quotes[at % quotes.length]! + 1 : at % (utf8.length + 1);
            body = received(Buffer.concat([utf8.subarray(0, k), Buffer.from(bad), utf8.subarray(k)]));
          } else if (encoding === 'windows-1252') {
            body = received(Buffer.from(text, 'latin1'), encoding);
          } else if (encoding === 'utf-16le') body = received(Buffer.from(text, 'utf16le'), encoding);
          else body = received(utf8);
          runs++;
          if (await agrees(body, mappingOf('platform_post_id', undefined), at)) taken++;
        },
      ),
      { numRuns: 800 },
    );
    // Most of these pages are taken: the comparison is not an empty one.
    expect(taken).toBeGreaterThan(runs / 4);
  });

  it('takes a wide page with hostile names, long decimals, a nested document and segments', async () => {
    const record = (i: number) =>
      `{"platform_post_id":${9_000_000_000_000_000 + i},"a \\"quoted\\" name":"x","caf\\u00e9":1.50,` +
      `"Back\\\\slash":true,"roas":123456789.123456789012345678e-3,"big":92233720368547758070,` +
      `"third_party_data":{"vendor":"v","score":0.1,"tags":["a","b"]},"nothing":null,` +
      `"custom_segments":[{"name":"brand","value":"b${i}"},{"name":"brand","value":"b${i}"}]}`;
    const text = `{"status":"DONE","data":[${[1, 2, 3].map(record).join(',')}],"response_metadata":[{"next_page":null}]}`;
    expect(await agrees(text, mappingOf('platform_post_id', undefined))).toBe(true);
    const decoded = (await decodePage(Buffer.from(text, 'utf8'), {
      ...mappingOf('platform_post_id', undefined),
      page: 1,
    }))!;
    const first = postsOf(decoded.posts)[0]!;
    expect(first.segments).toEqual([{ name: 'brand', value: 'b1' }]);
    // A null is no value on the tape: its column reads NULL.
    expect(Object.keys(first.fields)).toEqual([
      'a "quoted" name',
      'café',
      'Back\\slash',
      'roas',
      'big',
      'third_party_data',
    ]);
  });

  it('reads keys and values in UTF-8 of 2, 3 and 4 bytes, as written and escaped, as the full way does', async () => {
    const record = (i: number) =>
      `{"platform_post_id":${i},"café":"crème ${i}","caf\\u00e9s":"\\u00e9t\\u00e9","日本":"東京","😀":"🎉${i}",` +
      `"mixed":"a\\u00e9b日😀\\ud83d\\ude00\\n","doc":{"ключ":["значение","😀"]},` +
      `"custom_segments":[{"name":"région","value":"Île-de-France"},{"name":"😀","value":"\\u65e5"}]}`;
    const text = `{"status":"DONE","data":[${[1, 2].map(record).join(',')}],"response_metadata":[{"next_page":"päge-2-😀"}]}`;
    expect(await agrees(text, mappingOf('platform_post_id', undefined))).toBe(true);
    const decoded = (await decodePage(Buffer.from(text, 'utf8'), {
      ...mappingOf('platform_post_id', undefined),
      page: 1,
    }))!;
    expect(decoded.nextPage).toBe('päge-2-😀');
    const [first] = postsOf(decoded.posts);
    expect(first!.fields).toMatchObject({
      café: 'crème 1',
      cafés: 'été',
      日本: '東京',
      '😀': '🎉1',
      mixed: 'aéb日😀😀\n',
    });
    expect(first!.segments).toEqual([
      { name: 'région', value: 'Île-de-France' },
      { name: '😀', value: '日' },
    ]);
  });

  it('plans documented fields as the full way does: dates checked, mismatches named by post', async () => {
    for (const values of [
      ['"2026-03-04"', '"2026-03-04"', 'null', '"2026-03-05"'],
      ['"2026-03-04"', '"2026-03-04"', '"2026-02-30"', '"x"'],
      ['"2026-03-04"', '20260304', '"2026-03-04"'],
      ['"2026-03-04"', '"2026-03-04"', '"\\u0032026-03-04"', '"\\u00320260304"'],
    ]) {
      const records = values.map(
        (v, i) =>
          `{"platform_post_id":${i + 1},"total_spend":${i % 2 === 0 ? '1.5' : '"x"'},"date_captured":${v}}`,
      );
      const text = `{"data":[${records.join(',')}],"response_metadata":[{"next_page":null}]}`;
      expect(await agrees(text, mappingOf('platform_post_id', undefined)), text).toBe(true);
      const dates = records.map((r) => r.replace(/"total_spend":[^,]*,/, ''));
      const only = `{"data":[${dates.join(',')}],"response_metadata":[{"next_page":null}]}`;
      expect(await agrees(only, mappingOf('platform_post_id', undefined)), only).toBe(true);
    }
  });

  it('writes documents with escapes as the full way does, whichever escapes JSON.stringify keeps', async () => {
    for (const document of [
      '{"a":"x\\ny","b":["q\\"r","s\\\\t"],"c":"\\b\\f\\r\\t"}',
      '["\\\\u0000","\\\\ud800"]',
      '{"a":"\\/"}',
      '{"a":"\\u00e9","b":"\\u001f","c":"\\u001F"}',
      '["\\u0000","\\ud800","x\\n"]',
      '{"1":"x\\n","a":"y"}',
      '{"a\\nb":"x\\n"}',
    ]) {
      const text = `{"data":[{"platform_post_id":1,"d":${document}},{"platform_post_id":2,"d":"s"}],"response_metadata":[{"next_page":null}]}`;
      expect(await agrees(text, mappingOf('platform_post_id', undefined)), text).toBe(true);
    }
  });

  it('writes segments repeated as decoded, or only once written, as the full way does, counts included', async () => {
    const segment = (name: string, value: string) => `{"name":"${name}","value":"${value}"}`;
    const nul = segment('a\\u0000', 'x');
    const replaced = segment('a\uFFFD', 'x');
    const lone = segment('b', '\\ud800');
    const replacedLone = segment('b', '\uFFFD');
    for (const list of [
      [nul, nul],
      [nul, replaced, nul],
      [replaced, nul],
      [replaced, nul, nul],
      [lone, lone, replacedLone],
      [replacedLone, lone, lone],
      [segment('c', 'v'), segment('c', 'v'), segment('c', 'w')],
    ]) {
      const text = `{"data":[{"platform_post_id":1,"custom_segments":[${list.join(',')}]}],"response_metadata":[{"next_page":null}]}`;
      expect(await agrees(text, mappingOf('platform_post_id', undefined)), text).toBe(true);
    }
  });

  it('leaves to the full way what it does not take: repeated keys, bad ids, bad segments, bad tokens', async () => {
    const mapping = { ...mappingOf('id', undefined), page: 1 };
    const pageOf = (records: string, status = '"DONE"') =>
      `{"status":${status},"data":[${records}],"response_metadata":[{"next_page":null}]}`;
    for (const text of [
      pageOf('{"id":1,"a":1,"\\u0061":2}'),
      pageOf('{"id":1,"a":1,"a":1.0}'),
      pageOf('{"id":1,"a":null,"a":1}'),
      pageOf('{"id":1,"id":1}'),
      pageOf('{"id":1,"d":{"k":1,"k":2}}'),
      pageOf('{"id":1.5}'),
      pageOf('{"id":9223372036854775808}'),
      pageOf('{"a":1}'),
      pageOf('{"id":1,"custom_segments":[{"name":"","value":"v"}]}'),
      pageOf('{"id":1,"custom_segments":{}}'),
      pageOf('1'),
      `${pageOf('{"id":1}')}x`,
      '{"status":"DONE","data":[],"response_metadata":[{"next_page":""}]}',
      `\ufeff${pageOf('{"id":1}')}`,
    ]) {
      expect(await decodePage(Buffer.from(text, 'utf8'), mapping), text).toBeNull();
    }
    // Bytes that are not UTF-8 are the client's to replace: the decoder never copies them.
    const good = Buffer.from(pageOf('{"id":1,"a":"é"}'), 'utf8');
    expect(await decodePage(good, mapping)).not.toBeNull();
    const at = good.indexOf(0xc3);
    expect(
      await decodePage(Buffer.concat([good.subarray(0, at), good.subarray(at + 1)]), mapping),
    ).toBeNull();
    // A status is handed back as sent: the caller decides what a page that is not DONE is.
    const utf8 = (text: string) => Buffer.from(text, 'utf8');
    expect((await decodePage(utf8(pageOf('{"id":1}', '"IN_PROGRESS"')), mapping))?.status).toBe(
      'IN_PROGRESS',
    );
    expect((await decodePage(utf8(pageOf('{"id":1}', '5')), mapping))?.status).toBeUndefined();
  });
});
