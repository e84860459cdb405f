import { describe, expect, it } from 'vitest';
import { parseExactJson } from '../../../src/api/exact-json.js';
import { DataError } from '../../../src/errors.js';
import { mapRecords } from '../../../src/extract/record-mapping.js';
import { ExactNumber, JsonDocument } from '../../../src/model/post-record.js';

const context = {
  postIdField: 'platform_post_id',
  window: { start: '2026-03-01', end: '2026-03-07' },
  page: 4,
};

function records(json: string): Record<string, unknown>[] {
  return parseExactJson(json) as Record<string, unknown>[];
}

describe('mapRecords', () => {
  it('maps a plausible record exactly, keeping unknown fields and nested values as JSON text', () => {
    const [post] = mapRecords(
      records(`[{"platform_post_id":17841405793187219,"platform_asset_id":9007199254740993,"status":"In-Flight",
        "branded":true,"total_spend":1234.50,"engagements":532,"engagement_rate":0.0412,"currency":null,
        "brand_new_metric":"x","third_party_data":{"score":12345678901234567890,"tags":["a",1.5]},
        "custom_segments":[{"name":"Region","value":"North"},{"name":"Campaign Type","value":"Always On"}]}]`),
      context,
    );
    expect(post?.id).toBe('17841405793187219');
    expect(post?.fields).toEqual(
      Object.assign(Object.create(null), {
        platform_asset_id: new ExactNumber('9007199254740993'),
        status: 'In-Flight',
        branded: true,
        total_spend: new ExactNumber('1234.50'),
        engagements: 532,
        engagement_rate: new ExactNumber('0.0412'),
        currency: null,
        brand_new_metric: 'x',
        third_party_data: new JsonDocument('{"score":12345678901234567890,"tags":["a",1.5]}'),
      }),
    );
    expect(Object.getPrototypeOf(post?.fields)).toBeNull();
    expect(post?.segments).toEqual([
      { name: 'Region', value: 'North' },
      { name: 'Campaign Type', value: 'Always On' },
    ]);
  });

  it('leaves absent fields absent and tolerates a record without custom_segments', () => {
    const [post] = mapRecords(records('[{"platform_post_id":42,"name":"Post"}]'), context);
    expect(post).toEqual({
      id: '42',
      fields: Object.assign(Object.create(null), { name: 'Post' }),
      segments: [],
    });
    expect('total_spend' in (post?.fields ?? {})).toBe(false);
  });

  it('uses the configured id field and canonical digits', () => {
    const mapped = mapRecords(
      records('[{"acme_post_id":-9223372036854775808},{"acme_post_id":"0042"},{"acme_post_id":-0}]'),
      { ...context, postIdField: 'acme_post_id' },
    );
    expect(mapped.map((p) => p.id)).toEqual(['-9223372036854775808', '42', '0']);
    expect(mapped[0]?.fields).toEqual(Object.create(null));
  });

  it.each([
    ['{"name":"no id"}', 'post id is missing'],
    ['{"platform_post_id":null}', 'post id is null'],
    ['{"platform_post_id":12.5}', 'post id 12.5 is not an integer'],
    ['{"platform_post_id":1e3}', 'post id 1e3 is not an integer'],
    ['{"platform_post_id":"12a"}', 'post id "12a" is not an integer'],
    ['{"platform_post_id":true}', 'post id true is not an integer'],
    [
      '{"platform_post_id":9223372036854775808}',
      'post id 9223372036854775808 is outside the signed 64-bit range',
    ],
  ])('rejects %s naming window, page and value', (json, why) => {
    const run = () => mapRecords(records(`[{"platform_post_id":1},${json}]`), context);
    expect(run).toThrow(DataError);
    expect(run).toThrow(`record 2 of page 4 of window 2026-03-01..2026-03-07: ${why}`);
    try {
      run();
    } catch (error) {
      expect((error as DataError).code).toBe('RECORD_INVALID');
    }
  });

  it('rejects malformed custom_segments with a clear error, and drops exact repeats', () => {
    expect(() =>
      mapRecords(records('[{"platform_post_id":7,"custom_segments":[{"name":"Region"}]}]'), context),
    ).toThrow(
      'record 1 of page 4 of window 2026-03-01..2026-03-07 (post 7): custom_segments entry {"name":"Region"}',
    );
    expect(() => mapRecords(records('[{"platform_post_id":7,"custom_segments":{"a":1}}]'), context)).toThrow(
      'custom_segments is {"a":1}, not an array',
    );
    const [post] = mapRecords(
      records(
        '[{"platform_post_id":7,"custom_segments":[{"name":"R","value":"N"},{"name":"R","value":"N"},{"name":"R","value":"S"}]}]',
      ),
      context,
    );
    expect(post?.segments).toEqual([
      { name: 'R', value: 'N' },
      { name: 'R', value: 'S' },
    ]);
  });
});
