/*
 * Properties of the record mapping, fed through the exact JSON parser as the pager feeds it: ids keep every
 * digit over the whole signed 64-bit range, any other field is kept under its own name with its exact value,
 * and a record without a usable id always fails with RECORD_INVALID naming record, page and window.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseExactJson } from '../../../src/api/exact-json.js';
import { DataError } from '../../../src/errors.js';
import { type MappingContext, mapRecords } from '../../../src/extract/record-mapping.js';
import { ExactNumber, JsonDocument } from '../../../src/model/post-record.js';

const ID = 'platform_post_id';
const INT64_MAX = 2n ** 63n - 1n;
const INT64_MIN = -(2n ** 63n);

const contextArb: fc.Arbitrary<MappingContext> = fc.record({
  postIdField: fc.constant(ID),
  window: fc.constant({ start: '2026-03-02', end: '2026-03-08' }),
  page: fc.integer({ min: 1, max: 10_000 }),
});

/** Maps records given as JSON texts, parsed exactly as the API client parses a page. */
function mapTexts(texts: readonly string[], context: MappingContext) {
  return mapRecords(parseExactJson(`[${texts.join(',')}]`) as Record<string, unknown>[], context);
}

function thrown(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('expected an error, got none');
}

// Keys that have tripped JavaScript code before (prototype names), and the exact parser's marker character.
const keyArb = fc.oneof(
  fc.string(),
  fc.constantFrom('__proto__', 'constructor', 'toString', 'hasOwnProperty', '', '\u0091x', 'a.b', 'Ä ß 中'),
);
// Strings that may start with the parser's marker character, which sends a page down its slower exact path.
const stringArb = fc.oneof(
  fc.string(),
  fc.string().map((s) => `\u0091${s}`),
);
const jsonArb = fc.jsonValue({ maxDepth: 3 }).map((v) => v as unknown);
const fieldValueArb = fc.oneof(
  stringArb,
  fc.boolean(),
  fc.constant(null),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }),
  jsonArb,
);
const validIdArb = fc.bigInt({ min: INT64_MIN, max: INT64_MAX });

/** A value as JSON text; bigints as their digits, which JSON.stringify cannot write. */
function jsonText(value: unknown): string {
  if (typeof value === 'bigint') return value.toString();
  return JSON.stringify(value);
}

