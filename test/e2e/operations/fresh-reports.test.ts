import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { addDays } from '../../../src/model/dates.js';
import { gridStart } from '../../../src/pipeline/windows.js';
import { type RunningSimulator, type SimulatorStats, startSimulator } from '../../../src/simulator/server.js';
import { runCli, startCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { compareWithReference } from '../../helpers/reference-check.js';
import { summaryOf } from '../../helpers/summary.js';
import { TODAY, testNow } from '../../helpers/today.js';

const db = await createTestDatabase();
let sim: RunningSimulator;
const HOURS_4 = 4 * 3_600_000;
const start = addDays(TODAY, -20);
/** The first date a 3-day lookback reloads from a cursor at today. */
const lookbackFrom = gridStart(addDays(TODAY, -3), 7);

beforeAll(async () => {
  sim = await startSimulator({ seed: 31, postsPerDay: 15, now: testNow() });
});
afterAll(async () => {
  await sim.close();
});

async function exact(schema: string): Promise<string[]> {
  const reference = sim.referencePosts({ start_date: start, end_date: TODAY });
  return (await compareWithReference(db.pool, schema, reference)).problems;
}

async function postRows(schema: string): Promise<string[]> {
  const { rows } = await db.pool.query<{ doc: string }>(
    `SELECT row_to_json(p)::text AS doc FROM ${schema}.posts p ORDER BY 1`,
  );
  return rows.map((r) => r.doc);
}

async function lookbackWindows(
  schema: string,
): Promise<{ start: string; status: string; finished: string; rows: number }[]> {
  const { rows } = await db.pool.query(
    `SELECT window_start::text AS start, status, finished_at::text AS finished, row_count::int AS rows
       FROM ${schema}.report_windows WHERE window_end >= $1 ORDER BY window_start`,
    [lookbackFrom],
  );
  return rows;
}

/** The report ids the simulator was asked to read since `before` was taken (GET /reports/posts/{id}). */
function reportsRead(before: SimulatorStats): Set<string> {
  const since = sim.requests().slice(-(sim.stats().requests - before.requests));
  const ids = since
    .filter((request) => request.method === 'GET')
    .map((request) => /^\/v4\/reports\/posts\/([^/]+)$/.exec(request.path)?.[1])
    .filter((id): id is string => id !== undefined && id !== 'dimensions');
  return new Set(ids);
}

describe('a reload always asks for a new report (the built CLI)', () => {
  it('a sync whose lookback cannot create reports fails those windows, keeps their rows and the cursor where it was', async () => {
    const schema = 'outage';
    const env = cliEnv(sim, db.url, {
      POST_REPORTS_SCHEMA: schema,
      POST_REPORTS_LOOKBACK_DAYS: '3',
      POST_REPORTS_MAX_ATTEMPTS: '2',
    });
    const first = await runCli(['sync', '--start-date', start], env);
    expect(first.code, first.stderr).toBe(0);
    const loaded = await lookbackWindows(schema);
    const rows = await postRows(schema);

    // Late data: two days are restated after the first sync, and the API's reuse period is over.
    sim.reviseFigures(addDays(TODAY, -2));
    sim.reviseFigures(TODAY);
    sim.advanceTime(HOURS_4);
    sim.startCreationOutage();
    onTestFinished(() => sim.endCreationOutage());
    const during = await runCli(['sync'], env);
    expect(during.code, during.stderr).toBe(3);
    expect(during.summary).toMatchObject({ status: 'partial', reportsCreated: 0, windows: { loaded: 0 } });
    expect(summaryOf(during).failures.map((f) => f.start)).toEqual(loaded.map((w) => w.start));
    expect(during.stderr).toContain(`window failed: ${loaded[0]?.start}`);
    // The old rows stay, not recorded as a fresh load. The cursor does not move past the failed windows, nor back
    // (syncs running at once end in any order): the next sync's lookback covers them again.
    expect(await postRows(schema)).toEqual(rows);
    const after = await lookbackWindows(schema);
    expect(after).toEqual(loaded.map((w) => ({ ...w, status: 'failed' })));
    expect(summaryOf(during).cursor).toBe(summaryOf(first).cursor);
    expect(loaded[0]!.start >= lookbackFrom).toBe(true);

    sim.endCreationOutage();
    const clean = await runCli(['sync'], env);
    expect(clean.code, clean.stderr).toBe(0);
    expect(clean.summary).toMatchObject({ status: 'succeeded', cursor: TODAY });
    expect(await exact(schema)).toEqual([]);
  });

  it('the run after a failed attempt creates a new report instead of reading the failed attempt’s', async () => {
    const schema = 'retried';
    const env = cliEnv(sim, db.url, { POST_REPORTS_SCHEMA: schema, POST_REPORTS_LOOKBACK_DAYS: '3' });
    const first = await runCli(['sync', '--start-date', start], env);
    expect(first.code, first.stderr).toBe(0);

    // The lookback's reports are created but never become DONE: every window fails on its only attempt.
    sim.advanceTime(HOURS_4);
    sim.setFaults({ reportStatusOverride: 'IN_PROGRESS' });
    const beforeFailed = sim.stats();
    const failed = await runCli(['sync', '--window-attempts', '1'], {
      ...env,
      POST_REPORTS_POLL_DEADLINE_MS: '300',
    });
    sim.setFaults({ reportStatusOverride: null });
    expect(failed.code, failed.stderr).toBe(3);
    // Every window of the lookback failed, each with the one report the simulator made for it.
    const failedReports = reportsRead(beforeFailed);
    const planned = summaryOf(failed).windows.planned;
    expect(summaryOf(failed).failures).toHaveLength(planned);
    expect(sim.stats().reportsCreated - beforeFailed.reportsCreated).toBe(planned);
    expect(failedReports.size).toBe(planned);

    // Figures are restated after those reports were made: they are stale now.
    sim.reviseFigures(addDays(TODAY, -1));
    sim.advanceTime(HOURS_4);
    const beforeNext = sim.stats();
    const next = await runCli(['sync'], env);
    expect(next.code, next.stderr).toBe(0);
    // Every window it loaded got a new report of its own: none of the failed run's was read again.
    expect(sim.stats().reportsCreated - beforeNext.reportsCreated).toBe(summaryOf(next).windows.planned);
    const nextReports = reportsRead(beforeNext);
    expect(nextReports.size).toBe(summaryOf(next).windows.planned);
    expect([...nextReports].filter((id) => failedReports.has(id))).toEqual([]);
    expect(await exact(schema)).toEqual([]);
  });

  it('an attempt interrupted by SIGTERM or SIGKILL is resumed with its own report, not created again', async () => {
    // 200 posts a day: 2 pages per window; the simulator holds the second until the signal has landed.
    const slow = await startSimulator({ seed: 32, postsPerDay: 200 });
    onTestFinished(() => slow.close());
    const schema = 'resumed';
    const env = cliEnv(slow, db.url, { POST_REPORTS_SCHEMA: schema, LOG_LEVEL: 'debug' });
    const args = ['backfill', '--from', '2026-06-01', '--to', '2026-06-14', '--concurrency', '1', '--reload'];
    const first = await runCli(args, env);
    expect(first.code, first.stderr).toBe(0);
    for (const [signal, status] of [
      ['SIGTERM', 'pending'],
      ['SIGKILL', 'extracting'],
    ] as const) {
      slow.advanceTime(HOURS_4);
      const gate = slow.holdAnswers('page', 1);
      const run = startCli(args, env);
      await run.waitForOutput('"msg":"page staged"');
      await gate.held;
      run.child.kill(signal);
      await run.done;
      gate.release();
      const { rows } = await db.pool.query(
        `SELECT status, attempt_report_id IS NOT NULL AND attempt_report_id <> report_id AS own
           FROM ${schema}.report_windows WHERE window_start = '2026-06-01'`,
      );
      expect(rows).toEqual([{ status, own: true }]);
      const calls = slow.stats().creationCalls;
      const rerun = await runCli(args, env);
      expect(rerun.code, rerun.stderr).toBe(0);
      // Only the window not started yet asked for a report; the interrupted one polled its own again.
      expect(summaryOf(rerun)).toMatchObject({ reportsCreated: 1, windows: { planned: 2, loaded: 2 } });
      expect(slow.stats().creationCalls - calls).toBe(1);
      expect(rerun.stderr).toContain('resuming');
    }
    const reference = slow.referencePosts({ start_date: '2026-06-01', end_date: '2026-06-14' });
    expect((await compareWithReference(db.pool, schema, reference)).problems).toEqual([]);
  });
});
