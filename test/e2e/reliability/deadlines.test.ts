import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type RunningSimulator,
  type SimulatorOptions,
  startSimulator,
} from '../../../src/simulator/server.js';
import { type CliResult, runCli, startCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { startSilentServer } from '../../helpers/silent-server.js';

/*
 * Every wait has a deadline, and a deadline that fires ends the run (or the window) with a defined exit code and
 * one line saying what was waited for. Outcomes only: no assertion on how long anything took.
 */

const db = await createTestDatabase();
const sims: RunningSimulator[] = [];
const clients: pg.Client[] = [];
afterAll(async () => {
  for (const client of clients) await client.end().catch(() => {});
  for (const sim of sims) await sim.close();
});

async function simulator(options: SimulatorOptions): Promise<RunningSimulator> {
  const sim = await startSimulator(options);
  sims.push(sim);
  return sim;
}

/** One 7-day window, loaded into its own schema. */
function backfill(schema: string, ...extra: string[]): string[] {
  return ['backfill', '--from', '2025-05-05', '--to', '2025-05-11', '--schema', schema, ...extra];
}

interface Failure {
  readonly code: string;
  readonly message: string;
}

/** The run's window failures, after checking that it ended with exit 3 and printed each on stderr. */
function windowFailures(result: CliResult): Failure[] {
  expect(result.code, result.stderr.slice(-2000)).toBe(3);
  expect(result.summary).toMatchObject({ status: 'partial', exitCode: 3 });
  const failures = (result.summary?.failures ?? []) as Failure[];
  expect(failures.length).toBeGreaterThan(0);
  for (const f of failures) {
    expect(f.message).not.toContain('\n');
    expect(result.stderr).toContain(`${f.code}: ${f.message}`);
  }
  return failures;
}

/** The run's error, after checking that it ended with this exit code and printed it as one line on stderr. */
function runError(result: CliResult, exitCode: number): Failure {
  expect(result.code, result.stderr.slice(-2000)).toBe(exitCode);
  const error = result.summary?.error as Failure | undefined;
  expect(error).toBeDefined();
  expect(result.stderr).toContain(`post-reports-etl: error: ${error?.message}\n`);
  return error as Failure;
}

async function loadedData(schema: string): Promise<string> {
  const parts: string[] = [];
  for (const table of ['posts', 'post_custom_segments', 'field_columns']) {
    const { rows } = await db.pool.query<{ doc: string }>(
      `SELECT row_to_json(t)::text AS doc FROM ${schema}.${table} t ORDER BY 1`,
    );
    parts.push(`${table}: ${rows.map((r) => r.doc).join('\n')}`);
  }
  return parts.join('\n\n');
}

/** Another session holding posts of the schema in ACCESS EXCLUSIVE mode until it rolls back. */
async function lockPosts(schema: string): Promise<pg.Client> {
  const holder = new pg.Client({ connectionString: db.url });
  clients.push(holder);
  await holder.connect();
  await holder.query('BEGIN');
  await holder.query(`LOCK TABLE ${schema}.posts IN ACCESS EXCLUSIVE MODE`);
  return holder;
}

describe('the API side', () => {
  it('a report not DONE by POST_REPORTS_POLL_DEADLINE_MS fails its window with REPORT_DEADLINE (exit 3)', async () => {
    const sim = await simulator({ seed: 41, postsPerDay: 5, generationDelayMs: 3_600_000 });
    const result = await runCli(
      backfill('report_deadline'),
      cliEnv(sim, db.url, { POST_REPORTS_POLL_DEADLINE_MS: '300', POST_REPORTS_WINDOW_ATTEMPTS: '1' }),
    );
    const [failure] = windowFailures(result);
    expect(failure?.code).toBe('REPORT_DEADLINE');
    expect(failure?.message).toMatch(
      /^report \S+ was not DONE after \d+ ms \(\d+ polls, deadline 300 ms, POST_REPORTS_POLL_DEADLINE_MS\); last status IN_PROGRESS$/,
    );
  });

  it('a request slower than POST_REPORTS_REQUEST_TIMEOUT_MS fails with API_TIMEOUT after its retries (exit 1)', async () => {
    const sim = await simulator({ seed: 42, postsPerDay: 5, faults: { latencyMs: 1500 } });
    const result = await runCli(
      backfill('request_timeout'),
      cliEnv(sim, db.url, { POST_REPORTS_REQUEST_TIMEOUT_MS: '200', POST_REPORTS_MAX_ATTEMPTS: '2' }),
    );
    const error = runError(result, 1);
    expect(error).toEqual({
      code: 'API_TIMEOUT',
      message:
        'GET /reports/posts/dimensions did not answer within 200 ms (attempt 2; POST_REPORTS_REQUEST_TIMEOUT_MS)',
    });
    expect(result.summary).toMatchObject({ status: 'failed', exitCode: 1 });
    const asked = sim.requests().filter((r) => r.path.endsWith('/reports/posts/dimensions'));
    expect(asked).toHaveLength(2);
  });
});

describe('the stall watchdog (POST_REPORTS_STALL_TIMEOUT_MS)', () => {
  it('fails a window whose report creation hangs with NO_PROGRESS, saying so (exit 3)', async () => {
    const sim = await simulator({ seed: 43, postsPerDay: 5, faults: { latencyMs: 2500 } });
    const result = await runCli(
      backfill('stall_create'),
      cliEnv(sim, db.url, { POST_REPORTS_STALL_TIMEOUT_MS: '1000', POST_REPORTS_WINDOW_ATTEMPTS: '1' }),
    );
    const [failure] = windowFailures(result);
    expect(failure?.code).toBe('NO_PROGRESS');
    expect(failure?.message).toMatch(
      /^no progress for \d+ s while waiting for the report to be created \(POST_REPORTS_STALL_TIMEOUT_MS\)$/,
    );
  });

  it('fails a window whose report is polled more rarely than the stall timeout, naming the report', async () => {
    const sim = await simulator({ seed: 44, postsPerDay: 5, generationDelayMs: 3_600_000 });
    const result = await runCli(
      backfill('stall_poll'),
      cliEnv(sim, db.url, {
        POST_REPORTS_STALL_TIMEOUT_MS: '1000',
        POST_REPORTS_POLL_INITIAL_MS: '20000',
        POST_REPORTS_POLL_MAX_MS: '20000',
        POST_REPORTS_WINDOW_ATTEMPTS: '1',
      }),
    );
    const [failure] = windowFailures(result);
    expect(failure?.code).toBe('NO_PROGRESS');
    expect(failure?.message).toMatch(
      /^no progress for \d+ s while waiting for report \S+ to be DONE \(POST_REPORTS_STALL_TIMEOUT_MS\)$/,
    );
  });
});

describe('the database side', () => {
  for (const deadline of [
    {
      // A lock wait past lock_timeout is retried (error-policy.ts) for as long as POST_REPORTS_RECONNECT_WAIT_MS
      // lasts, then ends the window.
      name: 'lock_timeout',
      env: { POST_REPORTS_LOCK_TIMEOUT_MS: '300', POST_REPORTS_RECONNECT_WAIT_MS: '2000' },
      says: /\(55P03\): canceling statement due to lock timeout \(waited for a lock held by another session longer than POST_REPORTS_LOCK_TIMEOUT_MS\)$/,
    },
    {
      name: 'statement_timeout',
      // With lock_timeout off, the lock wait runs into the statement's own deadline.
      env: { POST_REPORTS_LOCK_TIMEOUT_MS: '0', POST_REPORTS_STATEMENT_TIMEOUT_MS: '1500' },
      says: /\(57014\): canceling statement due to statement timeout \(the statement ran longer than POST_REPORTS_STATEMENT_TIMEOUT_MS\)$/,
    },
  ]) {
    it(`${deadline.name}: a reload that waits on a lock another session holds fails (exit 3), the data as it was`, async () => {
      const schema = `held_${deadline.name}`;
      const sim = await simulator({ seed: 45, postsPerDay: 20 });
      const first = await runCli(backfill(schema), cliEnv(sim, db.url));
      expect(first.code, first.stderr).toBe(0);
      const before = await loadedData(schema);
      expect(before).toContain('posts: {');
      sim.advanceTime(4 * 3_600_000);

      const holder = await lockPosts(schema);
      const run = startCli(
        backfill(schema, '--reload'),
        cliEnv(sim, db.url, { POST_REPORTS_WINDOW_ATTEMPTS: '1', ...deadline.env }),
      );
      const outcome = await Promise.race([run.done, sleep(20_000).then(() => 'hung' as const)]);
      if (outcome === 'hung') run.child.kill('SIGKILL');
      await holder.query('ROLLBACK');
      expect(outcome, `still waiting for the lock 20 s after ${deadline.name} should have ended it`).not.toBe(
        'hung',
      );
      const result = await run.done;
      for (const failure of windowFailures(result)) {
        expect(failure.code).toBe('DB_ERROR');
        expect(failure.message).toMatch(deadline.says);
      }
      expect(await loadedData(schema)).toBe(before);
    });
  }

  it('a reset waiting longer than POST_REPORTS_LOCK_WAIT_MS for a run on the schema: LOCK_HELD (exit 4)', async () => {
    const sim = await simulator({ seed: 46, postsPerDay: 5, generationDelayMs: 3_600_000 });
    // The first run shares the schema while it polls a report that takes an hour; a reset needs it alone.
    const holding = startCli(backfill('run_lock'), cliEnv(sim, db.url));
    await holding.waitForOutput('"msg":"report created"');
    const result = await runCli(
      [...backfill('run_lock'), '--reset', '--yes'],
      cliEnv(sim, db.url, { POST_REPORTS_LOCK_WAIT_MS: '1000' }),
    );
    holding.child.kill('SIGTERM');
    expect(runError(result, 4)).toEqual({
      code: 'LOCK_HELD',
      message:
        '--reset needs schema "run_lock" alone, and other runs are working on it; waited 1 s (POST_REPORTS_LOCK_WAIT_MS)',
    });
    expect(result.summary).toMatchObject({ status: 'lock_held', exitCode: 4 });
    expect((await holding.done).code).toBe(130);
  });

  it('a database that never answers fails the run after POST_REPORTS_CONNECT_TIMEOUT_MS (exit 1)', async () => {
    const silent = await startSilentServer();
    const { port } = silent;
    try {
      const sim = await simulator({ seed: 47, postsPerDay: 5 });
      const result = await runCli(
        backfill('silent'),
        cliEnv(sim, `postgres://nobody@127.0.0.1:${port}/silent`, {
          POST_REPORTS_CONNECT_TIMEOUT_MS: '300',
        }),
      );
      expect(runError(result, 1)).toEqual({
        code: 'DB_ERROR',
        message: `cannot connect to PostgreSQL at 127.0.0.1:${port}/silent: Connection terminated due to connection timeout (no connection within POST_REPORTS_CONNECT_TIMEOUT_MS)`,
      });
    } finally {
      silent.close();
    }
  });
});
