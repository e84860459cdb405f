import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ORGANIZATION_TABLES } from '../../src/load/scope.js';
import type { SimulatorPost } from '../../src/simulator/server.js';
import { type RunningSimulator, startSimulator } from '../../src/simulator/server.js';
import { type CliResult, runCli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/database.js';
import { cliEnv } from '../helpers/e2e-env.js';
import { compareWithReference } from '../helpers/reference-check.js';

const db = await createTestDatabase();
let sim: RunningSimulator;

const SCHEMA = 'agency';
const FROM = '2026-05-04';
const TO = '2026-05-31';

/**
 * Five organizations, each with its own token, posts and settings. acme and globex have seeds 97 apart: the API
 * serves them the same post ids on the same dates, which must stay apart.
 */
const ORGS = [
  { org: 'acme', token: 'token-acme', seed: 3, postsPerDay: 12, args: [] as string[] },
  { org: 'globex', token: 'token-globex', seed: 100, postsPerDay: 12, args: ['--markets', 'US,JP'] },
  {
    org: 'initech',
    token: 'token-initech',
    seed: 5,
    postsPerDay: 20,
    args: ['--fields', 'brand,total_spend'],
  },
  {
    org: 'umbrella',
    token: 'token-umbrella',
    seed: 7,
    postsPerDay: 8,
    args: ['--exclude-fields', 'name,email'],
  },
  { org: 'hooli', token: 'token-hooli', seed: 9, postsPerDay: 15, args: ['--window-days', '14'] },
] as const;
type Org = (typeof ORGS)[number];

beforeAll(async () => {
  sim = await startSimulator({
    seed: 77,
    organizations: ORGS.map(({ token, seed, postsPerDay }) => ({ token, seed, postsPerDay })),
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
    POST_REPORTS_WINDOW_ATTEMPTS: '4',
    POST_REPORTS_MAX_ATTEMPTS: '8',
    POST_REPORTS_RETRY_MIN_DELAY_MS: '10',
    POST_REPORTS_LOCK_WAIT_MS: '60000',
  };
}

const backfill = (o: Org, ...extra: string[]) =>
  runCli(['backfill', '--from', FROM, '--to', TO, '--schema', SCHEMA, ...o.args, ...extra], env(o));

/** Runs until a run ends with every window loaded (faults may fail some), at most four times. */
async function loadAll(o: Org, ...extra: string[]): Promise<CliResult[]> {
  const runs: CliResult[] = [];
  for (let i = 0; i < 4; i++) {
    const run = await backfill(o, ...(i === 0 ? extra : []));
    runs.push(run);
    if (run.code === 0) break;
    expect([0, 3], run.stderr.slice(-2000)).toContain(run.code);
  }
  return runs;
}

/** The organization's truth: its reference posts, with only the fields its selection keeps. */
function truth(o: Org): SimulatorPost[] {
  const markets = o.org === 'globex' ? { markets: ['US', 'JP'] } : {};
  const posts = sim.referencePosts({ start_date: FROM, end_date: TO, ...markets }, o.token);
  const keep =
    o.org === 'initech'
      ? (field: string) => ['brand', 'total_spend'].includes(field)
      : o.org === 'umbrella'
        ? (field: string) => !['name', 'email'].includes(field)
        : () => true;
  return posts.map((post) => ({
    ...post,
    fields: Object.fromEntries(Object.entries(post.fields).filter(([field]) => keep(field))),
    // custom_segments is a field as any other: a selection that does not name it loads none.
    segments: keep('custom_segments') ? post.segments : [],
  }));
}

async function exact(o: Org): Promise<string[]> {
  return (await compareWithReference(db.pool, SCHEMA, truth(o), 'platform_post_id', o.org)).problems;
}

/** Every row and state row of an organization, as text. */
async function holdings(org: string): Promise<string> {
  const parts: string[] = [];
  for (const [table, column] of ORGANIZATION_TABLES) {
    const { rows } = await db.pool.query<{ row: string }>(
      `SELECT to_jsonb(t)::text AS row FROM ${SCHEMA}.${table} t WHERE ${column} = $1 ORDER BY 1`,
      [org],
    );
    parts.push(`${table}: ${rows.map((r) => r.row).join('\n')}`);
  }
  return parts.join('\n');
}

describe('five organizations in one schema', () => {
  it('load at once, with faults, each exact against its own truth and apart from the others', async () => {
    sim.setFaults({ serverErrorShare: 0.1, rateLimitShare: 0.05, latencyMs: 5 });
    const runs = await Promise.all(ORGS.map((o) => loadAll(o)));
    sim.setFaults({ serverErrorShare: 0, rateLimitShare: 0, latencyMs: 0 });
    const served = ORGS.flatMap((o) => Object.values(sim.stats(o.token).faults)).reduce((n, c) => n + c, 0);
    expect(served, 'faults served to the runs').toBeGreaterThan(0);
    for (const [i, o] of ORGS.entries()) {
      expect(runs[i]!.at(-1)!.code, `${o.org}: ${runs[i]!.at(-1)!.stderr.slice(-2000)}`).toBe(0);
      expect(await exact(o), o.org).toEqual([]);
    }
    // Every row carries its own organization's key: the same post ids of acme and globex are two rows each.
    const { rows } = await db.pool.query<{ org: string; posts: number }>(
      `SELECT _org AS org, count(*)::int AS posts FROM ${SCHEMA}.posts GROUP BY 1 ORDER BY 1`,
    );
    expect(rows).toEqual(
      ORGS.map((o) => ({ org: o.org, posts: truth(o).length })).sort((a, b) => a.org.localeCompare(b.org)),
    );
    const shared = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${SCHEMA}.posts a JOIN ${SCHEMA}.posts g
          ON g.platform_post_id = a.platform_post_id AND a._org = 'acme' AND g._org = 'globex'`,
    );
    expect(shared.rows[0]!.n).toBeGreaterThan(0);
    // A field one organization leaves out is NULL in its rows, and loaded in the others'.
    const initech = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${SCHEMA}.posts WHERE _org = 'initech' AND market IS NOT NULL`,
    );
    expect(initech.rows[0]!.n).toBe(0);
  });

  it("a reset of one leaves the others' rows and state byte for byte", async () => {
    const others = ORGS.filter((o) => o.org !== 'globex');
    const before = await Promise.all(others.map((o) => holdings(o.org)));
    const globex = ORGS.find((o) => o.org === 'globex')!;
    const reset = await loadAll(globex, '--reset', '--yes');
    expect(reset.at(-1)!.code, reset.at(-1)!.stderr.slice(-2000)).toBe(0);
    expect(reset[0]!.summary).toMatchObject({ reset: { windows: 4 } });
    expect(await Promise.all(others.map((o) => holdings(o.org)))).toEqual(before);
    expect(await exact(globex)).toEqual([]);
  });
});
