import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { type CliResult, runCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { snapshotSchema } from '../../helpers/reference-check.js';
import { summaryOf } from '../../helpers/summary.js';

const db = await createTestDatabase();
let sim: RunningSimulator;
const ROLE = `etl_pre_${randomBytes(4).toString('hex')}`;
const OTHER = `etl_other_${randomBytes(4).toString('hex')}`;
const PASSWORD = `pw-${randomBytes(6).toString('hex')}`;
const database = new URL(db.url).pathname.slice(1);
let roleUrl: string;
const backfill = ['backfill', '--from', '2026-02-02', '--to', '2026-02-15'];

beforeAll(async () => {
  sim = await startSimulator({ seed: 43, postsPerDay: 10 });
  // No superuser, no CREATE on the database (PostgreSQL grants PUBLIC only CONNECT and TEMPORARY).
  await db.pool.query(`CREATE ROLE ${ROLE} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD '${PASSWORD}'`);
  await db.pool.query(`CREATE ROLE ${OTHER} NOLOGIN`);
  const url = new URL(db.url);
  url.username = ROLE;
  url.password = PASSWORD;
  roleUrl = url.toString();
});
afterAll(async () => {
  await sim.close();
  await db.pool.query(`DROP SCHEMA IF EXISTS foreign_tables, not_granted CASCADE`);
  await db.pool.query(`DROP OWNED BY ${ROLE}, ${OTHER} CASCADE`);
  await db.pool.query(`DROP ROLE IF EXISTS ${ROLE}`);
  await db.pool.query(`DROP ROLE IF EXISTS ${OTHER}`);
});

async function schemaExists(schema: string): Promise<boolean> {
  const { rows } = await db.pool.query('SELECT to_regnamespace($1) IS NOT NULL AS exists', [schema]);
  return rows[0]?.exists === true;
}

/** Report creations the simulator has answered so far. */
function creations(): number {
  return sim.stats().byRoute['POST /reports/posts'] ?? 0;
}

/** Exit 2 with one line on stderr, the code in the summary, and the line containing every `parts`. */
function refusedWith(result: CliResult, code: string, parts: readonly string[]): void {
  expect(result.code, result.stderr).toBe(2);
  expect(summaryOf(result)).toMatchObject({ status: 'invalid', exitCode: 2, error: { code } });
  const lines = result.stderr.split('\n').filter((line) => line.startsWith('post-reports-etl: '));
  expect(lines, result.stderr).toHaveLength(1);
  for (const part of parts) expect(lines[0]).toContain(part);
}

describe('preflight: checked before any report is created and anything is written (the built CLI)', () => {
  it('a token the API rejects: exit 2, one line, no schema and no report', async () => {
    const before = creations();
    const result = await runCli(backfill, {
      ...cliEnv(sim, db.url, { POST_REPORTS_SCHEMA: 'bad_token' }),
      POST_REPORTS_TOKEN: 'not-the-token',
    });
    refusedWith(result, 'TOKEN_REJECTED', [
      'GET /reports/posts/dimensions answered 401',
      'the API rejected the token (POST_REPORTS_TOKEN)',
    ]);
    expect(result.stderr).not.toContain('not-the-token');
    expect(await schemaExists('bad_token')).toBe(false);
    expect(creations()).toBe(before);
  });

  it('a role without CREATE on the database, for a schema that does not exist: exit 2, nothing created', async () => {
    const before = creations();
    const result = await runCli(backfill, cliEnv(sim, roleUrl, { POST_REPORTS_SCHEMA: 'not_created' }));
    refusedWith(result, 'DB_PRIVILEGE_MISSING', [
      `role "${ROLE}" lacks CREATE on database "${database}"`,
      'schema "not_created"',
    ]);
    expect(await schemaExists('not_created')).toBe(false);
    expect(creations()).toBe(before);
  });

  it('a schema the role may use but not create in: exit 2, naming the privilege', async () => {
    await db.pool.query(`CREATE SCHEMA not_granted AUTHORIZATION ${OTHER}`);
    await db.pool.query(`GRANT USAGE ON SCHEMA not_granted TO ${ROLE}`);
    const before = creations();
    const snapshot = await snapshotSchema(db.pool, 'not_granted');
    const result = await runCli(backfill, cliEnv(sim, roleUrl, { POST_REPORTS_SCHEMA: 'not_granted' }));
    refusedWith(result, 'DB_PRIVILEGE_MISSING', [`role "${ROLE}" lacks CREATE on schema "not_granted"`]);
    expect(await snapshotSchema(db.pool, 'not_granted')).toBe(snapshot);
    expect(creations()).toBe(before);
  });

  it('tables of the schema owned by another role: exit 2 naming the table and its owner, before any report', async () => {
    // The role owns the schema, but an administrator ran the migrations: the tables are theirs.
    await db.pool.query(`CREATE SCHEMA foreign_tables AUTHORIZATION ${ROLE}`);
    const migrated = await runCli(
      ['migrate'],
      cliEnv(sim, db.url, { POST_REPORTS_SCHEMA: 'foreign_tables' }),
    );
    expect(migrated.code, migrated.stderr).toBe(0);
    const before = creations();
    const snapshot = await snapshotSchema(db.pool, 'foreign_tables');
    const result = await runCli(backfill, cliEnv(sim, roleUrl, { POST_REPORTS_SCHEMA: 'foreign_tables' }));
    refusedWith(result, 'DB_PRIVILEGE_MISSING', [
      `role "${ROLE}" does not own table "foreign_tables"."field_columns"`,
      `owned by "${decodeURIComponent(new URL(db.url).username)}"`,
    ]);
    expect(await snapshotSchema(db.pool, 'foreign_tables')).toBe(snapshot);
    expect(creations()).toBe(before);

    // Given the tables but not the latest views (made again when posts gains a column, which needs their owner):
    // refused before any report, naming a view.
    const owned = async (kinds: string): Promise<void> => {
      const { rows } = await db.pool.query<{ name: string }>(
        `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = 'foreign_tables' AND c.relkind = ANY($1::"char"[])`,
        [kinds.split('')],
      );
      for (const { name } of rows) await db.pool.query(`ALTER TABLE foreign_tables.${name} OWNER TO ${ROLE}`);
    };
    await owned('rp');
    const views = await runCli(backfill, cliEnv(sim, roleUrl, { POST_REPORTS_SCHEMA: 'foreign_tables' }));
    refusedWith(views, 'DB_PRIVILEGE_MISSING', [
      `role "${ROLE}" does not own view "foreign_tables"."post_custom_segments_latest"`,
      'ALTER VIEW',
    ]);
    expect(creations()).toBe(before);
    // Given the views, but not the right to execute the functions that make them (a database whose functions are
    // not executable by PUBLIC): refused, naming one.
    await owned('v');
    await db.pool.query('REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA foreign_tables FROM PUBLIC');
    const functions = await runCli(backfill, cliEnv(sim, roleUrl, { POST_REPORTS_SCHEMA: 'foreign_tables' }));
    refusedWith(functions, 'DB_PRIVILEGE_MISSING', [
      `role "${ROLE}" may not execute function "foreign_tables".post_reports_`,
      'GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA',
    ]);
    expect(creations()).toBe(before);
    // Given those too, the same role loads.
    await db.pool.query(`GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA foreign_tables TO ${ROLE}`);
    const loaded = await runCli(backfill, cliEnv(sim, roleUrl, { POST_REPORTS_SCHEMA: 'foreign_tables' }));
    expect(loaded.code, loaded.stderr).toBe(0);
  });
});
