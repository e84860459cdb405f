/*
 * The age of a window's data, over time, as the API's reuse rule and overlapping windows make it: the
 * connector's clock (POST_REPORTS_NOW) and the simulator's are moved together, so nothing here depends on the
 * date the tests run on.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { type CliRun, runCli, startCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { compareWithReference } from '../../helpers/reference-check.js';
import { summaryOf } from '../../helpers/summary.js';

const db = await createTestDatabase();
let sim: RunningSimulator;
/** Its reports take 10 minutes of its clock to generate: they are DONE only once a test moves its clock. */
let slow: RunningSimulator;
const HOUR = 3_600_000;
const GENERATION_MS = 10 * 60_000;

beforeAll(async () => {
  sim = await startSimulator({ seed: 83, postsPerDay: 8 });
  slow = await startSimulator({ seed: 84, postsPerDay: 8, generationDelayMs: GENERATION_MS });
});
afterAll(async () => {
  await sim.close();
  await slow.close();
});

function envAt(
  schema: string,
  now: string,
  extra: Record<string, string> = {},
  api: RunningSimulator = sim,
): Record<string, string> {
  return cliEnv(api, db.url, { POST_REPORTS_SCHEMA: schema, POST_REPORTS_NOW: now, ...extra });
}

/** Resolves once the run's log holds `count` lines containing `text`. */
async function logged(run: CliRun, text: string, count = 1): Promise<void> {
  while (run.stderrSoFar().split(text).length - 1 < count) {
    if (run.child.exitCode !== null) throw new Error(`the run ended first: ${run.stderrSoFar()}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function reviseDays(api: RunningSimulator, from: string, days: number): void {
  for (let i = 0; i < days; i++) {
    api.reviseFigures(new Date(Date.parse(`${from}T00:00:00Z`) + i * 86_400_000).toISOString().slice(0, 10));
  }
}

async function windowRows(schema: string) {
  const { rows } = await db.pool.query<{
    start: string;
    end: string;
    through: string | null;
    status: string;
  }>(
    `SELECT window_start::text AS start, window_end::text AS end, loaded_through::text AS through, status
       FROM ${schema}.report_windows ORDER BY window_start, window_end`,
  );
  return rows;
}

async function exact(schema: string, from: string, to: string, api = sim): Promise<string[]> {
  const reference = api.referencePosts({ start_date: from, end_date: to });
  return (await compareWithReference(db.pool, schema, reference)).problems;
}

describe('the age of the data (the built CLI)', () => {
  it('a window reloaded after midnight from a report the API made before it is still open, and loads complete from a newer one', async () => {
    const args = ['backfill', '--from', '2026-01-05', '--to', '2026-01-11'];
    const first = await runCli(args, envAt('midnight', '2026-01-11T23:00:00Z'));
    expect(first.code, first.stderr).toBe(0);
    // 23:00 on the 11th: the report may be 3 hours old, and the 11th is not over anyway.
    expect(await windowRows('midnight')).toEqual([
      { start: '2026-01-05', end: '2026-01-11', through: '2026-01-10', status: 'loaded' },
    ]);

    // Posts of the 11th arrive late; at 01:00 on the 12th the API hands back the report it made before.
    sim.addPosts('2026-01-11', 5);
    sim.advanceTime(2 * HOUR);
    const reused = await runCli(args, envAt('midnight', '2026-01-12T01:00:00Z'));
    expect(reused.code, reused.stderr).toBe(0);
    expect(summaryOf(reused).windows).toMatchObject({ planned: 1, loaded: 1 });
    expect(await windowRows('midnight')).toEqual([
      { start: '2026-01-05', end: '2026-01-11', through: '2026-01-10', status: 'loaded' },
    ]);

    // After the reuse period, a new report: the week is complete, late posts included.
    sim.advanceTime(2 * HOUR);
    const fresh = await runCli(args, envAt('midnight', '2026-01-12T03:30:00Z'));
    expect(fresh.code, fresh.stderr).toBe(0);
    expect(await windowRows('midnight')).toEqual([
      { start: '2026-01-05', end: '2026-01-11', through: '2026-01-11', status: 'loaded' },
    ]);
    expect(await exact('midnight', '2026-01-05', '2026-01-11')).toEqual([]);
    const after = await runCli(args, envAt('midnight', '2026-01-12T04:00:00Z'));
    expect(summaryOf(after).windows).toMatchObject({ planned: 0, skipped: 1 });
  });

  it('a resume after midnight of a report asked for before it leaves the last day open', async () => {
    const args = ['backfill', '--from', '2026-01-19', '--to', '2026-01-25'];
    const killed = startCli(args, envAt('resumed', '2026-01-25T23:00:00Z', {}, slow));
    await logged(killed, 'report created');
    killed.child.kill('SIGKILL');
    await killed.done;
    slow.advanceTime(2 * HOUR);
    const resumed = await runCli(args, envAt('resumed', '2026-01-26T01:00:00Z', {}, slow));
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(summaryOf(resumed)).toMatchObject({ reportsCreated: 0, windows: { loaded: 1 } });
    expect(await windowRows('resumed')).toEqual([
      { start: '2026-01-19', end: '2026-01-25', through: '2026-01-24', status: 'loaded' },
    ]);
  });

  it('a report in progress first received longer ago than the reuse period is not resumed: a new one holds newer figures', async () => {
    const args = ['backfill', '--from', '2026-03-02', '--to', '2026-03-08'];
    const killed = startCli(args, envAt('expired', '2026-03-20T10:00:00Z', {}, slow));
    await logged(killed, 'report created');
    killed.child.kill('SIGKILL');
    await killed.done;

    // The week's figures are restated; the run comes back after the API's reuse period.
    reviseDays(slow, '2026-03-02', 7);
    slow.advanceTime(3 * HOUR + GENERATION_MS);
    const later = startCli(args, envAt('expired', '2026-03-20T13:20:00Z', {}, slow));
    await logged(later, 'report created');
    slow.advanceTime(GENERATION_MS + 60_000);
    const done = await later.done;
    expect(done.code, done.stderr).toBe(0);
    expect(done.stderr).toContain("longer ago than the API's reuse period");
    expect(summaryOf(done)).toMatchObject({ reportsCreated: 1, windows: { loaded: 1 } });
    expect(await exact('expired', '2026-03-02', '2026-03-08', slow)).toEqual([]);
  });

  it('an older report never replaces rows loaded since from a newer one, whatever the windows', async () => {
    const week = ['backfill', '--from', '2026-02-02', '--to', '2026-02-08'];
    // The week's run is killed while its report generates.
    const killed = startCli(week, envAt('overlap', '2026-02-20T10:00:00Z', {}, slow));
    await logged(killed, 'report created');
    killed.child.kill('SIGKILL');
    await killed.done;

    // Late data restates the week; its first three days are loaded as one-day windows, with the new figures.
    reviseDays(slow, '2026-02-02', 7);
    const days = startCli(
      ['backfill', '--from', '2026-02-02', '--to', '2026-02-04', '--window-days', '1'],
      envAt('overlap', '2026-02-20T10:20:00Z', {}, slow),
    );
    await logged(days, 'report created', 3);
    slow.advanceTime(GENERATION_MS + 60_000);
    const daysDone = await days.done;
    expect(daysDone.code, daysDone.stderr).toBe(0);
    expect(await exact('overlap', '2026-02-02', '2026-02-04', slow)).toEqual([]);

    // The week's command again, within the reuse period: its report in progress is older than those days, and
    // the API hands that same report back when asked for a new one. Nothing of the days is replaced.
    const again = await runCli(week, envAt('overlap', '2026-02-20T10:40:00Z', {}, slow));
    expect(again.code, again.stderr).toBe(3);
    expect(summaryOf(again).failures).toEqual([
      expect.objectContaining({
        start: '2026-02-02',
        end: '2026-02-08',
        code: 'REPORT_STALE',
        message: expect.stringContaining('until about 2026-02-20 13:00 UTC'),
      }),
    ]);
    expect(await exact('overlap', '2026-02-02', '2026-02-04', slow)).toEqual([]);

    // After the reuse period, a new report: the week loads whole, with the new figures.
    slow.advanceTime(3 * HOUR);
    const later = startCli(week, envAt('overlap', '2026-02-20T14:00:00Z', {}, slow));
    await logged(later, 'report created');
    slow.advanceTime(GENERATION_MS + 60_000);
    const laterDone = await later.done;
    expect(laterDone.code, laterDone.stderr).toBe(0);
    expect(await exact('overlap', '2026-02-02', '2026-02-08', slow)).toEqual([]);
    expect(await windowRows('overlap')).toEqual([
      { start: '2026-02-02', end: '2026-02-08', through: '2026-02-08', status: 'loaded' },
    ]);
  });

  it('a reload counts a window as loaded by another process only from a report as new as its own would be', async () => {
    const args = ['backfill', '--from', '2026-03-02', '--to', '2026-03-08'];
    const first = startCli(args, envAt('others', '2026-03-20T10:00:00Z', {}, slow));
    await logged(first, 'report created');
    // The figures are restated after the first run's report was made; a reload starts hours later and waits for
    // the first run, which then loads its older report.
    reviseDays(slow, '2026-03-02', 7);
    const reload = startCli([...args, '--reload'], envAt('others', '2026-03-20T14:30:00Z', {}, slow));
    await logged(reload, 'waiting for another process');
    slow.advanceTime(4 * HOUR);
    const firstDone = await first.done;
    expect(firstDone.code, firstDone.stderr).toBe(0);
    await logged(reload, 'report created');
    slow.advanceTime(GENERATION_MS + 60_000);
    const reloadDone = await reload.done;
    expect(reloadDone.code, reloadDone.stderr).toBe(0);
    expect(summaryOf(reloadDone).windows).toMatchObject({ loaded: 1, byOthers: 0 });
    expect(await exact('others', '2026-03-02', '2026-03-08', slow)).toEqual([]);
  });

  it('a failed report the API hands back is not polled again: the window fails until the reuse period ends', async () => {
    const args = ['backfill', '--from', '2026-04-06', '--to', '2026-04-12'];
    sim.setFaults({ failReportStartDates: ['2026-04-06'] });
    const polls = () =>
      sim
        .requests()
        .filter(
          (r) =>
            r.method === 'GET' && r.path.startsWith('/v4/reports/posts/') && !r.path.endsWith('/dimensions'),
        ).length;
    const before = polls();
    const first = await runCli(args, envAt('dead', '2026-04-20T10:00:00Z'));
    expect(first.code, first.stderr).toBe(3);
    expect(summaryOf(first).failures).toEqual([
      expect.objectContaining({
        code: 'REPORT_FAILED',
        message: expect.stringContaining('the API returns the same failed report'),
      }),
    ]);
    expect(summaryOf(first).failures[0]?.message).toContain('until about 2026-04-20 13:00 UTC');
    // Polled once, when it failed; asked for again, it came back and was recognised.
    expect(polls() - before).toBe(1);

    // An hour later it is still the same failed report: the run fails the window without polling it.
    sim.advanceTime(HOUR);
    const again = await runCli(args, envAt('dead', '2026-04-20T11:00:00Z'));
    expect(again.code, again.stderr).toBe(3);
    expect(polls() - before).toBe(1);

    // After the reuse period the API makes a new report, and the window loads.
    sim.setFaults({ failReportStartDates: [] });
    sim.advanceTime(3 * HOUR);
    const after = await runCli(args, envAt('dead', '2026-04-20T14:00:00Z'));
    expect(after.code, after.stderr).toBe(0);
    expect(await exact('dead', '2026-04-06', '2026-04-12')).toEqual([]);
  });
});
