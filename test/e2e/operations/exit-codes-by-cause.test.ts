import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { runCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { compareWithReference } from '../../helpers/reference-check.js';
import { summaryOf } from '../../helpers/summary.js';

const db = await createTestDatabase();
let sim: RunningSimulator;
const FROM = '2026-03-02';
const TO = '2026-04-12';
const backfill = ['backfill', '--from', FROM, '--to', TO, '--concurrency', '2'];

beforeAll(async () => {
  // Two pages a window, and reports that take a few polls: a rejection can land on a create, a poll or a page.
  sim = await startSimulator({ seed: 41, postsPerDay: 150, generationDelayMs: 60 });
});
afterAll(async () => {
  await sim.close();
});

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

async function schemaExists(schema: string): Promise<boolean> {
  const { rows } = await db.pool.query('SELECT to_regnamespace($1) IS NOT NULL AS exists', [schema]);
  return rows[0]?.exists === true;
}

describe('exit codes by cause (the built CLI)', () => {
  it.each([
    { status: 401 as const, afterRequests: 1, where: 'the first report creation' },
    { status: 403 as const, afterRequests: 9, where: 'the polls and pages of the first windows' },
  ])(
    'a token rejected ($status) on $where stops the whole run at once: exit 2, TOKEN_REJECTED, nothing failed',
    async ({ status, afterRequests }) => {
      const schema = `token_${status}`;
      const env = cliEnv(sim, db.url, { POST_REPORTS_SCHEMA: schema });
      const before = sim.stats();
      sim.rejectToken({ afterRequests: afterRequests + 1, status }); // + 1: the dimensions call of the preflight
      onTestFinished(() => sim.acceptToken());
      const run = await runCli(backfill, env);
      sim.acceptToken();
      expect(run.code, run.stderr).toBe(2);
      const summary = summaryOf(run);
      expect(summary).toMatchObject({ status: 'failed', exitCode: 2, error: { code: 'TOKEN_REJECTED' } });
      expect(summary.error?.message).toContain(String(status));
      // Not one failure per window: the windows it stopped are interrupted, and the next run resumes them.
      expect(summary.failures).toEqual([]);
      expect(summary.windows.failed).toBe(0);
      expect(summary.windows.loaded).toBeLessThan(summary.windows.planned);
      expect(run.stderr.match(/post-reports-etl: error: /g)).toHaveLength(1);
      expect(run.stderr).toContain('post-reports-etl: error: TOKEN_REJECTED: ');
      expect(run.stderr).not.toContain('window failed');
      // At once: no request is retried, and no window starts after the rejection (at most the requests in flight
      // of the two windows running then, a prefetched page each, were answered with it).
      const rejected = (sim.stats().byStatus[String(status)] ?? 0) - (before.byStatus[String(status)] ?? 0);
      expect(rejected).toBeGreaterThanOrEqual(1);
      expect(rejected).toBeLessThanOrEqual(4);
      const { rows } = await db.pool.query(
        `SELECT count(*)::int AS n FROM ${schema}.report_windows WHERE status = 'failed'`,
      );
      expect(rows).toEqual([{ n: 0 }]);

      const again = await runCli(backfill, env);
      expect(again.code, again.stderr).toBe(0);
      const reference = sim.referencePosts({ start_date: FROM, end_date: TO });
      expect((await compareWithReference(db.pool, schema, reference)).problems).toEqual([]);
    },
  );

  it('a 400 on report creation fails only its window, with the API’s message: exit 3', async () => {
    const schema = 'refused';
    const env = cliEnv(sim, db.url, { POST_REPORTS_SCHEMA: schema });
    const message = 'custom segment value "Spring Sale" is no longer configured';
    sim.refuseReports(['2026-03-16'], message);
    onTestFinished(() => sim.refuseReports([]));
    const run = await runCli(backfill, env);
    sim.refuseReports([]);
    expect(run.code, run.stderr).toBe(3);
    const summary = summaryOf(run);
    expect(summary).toMatchObject({ status: 'partial', windows: { planned: 6, loaded: 5, failed: 1 } });
    expect(summary.failures).toEqual([
      {
        start: '2026-03-16',
        end: '2026-03-22',
        code: 'REPORT_REJECTED',
        message: `POST /reports/posts answered 400 (attempt 1): the API refused the report for 2026-03-16..2026-03-22: ${message}`,
      },
    ]);
    expect(run.stderr).toContain(`window failed: 2026-03-16..2026-03-22: REPORT_REJECTED: `);
    // A refusal is not retried: the same request would be refused again.
    expect(summary.retries).toBe(0);
    // The five other windows hold exactly the reference, and the refused one nothing.
    const others = sim
      .referencePosts({ start_date: FROM, end_date: TO })
      .filter((post) => post.date < '2026-03-16' || post.date > '2026-03-22');
    const check = await compareWithReference(db.pool, schema, others);
    expect(check.problems).toEqual([]);
    expect(check.posts).toBe(others.length);
  });

  it('an unreachable API or database is exit 1, and nothing is written', async () => {
    const port = await closedPort();
    const api = await runCli(['backfill', '--from', FROM, '--to', TO], {
      ...cliEnv(sim, db.url, { POST_REPORTS_SCHEMA: 'no_api', POST_REPORTS_MAX_ATTEMPTS: '2' }),
      POST_REPORTS_BASE_URL: `http://127.0.0.1:${port}/v4`,
    });
    expect(api.code, api.stderr).toBe(1);
    expect(api.summary).toMatchObject({
      status: 'failed',
      exitCode: 1,
      error: { code: 'API_NETWORK_ERROR' },
    });
    expect(await schemaExists('no_api')).toBe(false);

    const creations = sim.stats().byRoute['POST /reports/posts'] ?? 0;
    const database = await runCli(['backfill', '--from', FROM, '--to', TO], {
      ...cliEnv(sim, `postgres://postgres@127.0.0.1:${port}/nowhere`, {
        POST_REPORTS_CONNECT_TIMEOUT_MS: '2000',
      }),
    });
    expect(database.code, database.stderr).toBe(1);
    expect(database.summary).toMatchObject({ status: 'failed', exitCode: 1, error: { code: 'DB_ERROR' } });
    expect(database.stderr).toContain(`cannot connect to PostgreSQL at 127.0.0.1:${port}/nowhere`);
    expect(sim.stats().byRoute['POST /reports/posts'] ?? 0).toBe(creations);
  });
});