describe('mapRecords (properties)', () => {
  it('keeps every digit of any id from 1 to 2^63-1, as a number or a string, canonical', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 1n, max: INT64_MAX }),
        fc.nat({ max: 3 }),
        contextArb,
        (id, zeros, context) => {
          const digits = id.toString();
          const [asNumber, asString, padded] = mapTexts(
            [`{"${ID}":${digits}}`, `{"${ID}":"${digits}"}`, `{"${ID}":"${'0'.repeat(zeros)}${digits}"}`],
            context,
          );
          expect(asNumber?.id).toBe(digits);
          expect(asString?.id).toBe(digits);
          expect(padded?.id).toBe(digits);
          expect(BigInt(asNumber?.id ?? '')).toBe(id);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('keeps every digit of negative ids down to -2^63, and maps -0 and 0 to "0"', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: INT64_MIN, max: -1n }), contextArb, (id, context) => {
        const [post] = mapTexts([`{"${ID}":${id}}`], context);
        expect(post?.id).toBe(id.toString());
      }),
    );
    const context = { postIdField: ID, window: { start: '2026-03-02', end: '2026-03-08' }, page: 1 };
    expect(mapTexts([`{"${ID}":0}`, `{"${ID}":-0}`, `{"${ID}":"-000"}`], context).map((p) => p.id)).toEqual([
      '0',
      '0',
      '0',
    ]);
  });

  it('refuses ids outside the signed 64-bit range with RECORD_INVALID', () => {
    const outside = fc.oneof(
      fc.bigInt({ min: INT64_MAX + 1n, max: 10n ** 40n }),
      fc.bigInt({ min: -(10n ** 40n), max: INT64_MIN - 1n }),
    );
    fc.assert(
      fc.property(outside, contextArb, (id, context) => {
        const error = thrown(() => mapTexts([`{"${ID}":${id}}`], context));
        expect(error).toBeInstanceOf(DataError);
        expect((error as DataError).code).toBe('RECORD_INVALID');
        expect((error as DataError).message).toContain(`post id ${id} is outside the signed 64-bit range`);
      }),
    );
  });

  it('maps any record with a valid id without throwing, keeping every field and nothing else, exactly', () => {
    const fieldsArb = fc.dictionary(keyArb, fieldValueArb, { maxKeys: 12 }).map((fields) => {
      delete fields[ID];
      delete fields.custom_segments;
      return fields;
    });
    fc.assert(
      fc.property(validIdArb, fieldsArb, contextArb, (id, fields, context) => {
        const members = Object.entries(fields).map(([k, v]) => `${JSON.stringify(k)}:${jsonText(v)}`);
        const [post] = mapTexts([`{${[`"${ID}":${id}`, ...members].join(',')}}`], context);
        expect(post?.id).toBe(id.toString());
        const mapped = post?.fields ?? {};
        expect(Object.getPrototypeOf(mapped)).toBeNull();
        expect(Object.keys(mapped).sort()).toEqual(Object.keys(fields).sort());
        for (const [key, value] of Object.entries(fields)) {
          const got = mapped[key];
          const text = jsonText(value);
          if (value === null || typeof value === 'string' || typeof value === 'boolean') {
            expect(got).toBe(value);
          } else if (typeof value === 'number' || typeof value === 'bigint') {
            // A plain number only when it is exact as one; otherwise the delivered digits.
            if (got instanceof ExactNumber) expect(got.text).toBe(text);
            else {
              expect(typeof got).toBe('number');
              expect(String(got)).toBe(text);
              expect(Number.isSafeInteger(got)).toBe(true);
            }
          } else {
            expect(got).toBeInstanceOf(JsonDocument);
            expect(JSON.parse((got as JsonDocument).json)).toEqual(JSON.parse(text));
          }
        }
      }),
      { numRuns: 300 },
    );
  });

  it('refuses a record whose id is missing or not an integer, wherever it stands, naming record, page and window', () => {
    const badIdArb = fc.oneof(
      fc.constant(undefined),
      fc.constant('null'),
      fc
        .double({ noNaN: true, noDefaultInfinity: true })
        .filter((d) => !Number.isInteger(d))
        .map(String),
      fc
        .tuple(fc.bigInt({ min: -(10n ** 20n), max: 10n ** 20n }), fc.stringMatching(/^[0-9]{0,5}[1-9]$/))
        .map(([whole, fraction]) => `${whole}.${fraction}`),
      // Integer values not written as integers are refused too: the id is a key, spelled one way.
      fc.constantFrom('1.0', '1e3', '-0.0', '12E2'),
      stringArb.filter((s) => !/^-?\d+$/.test(s)).map((s) => JSON.stringify(s)),
      fc.boolean().map(String),
      jsonArb.filter((v) => typeof v === 'object' && v !== null).map((v) => JSON.stringify(v)),
    );
    fc.assert(
      fc.property(
        fc.array(validIdArb, { maxLength: 5 }),
        fc.nat(),
        badIdArb,
        contextArb,
        (goodIds, at, badId, context) => {
          const texts = goodIds.map((id) => `{"${ID}":${id},"n":1}`);
          const position = at % (texts.length + 1);
          texts.splice(position, 0, badId === undefined ? '{"n":1}' : `{"${ID}":${badId},"n":1}`);
          const error = thrown(() => mapTexts(texts, context));
          expect(error).toBeInstanceOf(DataError);
          expect((error as DataError).code).toBe('RECORD_INVALID');
          expect((error as DataError).message).toMatch(
            new RegExp(
              `^record ${position + 1} of page ${context.page} of window 2026-03-02\\.\\.2026-03-08: post id (.* )?is (missing|null|not an integer)$`,
            ),
          );
        },
      ),
      { numRuns: 300 },
    );
  });

  it('keeps each custom segment pair once, in the order first sent', () => {
    const pairArb = fc.record({
      name: fc.constantFrom('Region', 'Campaign Type', 'ß', '中'),
      value: fc.constantFrom('North', 'South', '', 'Always On', '\u0000'),
    });
    fc.assert(
      fc.property(validIdArb, fc.array(pairArb, { maxLength: 12 }), contextArb, (id, pairs, context) => {
        const [post] = mapTexts([`{"${ID}":${id},"custom_segments":${JSON.stringify(pairs)}}`], context);
        const expected: { name: string; value: string }[] = [];
        for (const pair of pairs) {
          if (!expected.some((e) => e.name === pair.name && e.value === pair.value)) expected.push(pair);
        }
        expect(post?.segments).toEqual(expected);
        expect(Object.keys(post?.fields ?? {})).toEqual([]);
      }),
    );
  });
});
