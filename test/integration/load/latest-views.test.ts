/*
 * posts_latest and post_custom_segments_latest (migration 011): one row per organization and post from its latest
 * window, the same rows as the README's DISTINCT ON query; they follow posts' columns as the loader adds, widens
 * and drops them; and row-level security on the tables filters them (security_invoker, PostgreSQL 15+).
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { Loader } from '../../../src/load/loader.js';
import { migrate } from '../../../src/load/migrate.js';
import { applyFieldSelection } from '../../../src/load/stored-fields.js';
import { ExactNumber } from '../../../src/model/post-record.js';
import { createTestDatabase } from '../../helpers/database.js';
import { captureLogger, load, post } from './load-fixtures.js';

const db = await createTestDatabase();
const log = captureLogger();

const W1 = { start: '2026-03-02', end: '2026-03-08' };
const W2 = { start: '2026-03-09', end: '2026-03-15' };

async function loaded(schema: string, org = 'default'): Promise<Loader> {
  const target = { schema, postIdField: 'platform_post_id', org };
  await migrate(db.pool, target, log.logger);
  return new Loader(db.pool, target, log.logger);
}

/** Rows of a query as JSON text without _loaded_at, sorted. */
async function rowsOf(sql: string): Promise<string[]> {
  const { rows } = await db.pool.query<{ r: string }>(
    `SELECT (to_jsonb(q) - '_loaded_at')::text AS r FROM (${sql}) q ORDER BY 1`,
  );
  return rows.map((r) => r.r);
}

