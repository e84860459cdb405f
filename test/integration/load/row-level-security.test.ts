import { readFileSync } from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Loader } from '../../../src/load/loader.js';
import { migrate } from '../../../src/load/migrate.js';
import { evolvePosts } from '../../../src/load/schema-evolution.js';
import { writeTarget } from '../../../src/load/window-state.js';
import { createTestDatabase } from '../../helpers/database.js';
import { captureLogger, load, post, stageAll, target } from './load-fixtures.js';

const GUIDE = readFileSync(new URL('../../../docs/organizations.md', import.meta.url), 'utf8');

/** The body of the guide's fenced sql block that follows its `<!-- row-level-security: … -->` marker. */
function guideBlock(marker: string): string {
  const at = GUIDE.indexOf(`<!-- row-level-security: ${marker} -->\n\`\`\`sql\n`);
  expect(at, marker).toBeGreaterThan(-1);
  const open = GUIDE.indexOf('```sql\n', at) + '```sql\n'.length;
  return GUIDE.slice(open, GUIDE.indexOf('\n```', open));
}

const db = await createTestDatabase();
const SCHEMA = pg.escapeIdentifier(target.schema);
/** A window of globex's staged and not committed. */
const STAGED = { start: '2026-04-06', end: '2026-04-12' };

/** The guide's role names: roles belong to the whole server, so each gets this database's name as a suffix. */
const GUIDE_ROLES = ['acme_reader', 'globex_reader', 'post_reports_reader'] as const;
let suffix = '';
/** A role of the guide by its name there, as this file created it. */
const role = (name: string) => `${name}_${suffix}`;
/** The tables' owner, as the connector's role is: not a superuser. */
const owner = () => role('owner');
/** A member of acme_reader, as a person granted it. */
const member = () => role('alice');

/** A statement of the guide with its role names made this file's. */
function withOwnRoles(sql: string): string {
  return sql.replace(new RegExp(`\\b(${GUIDE_ROLES.join('|')})\\b`, 'g'), (name) => role(name));
}

beforeAll(async () => {
  await migrate(db.pool, target, captureLogger().logger);
  const found = await db.pool.query<{ name: string }>('SELECT current_database() AS name');
  suffix = found.rows[0]!.name;

  // Two organizations' rows in both tables, loaded by the connector into the partitions it makes, and a window of
  // globex's staged, not committed: its stage holds its rows.
  for (const org of ['acme', 'globex'])
    await writeTarget(db.pool, { schema: target.schema, org }, target.postIdField, {});
  const acme = new Loader(db.pool, { ...target, org: 'acme' }, captureLogger().logger);
  const globex = new Loader(db.pool, { ...target, org: 'globex' }, captureLogger().logger);
  const region = (value: string) => [{ name: 'Region', value }];
  await load(acme, { start: '2026-03-02', end: '2026-03-08' }, 'r1', [
    [post(1, {}, region('North')), post(2)],
  ]);
  await load(acme, { start: '2026-03-09', end: '2026-03-15' }, 'r2', [[post(3, {}, region('South'))]]);
  await load(globex, { start: '2026-03-02', end: '2026-03-08' }, 'r3', [
    [post(1, {}, region('East')), post(4, {}, [...region('West'), { name: 'Tier', value: 'Gold' }])],
  ]);
  await stageAll(globex, STAGED, 'r5', [[post(6, {}, region('North'))]]);

  // The connector's role owns the tables and its latest views (a superuser is never filtered, so the owner must not
  // be one).
  await db.pool.query(`CREATE ROLE ${pg.escapeIdentifier(owner())} NOLOGIN`);
  await db.pool.query(`GRANT USAGE ON SCHEMA ${SCHEMA} TO ${pg.escapeIdentifier(owner())}`);
  for (const table of ['posts', 'post_custom_segments', 'posts_latest', 'post_custom_segments_latest']) {
    await db.pool.query(
      `ALTER TABLE ${SCHEMA}.${pg.escapeIdentifier(table)} OWNER TO ${pg.escapeIdentifier(owner())}`,
    );
  }

  // Exactly the guide's statements, as a superuser: enable, a role per organization (acme's, then globex's as
  // the guide says: the same with its id), and the setting's role.
  await db.pool.query(withOwnRoles(guideBlock('enable')));
  const perOrganization = guideBlock('per-organization');
  await db.pool.query(withOwnRoles(perOrganization));
  await db.pool.query(withOwnRoles(perOrganization.replaceAll('acme', 'globex')));
  const latestViews = guideBlock('latest views');
  await db.pool.query(withOwnRoles(latestViews));
  await db.pool.query(withOwnRoles(latestViews.replaceAll('acme', 'globex')));
  await db.pool.query(withOwnRoles(guideBlock('by-setting')));
  await db.pool.query(`CREATE ROLE ${pg.escapeIdentifier(member())} NOLOGIN`);
  await db.pool.query(
    `GRANT ${pg.escapeIdentifier(role('acme_reader'))} TO ${pg.escapeIdentifier(member())}`,
  );
});

