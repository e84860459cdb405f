/*
 * posts_latest and post_custom_segments_latest (migration 012): one row per organization and post from its latest
 * window, the same rows and columns as the README's DISTINCT ON query; they follow posts' columns as the loader
 * adds, widens and drops them, and as an operator changes them by hand (the next run's start); row-level security
 * on the tables filters them (security_invoker, PostgreSQL 15+).
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { withTransaction } from '../../../src/load/database.js';
import { Loader } from '../../../src/load/loader.js';
import { migrate } from '../../../src/load/migrate.js';
import { renameOrganization } from '../../../src/load/organization-rename.js';
import { applyFieldSelection } from '../../../src/load/stored-fields.js';
import { resetTarget, writeTarget } from '../../../src/load/window-state.js';
import { ExactNumber } from '../../../src/model/post-record.js';
import { createTestDatabase } from '../../helpers/database.js';
import { captureLogger, load, post } from './load-fixtures.js';

const db = await createTestDatabase();
const log = captureLogger();

const W1 = { start: '2026-03-02', end: '2026-03-08' };
const W2 = { start: '2026-03-09', end: '2026-03-15' };
const W3 = { start: '2026-03-16', end: '2026-03-22' };

async function loaded(schema: string, org = 'default', postIdField = 'platform_post_id'): Promise<Loader> {
  const target = { schema, postIdField, org };
  await migrate(db.pool, target, log.logger);
  return new Loader(db.pool, target, log.logger);
}

/** Rows of a query as JSON text (every column by name), sorted. */
async function rowsOf(sql: string): Promise<string[]> {
  const { rows } = await db.pool.query<{ r: string }>(
    `SELECT to_jsonb(q)::text AS r FROM (${sql}) q ORDER BY 1`,
  );
  return rows.map((r) => r.r);
}

/** A relation's columns, `name type`, in order. */
async function columnsOf(relation: string): Promise<string[]> {
  const { rows } = await db.pool.query<{ c: string }>(
    `SELECT attname || ' ' || format_type(atttypid, atttypmod) AS c FROM pg_attribute
      WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum`,
    [relation],
  );
  return rows.map((r) => r.c);
}

/** The README's query of each post's latest row, and the segments of those rows. */
function readmeLatest(schema: string, postId = 'platform_post_id'): { posts: string; segments: string } {
  const s = pg.escapeIdentifier(schema);
  const id = pg.escapeIdentifier(postId);
  const posts = `SELECT DISTINCT ON (_org, ${id}) * FROM ${s}.posts ORDER BY _org, ${id}, _window_start DESC`;
  return {
    posts,
    segments: `SELECT s.* FROM ${s}.post_custom_segments s JOIN (${posts}) l USING (_org, ${id}, _window_start)`,
  };
}

/** The views hold what the README's queries give, column by column, and the columns of their tables. */
async function expectAsReadme(schema: string, postId = 'platform_post_id'): Promise<void> {
  const s = pg.escapeIdentifier(schema);
  const readme = readmeLatest(schema, postId);
  expect(await columnsOf(`${s}.posts_latest`)).toEqual(await columnsOf(`${s}.posts`));
  expect(await columnsOf(`${s}.post_custom_segments_latest`)).toEqual(
    await columnsOf(`${s}.post_custom_segments`),
  );
  expect(await rowsOf(`SELECT * FROM ${s}.posts_latest`)).toEqual(await rowsOf(readme.posts));
  expect(await rowsOf(`SELECT * FROM ${s}.post_custom_segments_latest`)).toEqual(
    await rowsOf(readme.segments),
  );
}

