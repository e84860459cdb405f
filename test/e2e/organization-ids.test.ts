import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../src/simulator/server.js';
import { runCli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/database.js';
import { cliEnv } from '../helpers/e2e-env.js';
import { compareWithReference } from '../helpers/reference-check.js';

const db = await createTestDatabase();
let sim: RunningSimulator;

const SCHEMA = 'ids';
const FROM = '2026-05-04';
const TO = '2026-05-24';

/** Ids as other systems name organizations. Seeds 97 apart: the API serves both the same post ids. */
const ORGS = [
  { org: 'acme-emea', token: 'token-emea', seed: 3 },
  { org: '3f2a9c1e-8b7d-4e2f-9a6b-1c2d3e4f5a6b', token: 'token-uuid', seed: 100 },
] as const;
type Org = { readonly org: string; readonly token: string };

beforeAll(async () => {
  sim = await startSimulator({
    seed: 61,
    organizations: ORGS.map(({ token, seed }) => ({ token, seed, postsPerDay: 10 })),
  });
});
afterAll(async () => {
  await sim.close();
});

function env(o: Org): Record<string, string> {
  return {
    ...cliEnv(sim, db.url),
    POST_REPORTS_TOKEN: o.token,
    POST_REPORTS_ORGANIZATION: o.org,
    POST_REPORTS_LOCK_WAIT_MS: '60000',
  };
}

const backfill = (o: Org, ...extra: string[]) =>
  runCli(['backfill', '--from', FROM, '--to', TO, '--schema', SCHEMA, ...extra], env(o));

async function problems(o: Org, org = o.org): Promise<string[]> {
  const truth = sim.referencePosts({ start_date: FROM, end_date: TO }, o.token);
  return (await compareWithReference(db.pool, SCHEMA, truth, 'platform_post_id', org)).problems;
}

/** Every table of the schema made for an organization: its partitions and stages. */
async function tables(): Promise<string[]> {
  const { rows } = await db.pool.query<{ name: string }>(
    `SELECT relname::text AS name FROM pg_class
      WHERE relnamespace = $1::regnamespace AND relkind = 'r' AND relname ~ '^(posts_|post_custom_segments_|stage_[^p])'
      ORDER BY 1`,
    [SCHEMA],
  );
  return rows.map((r) => r.name);
}

describe('organization ids as other systems name them', () => {
  it('a UUID and acme-emea load exact side by side, stored as given, their tables named from keys', async () => {
    const runs = await Promise.all(ORGS.map((o) => backfill(o)));
    for (const [i, o] of ORGS.entries()) {
      expect(runs[i]!.code, `${o.org}: ${runs[i]!.stderr.slice(-2000)}`).toBe(0);
      expect(await problems(o), o.org).toEqual([]);
    }
    const { rows } = await db.pool.query<{ org: string }>(
      `SELECT DISTINCT _org AS org FROM ${SCHEMA}.posts ORDER BY 1`,
    );
    expect(rows.map((r) => r.org)).toEqual(ORGS.map((o) => o.org).sort());
    const shared = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${SCHEMA}.posts a JOIN ${SCHEMA}.posts b
          ON b.platform_post_id = a.platform_post_id AND a._org = $1 AND b._org = $2`,
      ORGS.map((o) => o.org),
    );
    expect(shared.rows[0]!.n).toBeGreaterThan(0);
    // Whichever started first is o1: no name carries an id.
    expect(await tables()).toEqual([
      'post_custom_segments_o1_y2026',
      'post_custom_segments_o2_y2026',
      'posts_o1_y2026',
      'posts_o2_y2026',
    ]);
    const keys = await db.pool.query<{ org: string; key: string }>(
      `SELECT org, key FROM ${SCHEMA}.organization_keys ORDER BY key`,
    );
    expect(keys.rows.map((r) => r.org).sort()).toEqual(ORGS.map((o) => o.org).sort());

    // Each is its own organization for status and a run again.
    const status = await runCli(
      ['status', '--schema', SCHEMA, '--all-organizations', '--json'],
      cliEnv(sim, db.url),
    );
    expect(status.code, status.stderr).toBe(0);
    const lines = status.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { organization: string; windows: { loaded: number } });
    expect(lines.map((l) => [l.organization, l.windows.loaded])).toEqual(
      ORGS.map((o) => [o.org, 3]).sort(([a], [b]) => String(a).localeCompare(String(b))),
    );
    const again = await backfill(ORGS[1]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.summary).toMatchObject({ windows: { planned: 0, skipped: 3 } });
  });

  it('a rename to an id with capitals and a dot keeps the rows exact, and the other untouched', async () => {
    const other = await db.pool.query(
      `SELECT to_jsonb(p)::text AS row FROM ${SCHEMA}.posts p WHERE _org = $1 ORDER BY 1`,
      [ORGS[1].org],
    );
    const renamed = await runCli(
      ['rename-organization', '--from', 'acme-emea', '--to', 'ACME.eu', '--schema', SCHEMA],
      cliEnv(sim, db.url),
    );
    expect(renamed.code, renamed.stderr).toBe(0);
    expect(await problems(ORGS[0], 'ACME.eu')).toEqual([]);
    const after = await db.pool.query(
      `SELECT to_jsonb(p)::text AS row FROM ${SCHEMA}.posts p WHERE _org = $1 ORDER BY 1`,
      [ORGS[1].org],
    );
    expect(after.rows).toEqual(other.rows);
    const left = await db.pool.query(
      `SELECT count(*)::int AS n FROM ${SCHEMA}.posts WHERE _org = 'acme-emea'`,
    );
    expect(left.rows).toEqual([{ n: 0 }]);
  });

  it('refuses an id out of the rule in one line naming it, exit 2, loading nothing', async () => {
    for (const bad of ['acme emea', 'a'.repeat(65), 'acme\u0007']) {
      const run = await runCli(
        ['backfill', '--from', FROM, '--to', TO, '--schema', SCHEMA, '--organization', bad],
        cliEnv(sim, db.url),
      );
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr.trim().split('\n')).toEqual([
        `post-reports-etl: error: POST_REPORTS_ORGANIZATION (--organization) must be an organization id of 1-64 letters, digits, -, _ or ., got ${JSON.stringify(bad)}`,
      ]);
    }
  });
});
