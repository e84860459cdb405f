import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, parseConfig, sync } from '../../../src/index.js';
import { addDays } from '../../../src/model/dates.js';
import { cutWindows, gridStart } from '../../../src/pipeline/windows.js';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { runCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { compareWithReference } from '../../helpers/reference-check.js';
import { summaryOf } from '../../helpers/summary.js';
import { TODAY, testNow } from '../../helpers/today.js';

const db = await createTestDatabase();
let sim: RunningSimulator;

beforeAll(async () => {
  sim = await startSimulator({ seed: 41, postsPerDay: 8, now: testNow() });
});
afterAll(async () => {
  await sim.close();
});

/** The windows (`start..end`) the simulator was asked to create a report for since `before` was taken. */
function windowsAsked(before: Record<string, number[]>): Set<string> {
  const now = sim.stats().creationCallsByWindow;
  return new Set(Object.keys(now).filter((w) => (now[w]?.length ?? 0) > (before[w]?.length ?? 0)));
}

async function problems(schema: string, from: string, to: string): Promise<string[]> {
  const reference = sim.referencePosts({ start_date: from, end_date: to });
  return (await compareWithReference(db.pool, schema, reference)).problems;
}

describe('start dates (the built CLI)', () => {
  it('a start date before the loaded history loads the missing history, without reloading what is loaded', async () => {
    const env = cliEnv(sim, db.url, { POST_REPORTS_SCHEMA: 'extended', POST_REPORTS_LOOKBACK_DAYS: '3' });
    const recent = addDays(TODAY, -20);
    const beforeFirst = sim.stats().creationCallsByWindow;
    const first = await runCli(['sync', '--start-date', recent], env);
    expect(first.code, first.stderr).toBe(0);
    const loadedFirst = windowsAsked(beforeFirst);

    const earlier = addDays(TODAY, -75);
    const beforeMore = sim.stats().creationCallsByWindow;
    const more = await runCli(['sync', '--start-date', earlier], env);
    expect(more.code, more.stderr).toBe(0);
    expect(more.summary).toMatchObject({ status: 'succeeded', from: earlier, cursor: TODAY });
    // The second sync's grid is split exactly into the windows it asked the simulator for and those it skipped:
    // windows the first sync loaded, every one of them that ends before the lookback among them.
    const grid = cutWindows(earlier, TODAY, 7).map((w) => `${w.start}..${w.end}`);
    const asked = windowsAsked(beforeMore);
    const skipped = grid.filter((w) => !asked.has(w));
    expect([...asked].filter((w) => !grid.includes(w))).toEqual([]);
    expect(summaryOf(more).windows.skipped).toBe(skipped.length);
    expect(skipped.filter((w) => !loadedFirst.has(w))).toEqual([]);
    const lookbackStart = addDays(TODAY, -3);
    const settled = grid.filter((w) => loadedFirst.has(w) && (w.split('..')[1] ?? '') < lookbackStart);
    expect(settled.length).toBeGreaterThan(0);
    expect(settled.filter((w) => asked.has(w))).toEqual([]);
    expect(await problems('extended', earlier, TODAY)).toEqual([]);
  });

  it('a start date moved forward does not skip the dates between the cursor and it', async () => {
    const schema = 'moved';
    // A sync that last ran 30 days ago.
    const lastRun = addDays(TODAY, -30);
    const firstStart = addDays(TODAY, -50);
    const config = parseConfig({
      POST_REPORTS_BASE_URL: sim.baseUrl,
      POST_REPORTS_TOKEN: sim.token,
      DATABASE_URL: db.url,
      POST_REPORTS_SCHEMA: schema,
      POST_REPORTS_START_DATE: firstStart,
      POST_REPORTS_LOOKBACK_DAYS: '3',
      POST_REPORTS_POLL_INITIAL_MS: '20',
      POST_REPORTS_LOCK_WAIT_MS: '0',
      POST_REPORTS_NOW: testNow(),
    });
    const earlier = await sync({ config, logger: createLogger({ level: 'silent' }), today: lastRun });
    expect(earlier).toMatchObject({ status: 'succeeded', cursor: lastRun });

    const env = cliEnv(sim, db.url, { POST_REPORTS_SCHEMA: schema, POST_REPORTS_LOOKBACK_DAYS: '3' });
    const forward = addDays(TODAY, -10);
    const run = await runCli(['sync', '--start-date', forward], env);
    expect(run.code, run.stderr).toBe(0);
    // It loads from the cursor's lookback, says why the start date did not apply, and leaves no gap.
    expect(run.summary).toMatchObject({ from: gridStart(addDays(lastRun, -3), 7), cursor: TODAY });
    expect(run.stderr).toContain(`start date ${forward}`);
    expect(await problems(schema, firstStart, TODAY)).toEqual([]);
  });
});
