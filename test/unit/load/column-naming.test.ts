import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { baseColumnName, chooseColumnName, MAX_IDENTIFIER_BYTES } from '../../../src/load/column-naming.js';

describe('column naming', () => {
  it('keeps plain snake_case names', () => {
    expect(baseColumnName('engagement_rate')).toBe('engagement_rate');
    expect(baseColumnName('roas')).toBe('roas');
  });

  it('folds hostile and unusual names to safe identifiers', () => {
    expect(baseColumnName('x"; drop table posts; --')).toBe('x_drop_table_posts');
    expect(baseColumnName('_private')).toBe('private');
    expect(baseColumnName('__')).toBe('field');
    expect(baseColumnName('3d_views')).toBe('f_3d_views');
    expect(baseColumnName('Total Spend (€)')).toBe('total_spend');
    expect(baseColumnName('')).toBe('field');
  });

  it('truncates to 63 bytes and resolves clashes with numbered suffixes', () => {
    const long = 'a'.repeat(70);
    expect(baseColumnName(long)).toBe('a'.repeat(63));
    const taken = new Set(['a'.repeat(63)]);
    const second = chooseColumnName(`${long}b`, taken);
    expect(second).toBe(`${'a'.repeat(61)}_2`);
    taken.add(second);
    expect(chooseColumnName(`${long}c`, taken)).toBe(`${'a'.repeat(61)}_3`);
    expect(chooseColumnName('platform_post_id', new Set(['platform_post_id']))).toBe('platform_post_id_2');
  });

  it('always yields a lower-case identifier of at most 63 bytes that avoids the taken names', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 100 }), fc.array(fc.string({ maxLength: 10 })), (field, others) => {
        const taken = new Set(others.map(baseColumnName));
        const name = chooseColumnName(field, taken);
        expect(name).toMatch(/^[a-z][a-z0-9_]*$/);
        expect(Buffer.byteLength(name)).toBeLessThanOrEqual(MAX_IDENTIFIER_BYTES);
        expect(taken.has(name)).toBe(false);
        expect(name.startsWith('_')).toBe(false);
      }),
    );
  });
});

describe('names other fields own', () => {
  it('gives a plain name its own column and a renamed field a name no plain field owns', () => {
    expect(chooseColumnName('total_spend', new Set())).toBe('total_spend');
    expect(chooseColumnName('Total_Spend', new Set(), new Set(['total_spend']))).toBe('total_spend_2');
    expect(chooseColumnName('xmin', new Set())).toBe('xmin_2');
    expect(chooseColumnName('TableOID', new Set())).toBe('tableoid_2');
  });
});
