/*
 * dbt-sources' document without a database: the freshness a schedule gives, and columns of any name described
 * as the API named them, read back from the YAML as written.
 */
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { dbtSources, freshnessOf } from '../../../src/cli/dbt-sources.js';
import { toYaml } from '../../../src/cli/yaml.js';
import { ConfigError } from '../../../src/errors.js';
import type { SourceCatalog } from '../../../src/load/source-catalog.js';

describe('freshnessOf', () => {
  it('warns once a run is missed and errors once two are', () => {
    expect(freshnessOf({})).toEqual({ warnAfterHours: 36, errorAfterHours: 60 });
    expect(freshnessOf({ scheduleHours: '6' })).toEqual({ warnAfterHours: 9, errorAfterHours: 15 });
    expect(freshnessOf({ scheduleHours: '1.5' })).toEqual({ warnAfterHours: 3, errorAfterHours: 4 });
    expect(freshnessOf({ warnAfter: '30', errorAfter: '48' })).toEqual({
      warnAfterHours: 30,
      errorAfterHours: 48,
    });
    expect(freshnessOf({ scheduleHours: '12', errorAfter: '100' })).toEqual({
      warnAfterHours: 18,
      errorAfterHours: 100,
    });
  });

  it('refuses bad hours in one line naming the flag and the value', () => {
    for (const [args, words] of [
      [{ scheduleHours: '0' }, '--schedule-hours must be a number of hours above 0, up to 8784, got "0"'],
      [{ warnAfter: '1.5' }, '--warn-after must be a whole number of hours above 0, up to 8784, got "1.5"'],
      [
        { errorAfter: 'soon' },
        '--error-after must be a whole number of hours above 0, up to 8784, got "soon"',
      ],
      [
        { warnAfter: '48', errorAfter: '24' },
        '--error-after (24 hours) must be later than --warn-after (48 hours)',
      ],
    ] as const) {
      expect(() => freshnessOf(args)).toThrow(ConfigError);
      expect(() => freshnessOf(args)).toThrow(words);
    }
  });
});

describe('dbtSources', () => {
  it('describes a column by the name the API sent, whatever it is', () => {
    const hostile = 'Reach "7d"\n: yes # <b>';
    const catalog: SourceCatalog = {
      tables: new Map([
        [
          'posts',
          [
            { name: 'acme_post_id', dataType: 'bigint' },
            { name: 'acme_asset_id', dataType: 'bigint' },
            { name: 'reach_7d_yes_b', dataType: 'bigint' },
            { name: 'on', dataType: 'text' },
            { name: '_loaded_at', dataType: 'timestamp with time zone' },
          ],
        ],
      ]),
      fieldOfColumn: new Map([
        ['reach_7d_yes_b', hostile],
        ['acme_asset_id', 'acme_asset_id'],
      ]),
      postIdField: 'acme_post_id',
    };
    const read = parse(toYaml(dbtSources('s', catalog, 'acme_post_id', freshnessOf({}))));
    const posts = read.sources[0].tables[0];
    expect(posts.loaded_at_field).toBe('_loaded_at');
    expect(posts.freshness).toEqual({
      warn_after: { count: 36, period: 'hour' },
      error_after: { count: 60, period: 'hour' },
    });
    const described = Object.fromEntries(
      posts.columns.map((c: { name: string; description: string }) => [c.name, c.description]),
    );
    expect(described.acme_post_id).toMatch(/Identifier of the post/);
    expect(described.acme_asset_id).toMatch(/asset/);
    expect(described.reach_7d_yes_b).toBe(
      `The field the API sent as ${JSON.stringify(hostile)} (not described by the API's documentation).`,
    );
    expect(described.on).toBe('A column the connector did not make.');
    expect(read.sources[0].tables).toHaveLength(1);
  });
});
