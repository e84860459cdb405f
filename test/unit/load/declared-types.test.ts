import { describe, expect, it } from 'vitest';
import { declaredTypes, documentedFields, expectedFields } from '../../../src/load/declared-types.js';
import { fitOf, isColumnDate } from '../../../src/load/field-types.js';
import { planPage, type Registry } from '../../../src/load/schema-evolution.js';
import { ExactNumber, type FieldValue, type MappedPost } from '../../../src/model/post-record.js';

const EMPTY: Registry = { byField: new Map(), taken: new Set() };
const place = { window: '2026-03-02..2026-03-08', page: 1 };

function post(id: number, fields: Record<string, FieldValue>): MappedPost {
  return { id: String(id), fields: Object.assign(Object.create(null), fields), segments: [] };
}

describe('declared types of documented fields', () => {
  it("declares the field notes' types: decimals numeric, counts bigint, date_captured date", () => {
    const types = declaredTypes('platform_post_id');
    expect(types.get('total_spend')).toBe('numeric');
    expect(types.get('date_captured')).toBe('date');
    expect(types.get('engagements')).toBe('bigint');
    expect(types.get('purchase_count')).toBe('bigint');
    expect(types.get('roas')).toBe('numeric');
    expect(types.get('engagement_rate')).toBe('numeric');
    expect(types.get('branded')).toBe('boolean');
    expect(types.get('platform_asset_id')).toBe('bigint');
    expect(types.get('third_party_data')).toBe('jsonb');
    expect(types.has('video_views')).toBe(false);
  });

  it('follows the brand in the post id field for the asset id', () => {
    expect(declaredTypes('acme_post_id').get('acme_asset_id')).toBe('bigint');
    expect(documentedFields('acme_post_id')).toEqual(
      expect.arrayContaining(['acme_post_id', 'custom_segments', 'acme_asset_id', 'email']),
    );
  });

  it('expects one asset id, named like the post id, among the columns made before any page', () => {
    expect(expectedFields('platform_post_id').get('platform_asset_id')).toBe('bigint');
    const branded = expectedFields('acme_post_id');
    expect(branded.get('acme_asset_id')).toBe('bigint');
    expect(branded.has('platform_asset_id')).toBe(false);
    expect(expectedFields('id').get('platform_asset_id')).toBe('bigint');
    for (const fields of [expectedFields('platform_post_id'), branded]) {
      expect(fields.get('total_spend')).toBe('numeric');
      expect(fields.has('custom_segments')).toBe(false);
      expect(fields.has('video_views')).toBe(false);
    }
  });

  it('creates documented columns with their declared type whatever the first value, others from the values', () => {
    const plan = planPage(
      [post(1, { total_spend: 1234, date_captured: '2026-03-04', engagements: 5, video_views: 7 })],
      EMPTY,
      place,
      declaredTypes('platform_post_id'),
    );
    expect(plan.changes).toEqual([
      { field: 'total_spend', action: 'add', type: 'numeric' },
      { field: 'date_captured', action: 'add', type: 'date' },
      { field: 'engagements', action: 'add', type: 'bigint' },
      { field: 'video_views', action: 'add', type: 'bigint' },
    ]);
  });

  it('creates a documented count that arrives with a fraction as numeric at once', () => {
    const plan = planPage(
      [post(1, { conversions: new ExactNumber('2.5') })],
      EMPTY,
      place,
      declaredTypes('platform_post_id'),
    );
    expect(plan.changes).toEqual([{ field: 'conversions', action: 'add', type: 'numeric' }]);
  });

  it("keeps an existing column's type and widens it only when a value needs it", () => {
    const registry: Registry = {
      byField: new Map([
        ['total_spend', { column: 'total_spend', type: 'bigint', sqlType: 'bigint', exists: true }],
        ['date_captured', { column: 'date_captured', type: 'text', sqlType: 'text', exists: true }],
      ]),
      taken: new Set(['total_spend', 'date_captured']),
    };
    const declared = declaredTypes('platform_post_id');
    expect(
      planPage([post(1, { total_spend: 12, date_captured: 'x' })], registry, place, declared).changes,
    ).toEqual([]);
    expect(
      planPage([post(1, { total_spend: new ExactNumber('12.5') })], registry, place, declared).changes,
    ).toEqual([{ field: 'total_spend', action: 'widen', type: 'numeric' }]);
  });

  it('refuses a date column value that is not YYYY-MM-DD, naming the value, in one line', () => {
    const declared = declaredTypes('platform_post_id');
    for (const bad of ['not-a-date', '2026-02-30', '04/03/2026', 'today', '0000-01-01']) {
      expect(() => planPage([post(7, { date_captured: bad })], EMPTY, place, declared)).toThrow(
        `field "date_captured" holds ${JSON.stringify(bad)} in post 7 of window 2026-03-02..2026-03-08 page 1, but its column is date: the API documents dates as YYYY-MM-DD`,
      );
    }
    expect(() => planPage([post(7, { date_captured: 20260304 })], EMPTY, place, declared)).toThrow(
      /holds a int64 value in post 7 .* but its column is date/,
    );
    expect(isColumnDate('2024-02-29')).toBe(true);
    expect(fitOf('date', 'string')).toBe('ok');
    expect(fitOf('date', 'boolean')).toBe('mismatch');
    expect(fitOf('text', 'string')).toBe('ok');
  });
});
