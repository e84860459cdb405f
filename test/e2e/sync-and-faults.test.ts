import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addDays } from '../../src/model/dates.js';
import { gridStart } from '../../src/pipeline/windows.js';
import { type RunningSimulator, startSimulator } from '../../src/simulator/server.js';
import { runCli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/database.js';
import { cliEnv } from '../helpers/e2e-env.js';
import { compareWithReference } from '../helpers/reference-check.js';
import { TODAY, testNow } from '../helpers/today.js';

const db = await createTestDatabase();
let sim: RunningSimulator;
const HOURS_4 = 4 * 3_600_000;
const maxDate = (a: string, b: string) => (a > b ? a : b);

beforeAll(async () => {
  sim = await startSimulator({ seed: 11, postsPerDay: 20, generationDelayMs: 100, now: testNow() });
});
afterAll(async () => {
  await sim.close();
});

describe('sync (the built CLI)', () => {
  it('needs a start date on its first run, and says so', async () => {
    const result = await runCli(['sync', '--schema', 'nostart'], cliEnv(sim, db.url));
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/first sync needs a start date.*--start-date/);
  });

  it('loads up to today, then picks up new and late posts inside the lookback', async () => {
    const start = addDays(TODAY, -20);
    const env = cliEnv(sim, db.url, { POST_REPORTS_START_DATE: start });
    const first = await runCli(['sync', '--schema', 'incremental', '--lookback-days', '3'], env);
    expect(first.code).toBe(0);
    expect(first.summary).toMatchObject({ status: 'succeeded', cursor: TODAY, from: start, to: TODAY });
    expect(
      (
        await compareWithReference(
          db.pool,
          'incremental',
          sim.referencePosts({ start_date: start, end_date: TODAY }),
        )
      ).problems,
    ).toEqual([]);

    // Late posts appear two days back (inside the lookback), new ones today; the vendor's 3-hour report reuse passes.
    sim.addPosts(addDays(TODAY, -2), 7);
    sim.addPosts(TODAY, 5);
    sim.advanceTime(HOURS_4);
    const second = await runCli(['sync', '--schema', 'incremental', '--lookback-days', '3'], env);
    expect(second.code).toBe(0);
    expect(second.summary).toMatchObject({
      from: maxDate(gridStart(addDays(TODAY, -3), 7), start),
      cursor: TODAY,
    });
    const reference = sim.referencePosts({ start_date: start, end_date: TODAY });
    const check = await compareWithReference(db.pool, 'incremental', reference);
    expect(check.problems).toEqual([]);
    expect(check.posts).toBe(21 * 20 + 12);
  });
});

describe('faults (the built CLI)', () => {
  it('loads every other window under 429s, 5xx and dropped connections, then a second run completes the failed one', async () => {
    const from = '2025-09-01';
    const to = '2025-10-26';
    const failing = '2025-09-15';
    sim.setFaults({
      rateLimitShare: 0.15,
      retryAfterSeconds: 0,
      serverErrorShare: 0.1,
      dropShare: 0.05,
      failReportStartDates: [failing],
    });
    const env = cliEnv(sim, db.url, { POST_REPORTS_MAX_ATTEMPTS: '12', POST_REPORTS_WINDOW_ATTEMPTS: '2' });
    const args = ['backfill', '--from', from, '--to', to, '--concurrency', '3', '--schema', 'faulty'];
    const before = sim.stats().faults;
    const first = await runCli(args, env);
    expect(first.code).toBe(3);
    expect(first.summary).toMatchObject({ status: 'partial', windows: { failed: 1 } });
    expect(first.stderr).toContain(`window failed: ${failing}..2025-09-21: REPORT_FAILED`);
    // Every 429, 5xx and dropped connection the simulator served was retried once, and nothing else was.
    const after = sim.stats().faults;
    const served = (kind: string) => (after[kind] ?? 0) - (before[kind] ?? 0);
    const answeredByFaults = served('rate-limit') + served('server-error') + served('drop');
    expect(answeredByFaults).toBeGreaterThan(0);
    expect(first.summary?.retries).toBe(answeredByFaults);
    // The failing window's report failed once: its second attempt got the same report back (the API's reuse
    // period), recognised it, and did not poll it again.
    expect(served('fail-report')).toBe(1);
    expect(first.stderr).toContain('the API returns the same failed report');

    const all = sim.referencePosts({ start_date: from, end_date: to });
    const withoutFailed = all.filter((p) => p.date < failing || p.date > '2025-09-21');
    expect((await compareWithReference(db.pool, 'faulty', withoutFailed)).problems).toEqual([]);

    sim.setFaults({ failReportStartDates: [] });
    sim.advanceTime(HOURS_4);
    const second = await runCli(args, env);
    expect(second.code, second.stdout).toBe(0);
    expect(second.summary).toMatchObject({ windows: { planned: 1, loaded: 1, failed: 0 } });
    sim.setFaults({ rateLimitShare: 0, serverErrorShare: 0, dropShare: 0 });
    expect((await compareWithReference(db.pool, 'faulty', all)).problems).toEqual([]);
  });
});
