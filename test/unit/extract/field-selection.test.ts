import { describe, expect, it } from 'vitest';
import { parseExactJson } from '../../../src/api/exact-json.js';
import { parseConfig } from '../../../src/config.js';
import { mapRecords } from '../../../src/extract/record-mapping.js';
import {
  canonicalSelection,
  describeSelection,
  fieldFilter,
  sameSelection,
} from '../../../src/model/field-selection.js';

const base = {
  POST_REPORTS_BASE_URL: 'https://api.example.com/v4',
  POST_REPORTS_TOKEN: 'tok-123',
  DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/postgres',
};

describe('field selection settings', () => {
  it('reads --fields / --exclude-fields and their variables, flags winning', () => {
    expect(parseConfig(base).run.fields).toEqual({ mode: 'all' });
    expect(parseConfig({ ...base, POST_REPORTS_FIELDS: 'brand, total_spend' }).run.fields).toEqual({
      mode: 'include',
      fields: ['brand', 'total_spend'],
    });
    expect(
      parseConfig({ ...base, POST_REPORTS_EXCLUDE_FIELDS: 'email' }, { excludeFields: 'name,email' }).run
        .fields,
    ).toEqual({ mode: 'exclude', fields: ['name', 'email'] });
  });

  it('refuses both at once in one line naming both', () => {
    expect(() => parseConfig({ ...base, POST_REPORTS_FIELDS: 'brand' }, { excludeFields: 'email' })).toThrow(
      /^POST_REPORTS_FIELDS \(--fields\) and POST_REPORTS_EXCLUDE_FIELDS \(--exclude-fields\) cannot be used together: list the fields to load, or the ones to leave out$/,
    );
  });
});

describe('field selections', () => {
  it('compares selections by their fields, not their spelling', () => {
    expect(canonicalSelection({ mode: 'exclude', fields: ['name', 'email', 'name'] })).toEqual({
      mode: 'exclude',
      fields: ['email', 'name'],
    });
    expect(
      sameSelection({ mode: 'include', fields: ['b', 'a'] }, { mode: 'include', fields: ['a', 'b'] }),
    ).toBe(true);
    expect(sameSelection({ mode: 'include', fields: ['a'] }, { mode: 'exclude', fields: ['a'] })).toBe(false);
    expect(describeSelection({ mode: 'exclude', fields: ['name', 'email'] })).toBe(
      'all fields but "email", "name"',
    );
    expect(fieldFilter({ mode: 'all' })).toBeNull();
  });

  it('drops the fields left out as records are mapped, custom_segments included', () => {
    const records = parseExactJson(
      '[{"platform_post_id":17841405793187219,"name":"Zoë","email":"z@example.com","brand":"B","custom_segments":[{"name":"Region","value":"North"}]}]',
    ) as Record<string, unknown>[];
    const context = {
      postIdField: 'platform_post_id',
      window: { start: '2026-03-02', end: '2026-03-08' },
      page: 1,
    };
    const [excluded] = mapRecords(records, {
      ...context,
      keep: fieldFilter({ mode: 'exclude', fields: ['name', 'email'] }),
    });
    expect(excluded?.id).toBe('17841405793187219');
    expect(Object.keys(excluded?.fields ?? {})).toEqual(['brand']);
    expect(excluded?.segments).toEqual([{ name: 'Region', value: 'North' }]);
    const [included] = mapRecords(records, {
      ...context,
      keep: fieldFilter({ mode: 'include', fields: ['email'] }),
    });
    expect(Object.keys(included?.fields ?? {})).toEqual(['email']);
    expect(included?.segments).toEqual([]);
  });
});
