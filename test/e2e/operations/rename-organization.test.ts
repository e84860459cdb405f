import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { runCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { compareWithReference } from '../../helpers/reference-check.js';

const db = await createTestDatabase();
let sim: RunningSimulator;

beforeAll(async () => {
  sim = await startSimulator({ seed: 91, postsPerDay: 20 });
});
afterAll(async () => {
  await sim.close();
});

const SCHEMA = 'renamed';
const RANGE = { from: '2026-04-06', to: '2026-04-26' };
const backfill = (...extra: string[]) => [
  'backfill',
  '--from',
  RANGE.from,
  '--to',
  RANGE.to,
  '--schema',
  SCHEMA,
  ...extra,
];

async function partitions(): Promise<string[]> {
  const { rows } = await db.pool.query<{ name: string }>(
    `SELECT c.relname::text AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent IN ('${SCHEMA}.posts'::regclass, '${SCHEMA}.post_custom_segments'::regclass) ORDER BY 1`,
  );
  return rows.map((r) => r.name);
}

describe('rename-organization', () => {
  it("moves a schema's rows and state from default to a named organization, asking the API nothing", async () => {
    const first = await runCli(backfill(), cliEnv(sim, db.url));
    expect(first.code, first.stderr).toBe(0);
    const reference = sim.referencePosts({ start_date: RANGE.from, end_date: RANGE.to });
    const requests = sim.stats().requests;

    const renamed = await runCli(
      ['rename-organization', '--from', 'default', '--to', 'acme', '--schema', SCHEMA],
      cliEnv(sim, db.url),
    );
    expect(renamed.code, renamed.stderr).toBe(0);
    expect(renamed.summary).toMatchObject({
      command: 'rename-organization',
      status: 'succeeded',
      from: 'default',
      to: 'acme',
      windows: 3,
      posts: reference.length,
      partitions: 2,
    });
    expect(sim.stats().requests).toBe(requests);
    // The rows moved to partitions of the new id, named from the key the schema gave it: the default
    // organization's (which named none) are gone.
    expect(await partitions()).toEqual(['post_custom_segments_o1_y2026', 'posts_o1_y2026']);
    const orgs = await db.pool.query(
      `SELECT (SELECT array_agg(DISTINCT _org) FROM ${SCHEMA}.posts) AS posts,
              (SELECT array_agg(DISTINCT org) FROM ${SCHEMA}.report_windows) AS windows,
              (SELECT array_agg(org) FROM ${SCHEMA}.sync_state) AS targets`,
    );
    expect(orgs.rows[0]).toEqual({ posts: ['acme'], windows: ['acme'], targets: ['acme'] });
    expect(
      (await compareWithReference(db.pool, SCHEMA, reference, 'platform_post_id', 'acme')).problems,
    ).toEqual([]);

    // The organization's runs find its windows loaded; the default organization starts from nothing.
    const again = await runCli(backfill('--organization', 'acme'), cliEnv(sim, db.url));
    expect(again.code, again.stderr).toBe(0);
    expect(again.summary).toMatchObject({ windows: { planned: 0, skipped: 3 }, reportsCreated: 0 });
    // The schema holds the default organization no more: its status names the one it holds.
    const status = await runCli(['status', '--schema', SCHEMA, '--json'], cliEnv(sim, db.url));
    expect(status.code).toBe(2);
    expect(JSON.parse(status.stdout)).toMatchObject({
      error: {
        code: 'CONFIG_INVALID',
        message: `organization "default" has nothing in schema "${SCHEMA}", which holds acme: check POST_REPORTS_ORGANIZATION (--organization)`,
      },
    });
  });

  it('refuses an id in use, or one that is not an id, in one line naming it, and changes nothing', async () => {
    const before = await db.pool.query(`SELECT count(*)::int AS n FROM ${SCHEMA}.posts WHERE _org = 'acme'`);
    const taken = await runCli(backfill('--organization', 'globex'), cliEnv(sim, db.url));
    expect(taken.code, taken.stderr).toBe(0);
    const refused = await runCli(
      ['rename-organization', '--from', 'acme', '--to', 'globex', '--schema', SCHEMA],
      cliEnv(sim, db.url),
    );
    expect(refused.code).toBe(2);
    expect(refused.stderr.trim().split('\n')).toEqual([
      'post-reports-etl: error: organization "globex" of schema "renamed" already holds rows or state: rename to an organization id not in use',
    ]);
    const invalid = await runCli(
      ['rename-organization', '--from', 'acme', '--to', 'Globex Inc', '--schema', SCHEMA],
      cliEnv(sim, db.url),
    );
    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toContain(
      '--to must be an organization id of 1-64 letters, digits, -, _ or ., got "Globex Inc"',
    );
    const after = await db.pool.query(`SELECT count(*)::int AS n FROM ${SCHEMA}.posts WHERE _org = 'acme'`);
    expect(after.rows).toEqual(before.rows);
    // Each organization's status, one JSON line each.
    const status = await runCli(
      ['status', '--schema', SCHEMA, '--all-organizations', '--json'],
      cliEnv(sim, db.url),
    );
    expect(status.code, status.stderr).toBe(0);
    const lines = status.stdout
      .trim()
      .split('\n')
      .map(
        (line) => JSON.parse(line) as { organization: string; windows: { loaded: number }; posts: number },
      );
    expect(lines.map((l) => [l.organization, l.windows.loaded, l.posts])).toEqual([
      ['acme', 3, before.rows[0].n],
      ['globex', 3, before.rows[0].n],
    ]);
    // And what a backfill of each would do, a line per window naming its organization.
    const plan = await runCli(
      ['plan', '--from', RANGE.from, '--to', RANGE.to, '--schema', SCHEMA, '--all-organizations', '--json'],
      cliEnv(sim, db.url),
    );
    expect(plan.code, plan.stderr).toBe(0);
    const planned = plan.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { organization: string; state: string; load: boolean });
    expect(planned.map((w) => [w.organization, w.state, w.load])).toEqual([
      ['acme', 'loaded', false],
      ['acme', 'loaded', false],
      ['acme', 'loaded', false],
      ['globex', 'loaded', false],
      ['globex', 'loaded', false],
      ['globex', 'loaded', false],
    ]);
  });

  it('a rename cut short: a run of either id is refused in one line until the rename is run again', async () => {
    const schema = 'renamed_cut';
    const range = ['--from', '2026-03-23', '--to', '2026-04-12', '--schema', schema];
    const loaded = await runCli(['backfill', ...range, '--organization', 'initech'], cliEnv(sim, db.url));
    expect(loaded.code, loaded.stderr).toBe(0);
    // April's rows held by another transaction: the rename moves March, then waits for April past its lock timeout,
    // and gives up (no wait for the database's faults), cut short.
    const blocker = await db.pool.connect();
    const rename = ['rename-organization', '--from', 'initech', '--to', 'Initech-EMEA', '--schema', schema];
    try {
      await blocker.query('BEGIN');
      await blocker.query(`SELECT 1 FROM ${schema}.posts WHERE _window_start = '2026-04-06' FOR UPDATE`);
      const cut = await runCli(
        rename,
        cliEnv(sim, db.url, {
          POST_REPORTS_LOCK_TIMEOUT_MS: '300',
          POST_REPORTS_RECONNECT_WAIT_MS: '0',
          POST_REPORTS_LOCK_WAIT_MS: '0',
        }),
      );
      expect(cut.code, cut.stderr).not.toBe(0);
    } finally {
      await blocker.query('ROLLBACK');
      blocker.release();
    }
    const orgs = await db.pool.query<{ org: string }>(
      `SELECT DISTINCT _org AS org FROM ${schema}.posts ORDER BY 1`,
    );
    expect(orgs.rows.map((r) => r.org)).toEqual(['Initech-EMEA', 'initech']);
    const before = await db.pool.query(`SELECT count(*)::int AS n FROM ${schema}.posts`);
    for (const org of ['initech', 'Initech-EMEA']) {
      const refused = await runCli(['backfill', ...range, '--organization', org], cliEnv(sim, db.url));
      expect(refused.code, refused.stderr).toBe(2);
      expect(refused.stderr).toContain(
        `is part of a rename cut short, from "initech" to "Initech-EMEA": finish it first (rename-organization --from initech --to Initech-EMEA), then run again`,
      );
    }
    expect((await db.pool.query(`SELECT count(*)::int AS n FROM ${schema}.posts`)).rows).toEqual(before.rows);
    const finished = await runCli(rename, cliEnv(sim, db.url));
    expect(finished.code, finished.stderr).toBe(0);
    const again = await runCli(['backfill', ...range, '--organization', 'Initech-EMEA'], cliEnv(sim, db.url));
    expect(again.code, again.stderr).toBe(0);
    expect(again.summary).toMatchObject({ windows: { loaded: 0 } });
    const reference = sim.referencePosts({ start_date: '2026-03-23', end_date: '2026-04-12' });
    const check = await compareWithReference(db.pool, schema, reference, 'platform_post_id', 'Initech-EMEA');
    expect(check.problems).toEqual([]);
  });
});
