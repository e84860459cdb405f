import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/database.js';
import { cliEnv } from '../helpers/e2e-env.js';
import { donePage, startPageServer } from '../helpers/page-server.js';

/*
 * A field keeps its own name: a name that is a column name as it is gets that column, whatever came first; a
 * renamed field never takes a name that a documented field, another field of the page, a connector column or a
 * PostgreSQL system column owns. Hand-made pages, so that the renamed variants come first.
 */

const LONG = 'a'.repeat(63);
const LONGER = `${LONG}b`;
const NAMES = ['--from', '2026-03-02', '--to', '2026-03-08'];
const SYSTEM = ['--from', '2026-03-09', '--to', '2026-03-15'];

const db = await createTestDatabase();
const server = await startPageServer({
  pages: (start) => ({
    '': {
      body: donePage(
        start,
        start === '2026-03-16'
          ? ['{"platform_post_id":1,"Total_Spend":999}']
          : start === '2026-03-23'
            ? ['{"platform_post_id":2,"total_spend":10.5}']
            : start === '2026-03-02'
              ? [
                  `{"platform_post_id":1,"Total_Spend":999,"Engagements":"n/a","_window_start":"renamed","Spend":3,"${LONGER}":"longer"}`,
                  `{"platform_post_id":2,"total_spend":10.5,"engagements":3,"spend":4,"window_start":"plain","${LONG}":"plain 63"}`,
                  `{"platform_post_id":3,"total_spend":5.25,"engagements":4}`,
                ]
              : [
                  `{"platform_post_id":1,"xmin":1.5,"cmax":"box","ctid":7}`,
                  `{"platform_post_id":2}`,
                  `{"platform_post_id":3,"xmax":2.5}`,
                ],
        null,
      ),
    },
  }),
});
afterAll(() => server.close());

async function columns(schema: string): Promise<Record<string, string>> {
  const { rows } = await db.pool.query<{ field: string; column_name: string }>(
    `SELECT field, column_name FROM ${schema}.field_columns`,
  );
  return Object.fromEntries(rows.map((r) => [r.field, r.column_name]));
}

describe('field names (the built CLI against hand-made pages)', () => {
  it('gives each field its own column: a plain name is its own column, a renamed one takes no name another owns', async () => {
    const result = await runCli(['backfill', ...NAMES, '--schema', 'names'], cliEnv(server, db.url));
    expect(result.code, result.stderr.slice(-2000)).toBe(0);
    const mapping = await columns('names');
    expect(mapping).toMatchObject({
      total_spend: 'total_spend',
      Total_Spend: 'total_spend_2',
      engagements: 'engagements',
      Engagements: 'engagements_2',
      spend: 'spend',
      Spend: 'spend_2',
      window_start: 'window_start',
      _window_start: 'window_start_2',
      [LONG]: LONG,
      [LONGER]: `${'a'.repeat(61)}_2`,
    });
    const { rows } = await db.pool.query<{ sum: string; spend: string; plain: string; long: string }>(
      `SELECT sum(total_spend)::text AS sum, sum(spend)::text AS spend, max(window_start) AS plain,
              max(${LONG}) AS long FROM names.posts`,
    );
    expect(rows[0]).toEqual({ sum: '15.75', spend: '4', plain: 'plain', long: 'plain 63' });
  });

  it('renames the PostgreSQL system column names xmin, xmax, cmin, cmax, ctid and tableoid', async () => {
    const result = await runCli(['backfill', ...SYSTEM, '--schema', 'system'], cliEnv(server, db.url));
    expect(result.code, result.stderr.slice(-2000)).toBe(0);
    expect(await columns('system')).toMatchObject({
      xmin: 'xmin_2',
      xmax: 'xmax_2',
      cmax: 'cmax_2',
      ctid: 'ctid_2',
    });
    const { rows } = await db.pool.query(
      'SELECT platform_post_id::text AS id, xmin_2::text AS xmin, xmax_2::text AS xmax, cmax_2 AS cmax, ctid_2::text AS ctid FROM system.posts ORDER BY 1',
    );
    expect(rows).toEqual([
      { id: '1', xmin: '1.5', xmax: null, cmax: 'box', ctid: '7' },
      { id: '2', xmin: null, xmax: null, cmax: null, ctid: null },
      { id: '3', xmin: null, xmax: '2.5', cmax: null, ctid: null },
    ]);
  });

  it('keeps the mapping of a schema named by an older version, and says which field could not have its name', async () => {
    const first = await runCli(
      ['backfill', '--from', '2026-03-16', '--to', '2026-03-22', '--schema', 'legacy'],
      cliEnv(server, db.url),
    );
    expect(first.code, first.stderr.slice(-2000)).toBe(0);
    // What an older version did: it made no column for a documented field before a value came, and the renamed
    // field took the plain name of a field that came later (posts_latest, which holds the column, dropped first).
    await db.pool.query('DROP VIEW legacy.posts_latest');
    await db.pool.query('ALTER TABLE legacy.posts DROP COLUMN total_spend');
    await db.pool.query(`DELETE FROM legacy.field_columns WHERE field = 'total_spend'`);
    await db.pool.query('ALTER TABLE legacy.posts RENAME COLUMN total_spend_2 TO total_spend');
    await db.pool.query(
      `UPDATE legacy.field_columns SET column_name = 'total_spend' WHERE field = 'Total_Spend'`,
    );
    const second = await runCli(
      ['backfill', '--from', '2026-03-23', '--to', '2026-03-29', '--schema', 'legacy'],
      cliEnv(server, db.url),
    );
    expect(second.code, second.stderr.slice(-2000)).toBe(0);
    expect(await columns('legacy')).toMatchObject({
      Total_Spend: 'total_spend',
      total_spend: 'total_spend_2',
    });
    expect(second.stderr).toContain('the column named like field \\"total_spend\\" holds another field');
    // The README's query lists the pair.
    const { rows } = await db.pool.query(
      `SELECT f.field AS renamed, f.column_name, o.field AS owner, o.column_name AS owners_column
         FROM legacy.field_columns f JOIN legacy.field_columns o ON o.field = f.column_name
        WHERE f.field <> f.column_name`,
    );
    expect(rows).toEqual([
      {
        renamed: 'Total_Spend',
        column_name: 'total_spend',
        owner: 'total_spend',
        owners_column: 'total_spend_2',
      },
    ]);
  });
});
