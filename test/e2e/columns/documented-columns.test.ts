/*
 * Documented fields are known before any page arrives (issue 30): a run makes the columns of the documented fields
 * its selection keeps, with their declared types, at its preparation and in one DDL, so that no page of a
 * documented record needs DDL. A page's undocumented fields still get columns typed from their values.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { expectedFields } from '../../../src/load/declared-types.js';
import { runCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { donePage, startPageServer } from '../../helpers/page-server.js';

const db = await createTestDatabase();
// Pages without a single documented field: whatever documented column exists was not made for a page.
const server = await startPageServer({
  pages: (start) => ({
    '': { body: donePage(start, ['{"platform_post_id":1,"video_views":5}', '{"platform_post_id":2}'], null) },
  }),
});
afterAll(() => server.close());

const WEEK = ['--from', '2026-03-02', '--to', '2026-03-08'];

/**
 * The documented fields besides the post id and custom_segments, read off the spec and the production field notes,
 * with the types the README gives them (decimals and rates numeric, counts and the asset id bigint, the date
 * date, the flag boolean, the nested value jsonb, strings text): the test's own table, not the connector's.
 */
const DOCUMENTED: Readonly<Record<string, string>> = {
  brand: 'text',
  market: 'text',
  channel: 'text',
  platform_asset_id: 'bigint',
  status: 'text',
  name: 'text',
  email: 'text',
  company: 'text',
  asset_type: 'text',
  content_type: 'text',
  ad_format: 'text',
  branded: 'boolean',
  total_spend: 'numeric',
  currency: 'text',
  date_captured: 'date',
  creative_link: 'text',
  all_conversions: 'bigint',
  conversions: 'bigint',
  engagements: 'bigint',
  purchase_count: 'bigint',
  dpvr: 'numeric',
  engagement_rate: 'numeric',
  new_to_brand_purchase_rate: 'numeric',
  new_to_brand_roas: 'numeric',
  purchase_rate: 'numeric',
  roas: 'numeric',
  third_party_data: 'jsonb',
};

async function columnTypes(schema: string): Promise<Record<string, string>> {
  const { rows } = await db.pool.query<{ c: string; t: string }>(
    `SELECT column_name AS c, format_type(a.atttypid, a.atttypmod) AS t
       FROM information_schema.columns c
       JOIN pg_attribute a ON a.attrelid = to_regclass($1) AND a.attname = c.column_name
      WHERE c.table_schema = $2 AND c.table_name = 'posts'`,
    [`${schema}.posts`, schema],
  );
  return Object.fromEntries(rows.map((r) => [r.c, r.t]));
}

interface LogLine {
  readonly msg?: string;
  readonly columns?: { field: string; column: string; type: string }[];
}

function logLines(stderr: string): LogLine[] {
  return stderr
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogLine);
}

async function backfill(schema: string, extra: string[] = []) {
  const result = await runCli(['backfill', ...WEEK, '--schema', schema, ...extra], cliEnv(server, db.url));
  expect(result.code, result.stderr.slice(-2000)).toBe(0);
  return result;
}

describe('documented columns before any page (the built CLI against hand-made pages)', () => {
  it("makes every documented field's column with its declared type before the first page, in one DDL", async () => {
    const result = await backfill('documented');
    const types = await columnTypes('documented');
    for (const [field, type] of Object.entries(DOCUMENTED)) expect(types[field], field).toBe(type);
    // The connector's own list says the same.
    expect(Object.fromEntries(expectedFields('platform_post_id'))).toEqual(DOCUMENTED);
    expect(types).toMatchObject({ total_spend: 'numeric', date_captured: 'date', third_party_data: 'jsonb' });
    // The page's own field, typed from its value.
    expect(types.video_views).toBe('bigint');

    const lines = logLines(result.stderr);
    const added = lines.filter((l) => l.msg === 'new fields: columns added to posts');
    const staged = lines.findIndex((l) => l.msg === 'window staged');
    // One line for the documented fields (brand, market and channel come with the schema), before the page is
    // staged; one for the page's field alone.
    expect(added.map((l) => l.columns?.map((c) => c.field).sort())).toEqual([
      Object.keys(DOCUMENTED)
        .filter((f) => !['brand', 'market', 'channel'].includes(f))
        .sort(),
      ['video_views'],
    ]);
    expect(lines.indexOf(added[0]!)).toBeLessThan(staged);

    // Set up already: the next run adds nothing.
    const again = await backfill('documented', ['--reload']);
    expect(logLines(again.stderr).filter((l) => l.msg === 'new fields: columns added to posts')).toEqual([]);
  });

  it('makes only the columns of the documented fields the selection keeps', async () => {
    await backfill('excluded', ['--exclude-fields', 'email,name,total_spend']);
    const excluded = await columnTypes('excluded');
    for (const field of ['email', 'name', 'total_spend']) expect(excluded).not.toHaveProperty(field);
    expect(excluded).toMatchObject({ company: 'text', date_captured: 'date', brand: 'text' });

    await backfill('included', ['--fields', 'brand,total_spend']);
    const included = Object.keys(await columnTypes('included')).filter((c) => !c.startsWith('_'));
    expect(included.sort()).toEqual(['brand', 'platform_post_id', 'total_spend']);
  });

  it("names the asset id after a branded post id's brand", async () => {
    const branded = await startPageServer({
      pages: (start) => ({ '': { body: donePage(start, ['{"acme_post_id":1}'], null) } }),
    });
    try {
      const result = await runCli(
        ['backfill', ...WEEK, '--schema', 'branded'],
        cliEnv(branded, db.url, { POST_REPORTS_POST_ID_FIELD: 'acme_post_id' }),
      );
      expect(result.code, result.stderr.slice(-2000)).toBe(0);
    } finally {
      await branded.close();
    }
    const types = await columnTypes('branded');
    expect(types).toMatchObject({ acme_post_id: 'bigint', acme_asset_id: 'bigint', total_spend: 'numeric' });
    expect(types).not.toHaveProperty('platform_asset_id');
  });
});