describe('posts_latest', () => {
  it("holds each post's row of its latest window, as the README's query does, with that window's segments", async () => {
    const loader = await loaded('latest_rows');
    await load(loader, W1, 'r1', [
      [
        post(1, { spend: 10 }, [{ name: 'Region', value: 'North' }]),
        post(2, { spend: 20 }, [{ name: 'Region', value: 'East' }]),
      ],
    ]);
    await load(loader, W2, 'r2', [[post(1, { spend: 15 }, [{ name: 'Region', value: 'South' }])]]);
    const latest = await rowsOf('SELECT * FROM latest_rows.posts_latest');
    expect(latest).toHaveLength(2);
    expect(latest).toEqual(
      await rowsOf(`SELECT DISTINCT ON (_org, platform_post_id) * FROM latest_rows.posts
                     ORDER BY _org, platform_post_id, _window_start DESC`),
    );
    const { rows } = await db.pool.query<{ id: string; spend: string; window: string }>(
      `SELECT platform_post_id::text AS id, spend::text, _window_start::text AS window
         FROM latest_rows.posts_latest ORDER BY 1`,
    );
    expect(rows).toEqual([
      { id: '1', spend: '15', window: '2026-03-09' },
      { id: '2', spend: '20', window: '2026-03-02' },
    ]);
    const segments = await db.pool.query<{ id: string; value: string }>(
      `SELECT platform_post_id::text AS id, value FROM latest_rows.post_custom_segments_latest ORDER BY 1`,
    );
    expect(segments.rows).toEqual([
      { id: '1', value: 'South' },
      { id: '2', value: 'East' },
    ]);
  });

  it('follows posts as the loader adds a column, widens one and drops one', async () => {
    const loader = await loaded('latest_columns');
    await load(loader, W1, 'r1', [[post(1, { spend: 10 })]]);
    // A field first sent now: a new column of posts, which the view shows.
    await load(loader, W2, 'r2', [[post(1, { spend: 11, caption: 'new' })]]);
    const caption = await db.pool.query<{ caption: string }>(
      'SELECT caption FROM latest_columns.posts_latest',
    );
    expect(caption.rows).toEqual([{ caption: 'new' }]);
    // A decimal in a bigint column: the widening retypes posts, which a view holding the column would refuse.
    await load(loader, { start: '2026-03-16', end: '2026-03-22' }, 'r3', [
      [post(1, { spend: new ExactNumber('0.10') })],
    ]);
    const type = await db.pool.query<{ t: string }>(
      `SELECT format_type(atttypid, atttypmod) AS t FROM pg_attribute
        WHERE attrelid = 'latest_columns.posts_latest'::regclass AND attname = 'spend'`,
    );
    expect(type.rows).toEqual([{ t: 'numeric' }]);
    const spend = await db.pool.query<{ s: string }>(
      'SELECT spend::text AS s FROM latest_columns.posts_latest',
    );
    expect(spend.rows).toEqual([{ s: '0.10' }]);
  });

  it('loses a column a field selection drops', async () => {
    const schema = 'latest_dropped';
    const target = { schema, postIdField: 'platform_post_id' };
    await migrate(db.pool, target, log.logger);
    await db.pool.query(`ALTER TABLE ${schema}.posts ADD COLUMN kept text, ADD COLUMN gone text`);
    await db.pool.query(
      `INSERT INTO ${schema}.field_columns (field, column_name) VALUES ('kept', 'kept'), ('gone', 'gone')`,
    );
    await db.pool.query(`SELECT ${schema}.make_posts_latest()`);
    await applyFieldSelection(db.pool, { schema, org: 'default' }, { mode: 'include', fields: ['kept'] });
    const columns = await db.pool.query<{ name: string }>(
      `SELECT attname::text AS name FROM pg_attribute
        WHERE attrelid = '${schema}.posts_latest'::regclass AND attnum > 0 AND attname IN ('kept', 'gone')`,
    );
    expect(columns.rows).toEqual([{ name: 'kept' }]);
  });

  it("shows a role filtered by row-level security only its organization's rows", async () => {
    const acme = await loaded('latest_rls', 'acme');
    await load(acme, W1, 'a1', [[post(1, { spend: 1 }, [{ name: 'Region', value: 'North' }])]]);
    const globex = await loaded('latest_rls', 'globex');
    await load(globex, W1, 'g1', [[post(2, { spend: 2 }, [{ name: 'Region', value: 'West' }])]]);
    const { rows } = await db.pool.query<{ v: number; db: string }>(
      "SELECT current_setting('server_version_num')::int AS v, current_database() AS db",
    );
    const role = pg.escapeIdentifier(`acme_latest_${rows[0]!.db}`);
    await db.pool.query(`CREATE ROLE ${role} NOLOGIN`);
    await db.pool.query(`GRANT USAGE ON SCHEMA latest_rls TO ${role}`);
    for (const table of ['posts', 'post_custom_segments']) {
      await db.pool.query(`ALTER TABLE latest_rls.${table} ENABLE ROW LEVEL SECURITY`);
      await db.pool.query(
        `CREATE POLICY acme ON latest_rls.${table} FOR SELECT TO ${role} USING (_org = 'acme')`,
      );
      await db.pool.query(`GRANT SELECT ON latest_rls.${table}, latest_rls.${table}_latest TO ${role}`);
    }
    const client = await db.pool.connect();
    try {
      await client.query(`SET ROLE ${role}`);
      const posts = await client.query<{ org: string }>('SELECT _org AS org FROM latest_rls.posts_latest');
      const segments = await client.query<{ org: string }>(
        'SELECT _org AS org FROM latest_rls.post_custom_segments_latest',
      );
      // PostgreSQL 14 has no security_invoker: its views read as their owner (docs/storage.md).
      const expected = rows[0]!.v >= 150000 ? [{ org: 'acme' }] : [{ org: 'acme' }, { org: 'globex' }];
      expect(posts.rows).toEqual(expected);
      expect(segments.rows).toEqual(expected);
    } finally {
      await client.query('RESET ROLE');
      client.release();
      await db.pool.query(`DROP OWNED BY ${role}`);
      await db.pool.query(`DROP ROLE ${role}`);
    }
  });
});
