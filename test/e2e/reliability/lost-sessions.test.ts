import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import {
  commitLockKey,
  organizationLockHolders,
  organizationLockKey,
  runLockHolders,
  windowClaimHolders,
} from '../../../src/load/locks.js';
import { renameOrganization } from '../../../src/load/organization-rename.js';
import { readTarget, resetTarget } from '../../../src/load/window-state.js';
import {
  type RunningSimulator,
  type SimulatorOptions,
  startSimulator,
} from '../../../src/simulator/server.js';
import { type CliResult, type CliRun, runCli, startCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { compareWithReference } from '../../helpers/reference-check.js';

const db = await createTestDatabase();
const dbName = new URL(db.url).pathname.slice(1);
const sims: RunningSimulator[] = [];
afterAll(async () => {
  for (const sim of sims) await sim.close();
});

const FROM = '2025-04-07';
const TO = '2025-04-20';
const WINDOWS = [
  { start: '2025-04-07', end: '2025-04-13' },
  { start: '2025-04-14', end: '2025-04-20' },
];

async function simulator(options: SimulatorOptions): Promise<RunningSimulator> {
  const sim = await startSimulator(options);
  sims.push(sim);
  return sim;
}

function args(schema: string): string[] {
  return ['backfill', '--from', FROM, '--to', TO, '--window-days', '7', '--schema', schema];
}

/** Terminates the given backends (only ever those of this file's own database), and waits until they are gone. */
async function terminate(pids: readonly number[]): Promise<void> {
  await db.pool.query(
    `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid = ANY($2::int[])`,
    [dbName, pids],
  );
  for (;;) {
    const { rows } = await db.pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = ANY($1::int[])',
      [pids],
    );
    if (rows[0]?.n === 0) return;
    await sleep(10);
  }
}

/** Every session the connector holds on this file's database now. */
async function connectorSessions(): Promise<number[]> {
  const { rows } = await db.pool.query<{ pid: number }>(
    `SELECT pid FROM pg_stat_activity WHERE datname = $1 AND application_name LIKE 'post-reports-etl%'`,
    [dbName],
  );
  return rows.map((r) => r.pid);
}

/** Harness guard only: a child still running after this is a hang, and fails the test. */
async function endsWithin(run: CliRun, ms: number): Promise<CliResult | 'hung'> {
  const guard = sleep(ms).then(() => 'hung' as const);
  const outcome = await Promise.race([run.done, guard]);
  if (outcome === 'hung') run.child.kill('SIGKILL');
  return outcome;
}

/** No stack trace, no unhandled error event: one line per cause. */
function expectNoStackTrace(result: CliResult): void {
  expect(result.stderr).not.toMatch(/Unhandled 'error' event|\n\s+at [^\n]+:\d+:\d+/);
  expect(result.stderr).not.toMatch(/"stack":/);
}

async function expectExact(sim: RunningSimulator, schema: string): Promise<void> {
  const reference = sim.referencePosts({ start_date: FROM, end_date: TO });
  expect((await compareWithReference(db.pool, schema, reference)).problems).toEqual([]);
}

/**
 * A run ends exit 0 and exact; or it ends with its summary line and a documented code, and the next run is
 * exit 0 and exact.
 */
async function expectServedOrResumed(
  result: CliResult,
  sim: RunningSimulator,
  schema: string,
): Promise<void> {
  expectNoStackTrace(result);
  expect(result.summary, `no summary line; stderr: ${result.stderr.slice(-2000)}`).toBeDefined();
  expect(result.summary?.exitCode).toBe(result.code);
  if (result.code !== 0) {
    expect([1, 3], result.stderr.slice(-2000)).toContain(result.code);
    sim.setFaults({ latencyMs: 0 });
    const next = await runCli(args(schema), cliEnv(sim, db.url));
    expect(next.code, next.stderr.slice(-2000)).toBe(0);
  }
  await expectExact(sim, schema);
}

/**
 * Expects the run to end within a minute with exit 1, having loaded nothing: its organization's lock was lost and,
 * when it took it again, the organization had been reset or renamed (the message names both). False if it hung.
 */
async function stopsOnItsLostLock(run: CliRun): Promise<boolean> {
  const result = await endsWithin(run, 60_000);
  expect(result, 'still running 60 s after the cut').not.toBe('hung');
  if (result === 'hung') return false;
  expectNoStackTrace(result);
  expect(result.code, result.stderr.slice(-2000)).toBe(1);
  expect(result.summary).toMatchObject({
    status: 'failed',
    exitCode: 1,
    error: { code: 'DB_CONNECTION_LOST' },
    windows: { loaded: 0 },
  });
  expect(result.stderr).toContain('reset, renamed or migrated before it was taken again');
  return true;
}