describe('posts_latest and post_custom_segments_latest', () => {
  it("hold each post's row and segments of its latest window, as the README's query does", async () => {
    const loader = await loaded('latest_rows');
    await load(loader, W1, 'r1', [
      [
        post(1, { spend: 10 }, [{ name: 'Region', value: 'North' }]),
        post(2, { spend: 20 }, [{ name: 'Region', value: 'East' }]),
      ],
    ]);
    await load(loader, W2, 'r2', [[post(1, { spend: 15 }, [{ name: 'Region', value: 'South' }])]]);
    await expectAsReadme('latest_rows');
    const { rows } = await db.pool.query<{ id: string; spend: string; window: string }>(
      `SELECT platform_post_id::text AS id, spend::text, _window_start::text AS window
         FROM latest_rows.posts_latest ORDER BY 1`,
    );
    expect(rows).toEqual([
      { id: '1', spend: '15', window: '2026-03-09' },
      { id: '2', spend: '20', window: '2026-03-02' },
    ]);
    const segments = await db.pool.query<{ id: string; value: string }>(
      'SELECT platform_post_id::text AS id, value FROM latest_rows.post_custom_segments_latest ORDER BY 1',
    );
    expect(segments.rows).toEqual([
      { id: '1', value: 'South' },
      { id: '2', value: 'East' },
    ]);
  });

  it('hold one row per organization and post: two organizations loading the same post ids', async () => {
    const acme = await loaded('latest_orgs', 'acme');
    const globex = await loaded('latest_orgs', 'globex');
    await load(acme, W1, 'a1', [[post(1, { spend: 1 }), post(2, { spend: 2 })]]);
    await load(globex, W1, 'g1', [[post(1, { spend: 100 }, [{ name: 'Tier', value: 'Gold' }])]]);
    await load(globex, W2, 'g2', [[post(1, { spend: 101 }, [{ name: 'Tier', value: 'Silver' }])]]);
    await load(acme, W3, 'a3', [[post(2, { spend: 3, caption: 'acme only' })]]);
    await expectAsReadme('latest_orgs');
    const { rows } = await db.pool.query<{ row: string }>(
      `SELECT _org || ':' || platform_post_id || ':' || spend || ':' || coalesce(caption, '-') AS row
         FROM latest_orgs.posts_latest ORDER BY 1`,
    );
    expect(rows.map((r) => r.row)).toEqual(['acme:1:1:-', 'acme:2:3:acme only', 'globex:1:101:-']);
  });

  it("stand through an organization's rename and reset, which move and drop its partitions", async () => {
    const acme = await loaded('latest_moves', 'acme');
    const globex = await loaded('latest_moves', 'globex');
    await writeTarget(db.pool, { schema: 'latest_moves', org: 'acme' }, 'platform_post_id', {});
    await writeTarget(db.pool, { schema: 'latest_moves', org: 'globex' }, 'platform_post_id', {});
    await load(acme, W1, 'a1', [[post(1, { spend: 1 }, [{ name: 'Region', value: 'North' }])]]);
    await load(acme, W2, 'a2', [[post(1, { spend: 2 }, [{ name: 'Region', value: 'South' }])]]);
    await load(globex, W1, 'g1', [[post(1, { spend: 9 }, [{ name: 'Region', value: 'East' }])]]);
    await renameOrganization(db.pool, { schema: 'latest_moves', org: 'acme' }, 'acme2', { waitMs: 60_000 });
    await expectAsReadme('latest_moves');
    const orgs = async (): Promise<string[]> =>
      (
        await db.pool.query<{ row: string }>(
          `SELECT _org || ':' || spend AS row FROM latest_moves.posts_latest ORDER BY 1`,
        )
      ).rows.map((r) => r.row);
    expect(await orgs()).toEqual(['acme2:2', 'globex:9']);
    await withTransaction(db.pool, undefined, (client) =>
      resetTarget(client, { schema: 'latest_moves', org: 'globex' }, 'platform_post_id', {}),
    );
    await expectAsReadme('latest_moves');
    expect(await orgs()).toEqual(['acme2:2']);
  });

  it('follow posts as the loader adds a column and widens one, in the same transaction', async () => {
    const loader = await loaded('latest_columns');
    await load(loader, W1, 'r1', [[post(1, { spend: 10 })]]);
    // A field first sent now: a new column of posts, which the view shows.
    await load(loader, W2, 'r2', [[post(1, { spend: 11, caption: 'new' })]]);
    expect(await columnsOf('latest_columns.posts_latest')).toContain('caption text');
    await expectAsReadme('latest_columns');
    // A decimal in a bigint column: the widening retypes posts, which a view holding the column would refuse.
    await load(loader, W3, 'r3', [[post(1, { spend: new ExactNumber('0.10') })]]);
    expect(await columnsOf('latest_columns.posts_latest')).toContain('spend numeric');
    const spend = await db.pool.query<{ s: string }>(
      'SELECT spend::text AS s FROM latest_columns.posts_latest',
    );
    expect(spend.rows).toEqual([{ s: '0.10' }]);
    await expectAsReadme('latest_columns');
  });

  it('keep their owner and grants when a widening or a field selection makes posts_latest again', async () => {
    const loader = await loaded('latest_grants');
    await load(loader, W1, 'r1', [[post(1, { spend: 10, caption: 'a' })]]);
    const { rows } = await db.pool.query<{ db: string }>('SELECT current_database() AS db');
    const reader = pg.escapeIdentifier(`latest_reader_${rows[0]!.db}`);
    const owner = pg.escapeIdentifier(`latest_owner_${rows[0]!.db}`);
    await db.pool.query(`CREATE ROLE ${reader} NOLOGIN`);
    await db.pool.query(`CREATE ROLE ${owner} NOLOGIN`);
    const privileges = async (): Promise<unknown> =>
      (
        await db.pool.query(
          `SELECT pg_get_userbyid(relowner) = $1 AS owned, has_table_privilege($2, oid, 'SELECT') AS readable,
                  has_table_privilege($2, oid, 'INSERT') AS writable
             FROM pg_class WHERE oid = 'latest_grants.posts_latest'::regclass`,
          [`latest_owner_${rows[0]!.db}`, `latest_reader_${rows[0]!.db}`],
        )
      ).rows;
    try {
      await db.pool.query(`GRANT SELECT ON latest_grants.posts_latest TO ${reader}`);
      await db.pool.query(`ALTER VIEW latest_grants.posts_latest OWNER TO ${owner}`);
      expect(await privileges()).toEqual([{ owned: true, readable: true, writable: false }]);
      // A decimal in a bigint column: the widening drops posts_latest and makes it again.
      await load(loader, W2, 'r2', [[post(1, { spend: new ExactNumber('0.5') })]]);
      expect(await columnsOf('latest_grants.posts_latest')).toContain('spend numeric');
      expect(await privileges()).toEqual([{ owned: true, readable: true, writable: false }]);
      // A column renamed by hand: made again by dropping it, at the next run's start.
      await db.pool.query('ALTER TABLE latest_grants.posts RENAME COLUMN caption TO title');
      await migrate(db.pool, { schema: 'latest_grants', postIdField: 'platform_post_id' }, log.logger);
      expect(await columnsOf('latest_grants.posts_latest')).toContain('title text');
      expect(await privileges()).toEqual([{ owned: true, readable: true, writable: false }]);
    } finally {
      await db.pool.query('DROP SCHEMA latest_grants CASCADE');
      await db.pool.query(`DROP ROLE ${reader}`);
      await db.pool.query(`DROP ROLE ${owner}`);
    }
  });

  it('lose a column a field selection drops', async () => {
    const schema = 'latest_dropped';
    await migrate(db.pool, { schema, postIdField: 'platform_post_id' }, log.logger);
    await db.pool.query(`ALTER TABLE ${schema}.posts ADD COLUMN kept text, ADD COLUMN gone text`);
    await db.pool.query(
      `INSERT INTO ${schema}.field_columns (field, column_name) VALUES ('kept', 'kept'), ('gone', 'gone')`,
    );
    await db.pool.query(`SELECT ${schema}.post_reports_refresh_latest_views($1, 'platform_post_id')`, [
      schema,
    ]);
    expect(await columnsOf(`${schema}.posts_latest`)).toContain('gone text');
    await applyFieldSelection(
      db.pool,
      { schema, org: 'default' },
      { mode: 'include', fields: ['kept'] },
      'platform_post_id',
    );
    const columns = await columnsOf(`${schema}.posts_latest`);
    expect(columns).toContain('kept text');
    expect(columns).not.toContain('gone text');
    await expectAsReadme(schema);
  });

  it("are made again at a run's start after an operator's change by hand (view dropped, column retyped)", async () => {
    const loader = await loaded('latest_by_hand');
    await load(loader, W1, 'r1', [[post(1, { spend: 10, caption: 'a' })]]);
    // As the storage model tells an operator to widen a column.
    await db.pool.query('DROP VIEW latest_by_hand.posts_latest');
    await db.pool.query(
      'ALTER TABLE latest_by_hand.posts ALTER COLUMN caption TYPE jsonb USING to_jsonb(caption)',
    );
    // A column added by hand, while the views stand: they lack it until made again.
    await db.pool.query('ALTER TABLE latest_by_hand.posts ADD COLUMN operator_note text');
    await migrate(db.pool, { schema: 'latest_by_hand', postIdField: 'platform_post_id' }, log.logger);
    expect(await columnsOf('latest_by_hand.posts_latest')).toEqual(
      expect.arrayContaining(['caption jsonb', 'operator_note text']),
    );
    await expectAsReadme('latest_by_hand');
    // A column renamed by hand: a view keeps its old name until made again, which replacing it cannot do.
    await db.pool.query('ALTER TABLE latest_by_hand.posts RENAME COLUMN operator_note TO operator_remark');
    await migrate(db.pool, { schema: 'latest_by_hand', postIdField: 'platform_post_id' }, log.logger);
    expect(await columnsOf('latest_by_hand.posts_latest')).toContain('operator_remark text');
    await expectAsReadme('latest_by_hand');
  });

  it('quote a schema and a post id column of any name', async () => {
    const schema = 'Odd "Latest" $fn$';
    const loader = await loaded(schema, 'default', 'Brand_Post_ID');
    await load(loader, W1, 'r1', [[post(7, { spend: 1 }, [{ name: 'Region', value: 'North' }])]]);
    await load(loader, W2, 'r2', [
      [post(7, { spend: 2, caption: 'later' }, [{ name: 'Region', value: 'West' }])],
    ]);
    await expectAsReadme(schema, 'Brand_Post_ID');
    const { rows } = await db.pool.query<{ spend: string }>(
      `SELECT spend::text FROM ${pg.escapeIdentifier(schema)}.posts_latest`,
    );
    expect(rows).toEqual([{ spend: '2' }]);
  });

  it("show a role filtered by row-level security only its organization's rows (PostgreSQL 15+)", async () => {
    const acme = await loaded('latest_rls', 'acme');
    await load(acme, W1, 'a1', [[post(1, { spend: 1 }, [{ name: 'Region', value: 'North' }])]]);
    const globex = await loaded('latest_rls', 'globex');
    await load(globex, W1, 'g1', [[post(2, { spend: 2 }, [{ name: 'Region', value: 'West' }])]]);
    const { rows } = await db.pool.query<{ v: number; db: string }>(
      "SELECT current_setting('server_version_num')::int AS v, current_database() AS db",
    );
    const role = pg.escapeIdentifier(`acme_latest_${rows[0]!.db}`);
    await db.pool.query(`CREATE ROLE ${role} NOLOGIN`);
    try {
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
        // PostgreSQL 14 has no security_invoker: its views read as their owner (docs/organizations.md).
        const expected = rows[0]!.v >= 150000 ? [{ org: 'acme' }] : [{ org: 'acme' }, { org: 'globex' }];
        expect(posts.rows).toEqual(expected);
        expect(segments.rows).toEqual(expected);
      } finally {
        await client.query('RESET ROLE');
        client.release();
      }
    } finally {
      await db.pool.query(`DROP OWNED BY ${role}`);
      await db.pool.query(`DROP ROLE ${role}`);
    }
  });
});