afterAll(async () => {
  // Roles outlive the database: their grants and policies go first, then the roles.
  const roles = [...GUIDE_ROLES, 'owner', 'alice'].map((name) => pg.escapeIdentifier(role(name)));
  if (suffix === '') return;
  await db.pool.query(`DROP OWNED BY ${roles.join(', ')}`);
  for (const name of roles) await db.pool.query(`DROP ROLE IF EXISTS ${name}`);
});

/**
 * Runs `work` in a transaction as `name` (a role of this file), then rolls it back. `grant`: statements run first,
 * as a superuser, in the same transaction.
 */
async function as<T>(name: string, work: (client: pg.PoolClient) => Promise<T>, grant = ''): Promise<T> {
  const client = await db.pool.connect();
  try {
    await client.query('BEGIN');
    if (grant !== '') await client.query(grant);
    await client.query(`SET LOCAL ROLE ${pg.escapeIdentifier(name)}`);
    return await work(client);
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
}

interface Seen {
  readonly posts: string[];
  readonly segments: string[];
}

/** Every row of both tables the session reads through the parents, as `org:id` (and `:value` for segments), sorted. */
async function seen(client: pg.ClientBase): Promise<Seen> {
  const posts = await client.query<{ row: string }>(
    `SELECT _org || ':' || platform_post_id AS row FROM ${SCHEMA}.posts`,
  );
  const segments = await client.query<{ row: string }>(
    `SELECT _org || ':' || platform_post_id || ':' || value AS row FROM ${SCHEMA}.post_custom_segments`,
  );
  // Sorted here: code-unit order, whatever the database's collation.
  return { posts: posts.rows.map((r) => r.row).sort(), segments: segments.rows.map((r) => r.row).sort() };
}

const ACME: Seen = { posts: ['acme:1', 'acme:2', 'acme:3'], segments: ['acme:1:North', 'acme:3:South'] };
const GLOBEX: Seen = {
  posts: ['globex:1', 'globex:4'],
  segments: ['globex:1:East', 'globex:4:Gold', 'globex:4:West'],
};
const NOTHING: Seen = { posts: [], segments: [] };

/** The SQLSTATE of what `query` throws as `name`; null when it succeeds. */
async function refusal(name: string, query: string): Promise<string | null> {
  return as(name, async (client) => {
    try {
      await client.query(query);
      return null;
    } catch (error) {
      return (error as { code?: string }).code ?? String(error);
    }
  });
}

describe("docs/organizations.md's row-level security, as written there", () => {
  it('a role per organization reads its organization’s rows of both tables, and no other', async () => {
    expect(await as(role('acme_reader'), seen)).toEqual(ACME);
    expect(await as(role('globex_reader'), seen)).toEqual(GLOBEX);
  });

  it('a role per organization reads its organization’s latest rows through the views (PostgreSQL 15+)', async () => {
    const latest = async (client: pg.ClientBase): Promise<Seen> => {
      const posts = await client.query<{ row: string }>(
        `SELECT _org || ':' || platform_post_id AS row FROM ${SCHEMA}.posts_latest`,
      );
      const segments = await client.query<{ row: string }>(
        `SELECT _org || ':' || platform_post_id || ':' || value AS row FROM ${SCHEMA}.post_custom_segments_latest`,
      );
      return { posts: posts.rows.map((r) => r.row).sort(), segments: segments.rows.map((r) => r.row).sort() };
    };
    const version = await db.pool.query<{ v: number }>(
      "SELECT current_setting('server_version_num')::int AS v",
    );
    // Every post of these rows is in one window only: its latest rows are all its rows. On 14 the views read as
    // their owner, unfiltered, which is why the guide grants them on 15 or later only.
    const acme =
      version.rows[0]!.v >= 150000
        ? ACME
        : { posts: [...ACME.posts, ...GLOBEX.posts], segments: [...ACME.segments, ...GLOBEX.segments] };
    expect(await as(role('acme_reader'), latest)).toEqual(acme);
    if (version.rows[0]!.v >= 150000) expect(await as(role('globex_reader'), latest)).toEqual(GLOBEX);
  });

  it('a member of the role reads as the role', async () => {
    expect(await as(member(), seen)).toEqual(ACME);
  });

  it('a partition read by its own name is refused: readers have no privilege on any partition', async () => {
    const denied = '42501';
    expect(await refusal(role('acme_reader'), `SELECT 1 FROM ${SCHEMA}.posts_o1_y2026`)).toBe(denied);
    expect(await refusal(role('acme_reader'), `SELECT 1 FROM ${SCHEMA}.posts_o2_y2026`)).toBe(denied);
    expect(
      await refusal(role('globex_reader'), `SELECT 1 FROM ${SCHEMA}.post_custom_segments_o1_y2026`),
    ).toBe(denied);
    expect(await refusal(role('post_reports_reader'), `SELECT 1 FROM ${SCHEMA}.posts_o1_y2026`)).toBe(denied);
  });

  it('readers get none of the state tables', async () => {
    expect(await refusal(role('acme_reader'), `SELECT 1 FROM ${SCHEMA}.report_windows`)).toBe('42501');
    expect(await refusal(role('acme_reader'), `SELECT 1 FROM ${SCHEMA}.sync_state`)).toBe('42501');
  });

  it('the setting’s role reads the organization the transaction sets, and no row without it', async () => {
    // The guide's query block, run as it is: its SELECT's rows are what the application gets.
    const client = await db.pool.connect();
    try {
      const results = (await client.query(
        withOwnRoles(guideBlock('by-setting, a query')),
      )) as unknown as pg.QueryResult<{ _org: string; posts: string }>[];
      const select = results.find((r) => r.command === 'SELECT');
      expect(select?.rows).toEqual([{ _org: 'acme', posts: '3' }]);
    } finally {
      client.release();
    }
    expect(
      await as(role('post_reports_reader'), async (client) => {
        await client.query("SELECT set_config('post_reports.organization', $1, true)", ['globex']);
        return seen(client);
      }),
    ).toEqual(GLOBEX);
    expect(await as(role('post_reports_reader'), seen)).toEqual(NOTHING);
  });

  it('the owner (the connector’s role) reads every row and still writes through the parents', async () => {
    const all: Seen = {
      posts: [...ACME.posts, ...GLOBEX.posts],
      segments: [...ACME.segments, ...GLOBEX.segments],
    };
    expect(await as(owner(), seen)).toEqual(all);
    // A window's replace, as the commit does it: its rows deleted and inserted again, under every policy.
    const replaced = await as(owner(), async (client) => {
      const deleted = await client.query(
        `DELETE FROM ${SCHEMA}.posts WHERE _org = $1 AND _window_start = ANY($2::date[])`,
        ['globex', ['2026-03-02']],
      );
      const inserted = await client.query(
        `INSERT INTO ${SCHEMA}.posts (_org, platform_post_id, _window_start, _window_end, _report_id)
         VALUES ('globex', 5, '2026-03-02', '2026-03-08', 'r4')`,
      );
      return { deleted: deleted.rowCount, inserted: inserted.rowCount, after: await seen(client) };
    });
    expect(replaced).toEqual({
      deleted: 2,
      inserted: 1,
      after: { posts: [...ACME.posts, 'globex:5'], segments: all.segments },
    });
  });
});

/** How many rows each table gives read by its own name, by table. */
async function readByName(client: pg.ClientBase, tables: readonly string[]): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const table of tables) {
    const { rows } = await client.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${SCHEMA}.${pg.escapeIdentifier(table)}`,
    );
    counts[table] = rows[0]!.n;
  }
  return counts;
}

/** The partitions of both parents and the stages of windows in progress, as the connector made them. */
async function connectorTables(): Promise<string[]> {
  const { rows } = await db.pool.query<{ name: string }>(
    `SELECT c.relname::text AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent IN (${pg.escapeLiteral(`${target.schema}.posts`)}::regclass,
                            ${pg.escapeLiteral(`${target.schema}.post_custom_segments`)}::regclass)
     UNION SELECT stage_posts FROM ${SCHEMA}.stage_progress UNION SELECT stage_segments FROM ${SCHEMA}.stage_progress
     ORDER BY 1`,
  );
  return rows.map((r) => r.name);
}

const BROAD_GRANT = () =>
  `GRANT SELECT ON ALL TABLES IN SCHEMA ${SCHEMA} TO ${pg.escapeIdentifier(role('acme_reader'))}`;

describe('row-level security on every partition and stage the connector makes', () => {
  it('a reader granted SELECT ON ALL TABLES IN SCHEMA still reads one organization only', async () => {
    const tables = await connectorTables();
    // Both organizations' partitions of both parents, and the stage of globex's window in progress, named from
    // the keys the schema gave acme (o1) and globex (o2) as they first loaded.
    expect(tables).toEqual([
      'post_custom_segments_o1_y2026',
      'post_custom_segments_o2_y2026',
      'posts_o1_y2026',
      'posts_o2_y2026',
      'stage_o2_20260406_20260412_posts',
      'stage_o2_20260406_20260412_segments',
    ]);
    const read = await as(
      role('acme_reader'),
      async (client) => ({ parents: await seen(client), byName: await readByName(client, tables) }),
      BROAD_GRANT(),
    );
    expect(read).toEqual({
      parents: ACME,
      byName: Object.fromEntries(tables.map((table) => [table, 0])),
    });
  });

  it('a table made after default privileges were set is made with row-level security too', async () => {
    const reader = pg.escapeIdentifier(role('acme_reader'));
    await db.pool.query(`ALTER DEFAULT PRIVILEGES IN SCHEMA ${SCHEMA} GRANT SELECT ON TABLES TO ${reader}`);
    try {
      // A window of a year globex has no partition of: its stage is the partition to be.
      const globex = new Loader(db.pool, { ...target, org: 'globex' }, captureLogger().logger);
      await stageAll(globex, { start: '2025-06-02', end: '2025-06-08' }, 'r6', [[post(7)]]);
    } finally {
      await db.pool.query(
        `ALTER DEFAULT PRIVILEGES IN SCHEMA ${SCHEMA} REVOKE SELECT ON TABLES FROM ${reader}`,
      );
    }
    const stages = ['stage_o2_20250602_20250608_posts', 'stage_o2_20250602_20250608_segments'];
    expect(await connectorTables()).toEqual(expect.arrayContaining(stages));
    // Granted by the default privileges alone, and no row read.
    expect(await as(role('acme_reader'), (client) => readByName(client, stages))).toEqual({
      [stages[0]!]: 0,
      [stages[1]!]: 0,
    });
  });

  it('a widening keeps it on every partition it makes again', async () => {
    const { logger } = captureLogger();
    await evolvePosts(db.pool, target, logger, [{ field: 'w_count', action: 'add', type: 'bigint' }]);
    await evolvePosts(db.pool, target, logger, [{ field: 'w_count', action: 'widen', type: 'numeric' }]);
    const { rows } = await db.pool.query<{ name: string; rls: boolean }>(
      `SELECT c.relname::text AS name, c.relrowsecurity AS rls FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = ${pg.escapeLiteral(`${target.schema}.posts`)}::regclass ORDER BY 1`,
    );
    expect(rows).toEqual([
      { name: 'posts_o1_y2026', rls: true },
      { name: 'posts_o2_y2026', rls: true },
    ]);
    const tables = await connectorTables();
    expect(
      await as(
        role('acme_reader'),
        async (client) => ({ parents: await seen(client), byName: await readByName(client, tables) }),
        BROAD_GRANT(),
      ),
    ).toEqual({ parents: ACME, byName: Object.fromEntries(tables.map((table) => [table, 0])) });
  });

  it('a view reads as its invoker with security_invoker, and as its owner without', async () => {
    const reader = pg.escapeIdentifier(role('acme_reader'));
    const views = await as(
      role('acme_reader'),
      async (client) => {
        const count = async (view: string) =>
          (
            await client.query<{ orgs: string[] }>(
              `SELECT array_agg(DISTINCT _org ORDER BY _org) AS orgs FROM ${SCHEMA}.${view}`,
            )
          ).rows[0]!.orgs;
        return { invoker: await count('posts_invoker'), owner: await count('posts_owner') };
      },
      // As the guide says: a view of the tables' owner, with and without security_invoker.
      `GRANT CREATE ON SCHEMA ${SCHEMA} TO ${pg.escapeIdentifier(owner())};
       SET LOCAL ROLE ${pg.escapeIdentifier(owner())};
       CREATE VIEW ${SCHEMA}.posts_invoker WITH (security_invoker = true) AS SELECT * FROM ${SCHEMA}.posts;
       CREATE VIEW ${SCHEMA}.posts_owner AS SELECT * FROM ${SCHEMA}.posts;
       GRANT SELECT ON ${SCHEMA}.posts_invoker, ${SCHEMA}.posts_owner TO ${reader};
       RESET ROLE;`,
    );
    expect(views).toEqual({ invoker: ['acme'], owner: ['acme', 'globex'] });
  });
});