/**
 * Queues for the organization's lock behind the run holding it, cuts the run's lock session, and once the lock is
 * granted runs `work` with it held (on the session that holds it), then lets it go.
 */
async function aloneOnceTheRunsLockIsCut(
  scope: { schema: string; org: string },
  work: (session: pg.PoolClient) => Promise<void>,
): Promise<void> {
  const [holder] = await organizationLockHolders(db.pool, scope);
  expect(holder).toBeDefined();
  const session = await db.pool.connect();
  const { rows: me } = await session.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  try {
    const waiting = session.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [
      organizationLockKey(scope),
    ]);
    for (;;) {
      const { rows } = await db.pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND pid = $1`,
        [me[0]?.pid],
      );
      if (rows[0]?.n === 1) break;
      await sleep(20);
    }
    await terminate([holder!.pid]);
    await waiting;
    await work(session);
    await session.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [organizationLockKey(scope)]);
  } finally {
    session.release();
  }
}

describe('sessions the server closes (the built CLI)', () => {
  it('a server that closes idle sessions sooner than reports take to generate: exit 0, exact', async () => {
    const sim = await simulator({ seed: 41, postsPerDay: 30, generationDelayMs: 4000 });
    const schema = 'idle_cut';
    await db.pool.query(`ALTER DATABASE ${pg.escapeIdentifier(dbName)} SET idle_session_timeout = '1500ms'`);
    try {
      const result = await runCli(args(schema), cliEnv(sim, db.url));
      expectNoStackTrace(result);
      expect(result.code, result.stderr.slice(-2000)).toBe(0);
      expect(result.summary).toMatchObject({ status: 'succeeded', exitCode: 0 });
      await expectExact(sim, schema);
    } finally {
      await db.pool.query(`ALTER DATABASE ${pg.escapeIdentifier(dbName)} RESET idle_session_timeout`);
    }
  });

  interface Cut {
    readonly name: string;
    readonly sim: SimulatorOptions;
    /** Log message after which the cut happens. */
    readonly after: string;
    /** The sessions cut. */
    readonly sessions: (schema: string) => Promise<number[]>;
    readonly latencyMs?: number;
  }

  const cuts: Cut[] = [
    {
      name: 'every session, while waiting for a report',
      sim: { seed: 42, postsPerDay: 30, generationDelayMs: 3000 },
      after: '"msg":"report created"',
      sessions: connectorSessions,
    },
    {
      name: 'every session, while staging',
      sim: { seed: 43, postsPerDay: 200, pageSize: 100 },
      after: '"msg":"page staged"',
      latencyMs: 200,
      sessions: connectorSessions,
    },
    {
      name: 'the run lock holder alone',
      sim: { seed: 45, postsPerDay: 30, generationDelayMs: 3000 },
      after: '"msg":"report created"',
      sessions: async (schema) => (await runLockHolders(db.pool, schema)).map((h) => h.pid),
    },
    {
      name: 'the claims session alone',
      sim: { seed: 46, postsPerDay: 30, generationDelayMs: 3000 },
      after: '"msg":"report created"',
      sessions: async (schema) =>
        (await windowClaimHolders(db.pool, { schema, org: 'default' }, WINDOWS)).flatMap((h) =>
          h === null ? [] : [h.pid],
        ),
    },
  ];

  for (const cut of cuts) {
    it(`${cut.name}: the run ends with its summary line, and the data is exact`, async () => {
      const sim = await simulator(cut.sim);
      const schema = `cut_${cut.sim.seed}`;
      if (cut.latencyMs !== undefined) sim.setFaults({ latencyMs: cut.latencyMs });
      const run = startCli(args(schema), cliEnv(sim, db.url, { LOG_LEVEL: 'debug' }));
      await run.waitForOutput(cut.after);
      const pids = await cut.sessions(schema);
      expect(pids.length).toBeGreaterThan(0);
      await terminate(pids);
      const result = await endsWithin(run, 60_000);
      expect(result, `still running 60 s after the cut (${cut.name})`).not.toBe('hung');
      if (result === 'hung') return;
      await expectServedOrResumed(result, sim, schema);
    });
  }

  it('the organization lock lost while a reset takes it: the run stops with exit 1 and its summary', async () => {
    const sim = await simulator({ seed: 47, postsPerDay: 30, generationDelayMs: 3000 });
    const schema = 'cut_reset';
    const scope = { schema, org: 'default' };
    const run = startCli(args(schema), cliEnv(sim, db.url, { LOG_LEVEL: 'debug' }));
    await run.waitForOutput('"msg":"report created"');
    // A reset asks for the organization alone: granted the moment the run's lock session is gone, before it
    // can take the lock again.
    await aloneOnceTheRunsLockIsCut(scope, async (reset) => {
      await reset.query('BEGIN');
      const target = await readTarget(reset, scope);
      await resetTarget(reset, scope, target!.postIdField, target!.filters);
      await reset.query('COMMIT');
    });
    if (!(await stopsOnItsLostLock(run))) return;
    const next = await runCli(args(schema), cliEnv(sim, db.url));
    expect(next.code, next.stderr.slice(-2000)).toBe(0);
    await expectExact(sim, schema);
  });

  it('the organization lock lost while a rename takes it: the run of the old id stops, writing nothing under it', async () => {
    const sim = await simulator({ seed: 49, postsPerDay: 30, generationDelayMs: 3000 });
    const schema = 'cut_rename';
    const scope = { schema, org: 'default' };
    const run = startCli(args(schema), cliEnv(sim, db.url, { LOG_LEVEL: 'debug' }));
    await run.waitForOutput('"msg":"report created"');
    // The rename takes the old id alone the moment the run's lock session is gone, as a reset does above; the
    // id it renames to is free.
    await aloneOnceTheRunsLockIsCut(scope, async () => {
      await renameOrganization(db.pool, scope, 'acme', { waitMs: 60_000 });
    });
    if (!(await stopsOnItsLostLock(run))) return;
    const written = await db.pool.query<{ org: string }>(
      `SELECT DISTINCT org FROM (SELECT _org AS org FROM ${schema}.posts
                                 UNION ALL SELECT org FROM ${schema}.report_windows
                                 UNION ALL SELECT org FROM ${schema}.sync_state) AS t`,
    );
    expect(written.rows.map((r) => r.org)).not.toContain('default');
  });

  const commitCuts = [
    { name: 'every session', seed: 44, sessions: async (_schema: string) => connectorSessions() },
    {
      name: 'the claims session alone',
      seed: 48,
      // The commit checks the claims once it holds the commit lock, and commits again once they are taken again.
      log: 'the window claims were lost before the commit',
      sessions: async (schema: string) =>
        (await windowClaimHolders(db.pool, { schema, org: 'default' }, WINDOWS)).flatMap((h) =>
          h === null ? [] : [h.pid],
        ),
    },
    {
      name: 'the run lock holder alone',
      seed: 49,
      sessions: async (schema: string) => (await runLockHolders(db.pool, schema)).map((h) => h.pid),
    },
  ];
  for (const cut of commitCuts) {
    it(`${cut.name}, during a commit: the run ends with its summary line, and the data is exact`, async () => {
      const sim = await simulator({ seed: cut.seed, postsPerDay: 30 });
      const schema = `cut_commit_${cut.seed}`;
      // The test holds the commit lock: the run's commit waits on it inside its transaction, where it is cut.
      const holder = await db.pool.connect();
      let held = true;
      try {
        await holder.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [commitLockKey(schema)]);
        const run = startCli(args(schema), cliEnv(sim, db.url, { LOG_LEVEL: 'debug' }));
        for (;;) {
          const { rows } = await db.pool.query<{ pid: number }>(
            `SELECT l.pid FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
            WHERE a.datname = $1 AND a.application_name LIKE 'post-reports-etl%'
              AND l.locktype = 'advisory' AND NOT l.granted AND l.objsubid = 1
              AND l.classid::bigint = (hashtextextended($2, 0) >> 32) & 4294967295
              AND l.objid::bigint = hashtextextended($2, 0) & 4294967295`,
            [dbName, commitLockKey(schema)],
          );
          if (rows.length > 0) break;
          if (run.child.exitCode !== null) break;
          await sleep(50);
        }
        const pids = await cut.sessions(schema);
        expect(pids.length).toBeGreaterThan(0);
        await terminate(pids);
        await holder.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [commitLockKey(schema)]);
        held = false;
        const result = await endsWithin(run, 60_000);
        expect(result, 'still running 60 s after the cut').not.toBe('hung');
        if (result === 'hung') return;
        if ('log' in cut) expect(result.stderr).toContain(cut.log);
        await expectServedOrResumed(result, sim, schema);
      } finally {
        if (held) {
          await holder.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [commitLockKey(schema)]);
        }
        holder.release();
      }
    });
  }
});
