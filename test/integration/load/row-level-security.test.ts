import { readFileSync } from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../../src/load/migrate.js';
import { createTestDatabase } from '../../helpers/database.js';
import { captureLogger, target } from './load-fixtures.js';

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

  // Two organizations' rows in both tables, through the parents, into partitions named as the loader names them.
  for (const org of ['acme', 'globex']) {
    for (const table of ['posts', 'post_custom_segments']) {
      await db.pool.query(
        `CREATE TABLE ${SCHEMA}.${pg.escapeIdentifier(`${table}_${org}_y2026`)}
           PARTITION OF ${SCHEMA}.${pg.escapeIdentifier(table)}
           FOR VALUES FROM (${pg.escapeLiteral(org)}, '2026-01-01') TO (${pg.escapeLiteral(org)}, '2027-01-01')`,
      );
    }
  }
  await db.pool.query(
    `INSERT INTO ${SCHEMA}.posts (_org, platform_post_id, _window_start, _window_end, _report_id)
     VALUES ('acme', 1, '2026-03-02', '2026-03-08', 'r1'), ('acme', 2, '2026-03-02', '2026-03-08', 'r1'),
            ('acme', 3, '2026-03-09', '2026-03-15', 'r2'),
            ('globex', 1, '2026-03-02', '2026-03-08', 'r3'), ('globex', 4, '2026-03-02', '2026-03-08', 'r3')`,
  );
  await db.pool.query(
    `INSERT INTO ${SCHEMA}.post_custom_segments (_org, platform_post_id, _window_start, name, value)
     VALUES ('acme', 1, '2026-03-02', 'Region', 'North'), ('acme', 3, '2026-03-09', 'Region', 'South'),
            ('globex', 1, '2026-03-02', 'Region', 'East'), ('globex', 4, '2026-03-02', 'Region', 'West'),
            ('globex', 4, '2026-03-02', 'Tier', 'Gold')`,
  );

  // The connector's role owns the tables (a superuser is never filtered, so the owner must not be one).
  await db.pool.query(`CREATE ROLE ${pg.escapeIdentifier(owner())} NOLOGIN`);
  await db.pool.query(`GRANT USAGE ON SCHEMA ${SCHEMA} TO ${pg.escapeIdentifier(owner())}`);
  for (const table of ['posts', 'post_custom_segments']) {
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

/** Runs `work` in a transaction as `name` (a role of this file), then rolls it back. */
async function as<T>(name: string, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await db.pool.connect();
  try {
    await client.query('BEGIN');
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

  it('a member of the role reads as the role', async () => {
    expect(await as(member(), seen)).toEqual(ACME);
  });

  it('a partition read by its own name is refused: readers have no privilege on any partition', async () => {
    const denied = '42501';
    expect(await refusal(role('acme_reader'), `SELECT 1 FROM ${SCHEMA}.posts_acme_y2026`)).toBe(denied);
    expect(await refusal(role('acme_reader'), `SELECT 1 FROM ${SCHEMA}.posts_globex_y2026`)).toBe(denied);
    expect(
      await refusal(role('globex_reader'), `SELECT 1 FROM ${SCHEMA}.post_custom_segments_acme_y2026`),
    ).toBe(denied);
    expect(await refusal(role('post_reports_reader'), `SELECT 1 FROM ${SCHEMA}.posts_acme_y2026`)).toBe(
      denied,
    );
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
