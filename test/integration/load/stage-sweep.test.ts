import { beforeAll, describe, expect, it } from 'vitest';
import { Loader } from '../../../src/load/loader.js';
import { migrate } from '../../../src/load/migrate.js';
import { dropStagesNotResumed, listStages, type SweepRun } from '../../../src/load/stage-sweep.js';
import { WindowClaims } from '../../../src/load/window-claims.js';
import { endAttempt, recordReport } from '../../../src/load/window-state.js';
import type { Window } from '../../../src/model/window.js';
import { createTestDatabase } from '../../helpers/database.js';
import { captureLogger, stageReceived, target } from './load-fixtures.js';

const db = await createTestDatabase();
const log = captureLogger();
const loader = new Loader(db.pool, target, log.logger);
const REUSE_MS = 3 * 3_600_000;
const { schema } = target;
const scope = { schema, org: 'default' };

beforeAll(async () => {
  await migrate(db.pool, target, log.logger);
});

/** Stages `window` from report `reportId`, which the window first received at `receivedAt`, as an attempt does. */
async function stageReport(
  window: Window,
  reportId: string,
  receivedAt: string,
  ids: number[],
): Promise<void> {
  const report = await stageReceived(
    db.pool,
    loader,
    scope,
    { window, reportId, at: receivedAt, reuseMs: REUSE_MS },
    ids,
  );
  await recordReport(db.pool, scope, window, report);
}

/** A run over `windows` (its whole range), at `now`. */
function runOver(windows: Window[], now: string): SweepRun {
  return {
    from: windows[0]!.start,
    to: windows.at(-1)!.end,
    windows,
    receivedSince: new Date(new Date(now).getTime() - REUSE_MS),
  };
}

async function stageTables(): Promise<string[]> {
  const { rows } = await db.pool.query<{ name: string }>(
    `SELECT relname::text AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relkind = 'r' AND relname ~ '^stage_[0-9]{8}_' ORDER BY 1`,
    [schema],
  );
  return rows.map((r) => r.name);
}

describe('the stages no window will resume', () => {
  it('are listed with their tables and size, and only those no window resumes are dropped', async () => {
    const week1 = { start: '2026-01-05', end: '2026-01-11' };
    const week2 = { start: '2026-01-12', end: '2026-01-18' };
    const week3 = { start: '2026-01-19', end: '2026-01-25' };
    const week4 = { start: '2026-01-26', end: '2026-02-01' };
    // Resumable: its attempt's report, received within the reuse period, nothing loaded since.
    await stageReport(week1, 'r-resumable', '2026-02-02T10:00:00Z', [1, 2]);
    // Its attempt failed (REPORT_STALE at the commit, say): the next attempt asks for a new report.
    await stageReport(week2, 'r-failed', '2026-02-02T10:00:00Z', [3]);
    await endAttempt(db.pool, scope, week2, 'failed', 'report r-failed is older than the rows loaded');
    // First received longer ago than the reuse period: an identical request gets a newer report.
    await stageReport(week3, 'r-aged', '2026-02-02T06:00:00Z', [4]);
    // Held by a live process: left alone whatever it is.
    await stageReport(week4, 'r-claimed', '2026-02-02T06:00:00Z', [5]);
    const claims = new WindowClaims(db.pool, scope, log.logger, {
      madeSince: new Date('2026-02-02T00:00:00Z'),
      reloads: () => true,
    });
    expect(await claims.claim([week4])).toBe('claimed');

    const listed = await listStages(db.pool, scope);
    expect(listed.map((s) => [s.start, s.reportId, s.tables.length])).toEqual([
      ['2026-01-05', 'r-resumable', 2],
      ['2026-01-12', 'r-failed', 2],
      ['2026-01-19', 'r-aged', 2],
      ['2026-01-26', 'r-claimed', 2],
    ]);
    for (const stage of listed) expect(stage.bytes).toBeGreaterThan(0);

    const dropped = await dropStagesNotResumed(
      db.pool,
      scope,
      runOver([week1, week2, week3, week4], '2026-02-02T11:00:00Z'),
    );
    expect(dropped.map((s) => [s.start, s.why])).toEqual([
      ['2026-01-12', 'another report'],
      ['2026-01-19', 'report too old'],
    ]);
    expect((await listStages(db.pool, scope)).map((s) => s.reportId)).toEqual(['r-resumable', 'r-claimed']);
    await claims.close();
    // Once nobody holds it, the aged stage of week 4 goes too; week 1's is resumed by its window.
    const later = await dropStagesNotResumed(db.pool, scope, runOver([week1, week4], '2026-02-02T11:00:00Z'));
    expect(later.map((s) => [s.start, s.why])).toEqual([['2026-01-26', 'report too old']]);
    const resumed = await loader.openWindow(week1, 'r-resumable');
    expect(resumed.pagesStaged).toBe(1);
  });

  it('drops a stage whose dates another process loaded from a newer report, and one of another grid', async () => {
    const week = { start: '2026-03-02', end: '2026-03-08' };
    const day = { start: '2026-03-02', end: '2026-03-02' };
    // The week's report is older than the day's, which another process loaded: REPORT_STALE at the week's commit.
    await stageReport(week, 'week-old', '2026-03-09T10:00:00Z', [11, 12]);
    await stageReport(day, 'day-new', '2026-03-09T10:30:00Z', [11]);
    await loader.commitWindows([day]);
    await expect(loader.commitWindows([week])).rejects.toMatchObject({ code: 'REPORT_STALE' });
    // Of another grid: two weeks where this run plans one window of fourteen days.
    const other = { start: '2026-03-09', end: '2026-03-15' };
    await stageReport(other, 'r-seven-days', '2026-03-09T10:00:00Z', [13]);
    const fortnight = { start: '2026-03-09', end: '2026-03-22' };

    const dropped = await dropStagesNotResumed(db.pool, scope, runOver([fortnight], '2026-03-09T11:00:00Z'));
    // The first test's resumable week is of January: too old by now, and dropped too.
    expect(dropped.filter((s) => s.start >= '2026-03').map((s) => [s.start, s.end, s.why])).toEqual([
      ['2026-03-02', '2026-03-08', 'loaded since'],
      ['2026-03-09', '2026-03-15', 'another grid'],
    ]);
    expect(await stageTables()).not.toEqual(expect.arrayContaining([expect.stringMatching(/^stage_202603/)]));
  });

  it('lists a stage another session holds whole without waiting for it, its size unknown', async () => {
    const week = { start: '2026-05-04', end: '2026-05-10' };
    await stageReport(week, 'r-busy', '2026-05-11T10:00:00Z', [21]);
    const holder = await db.pool.connect();
    try {
      await holder.query('BEGIN');
      // What a commit attaching the stage as a partition holds until it ends.
      await holder.query(`LOCK TABLE ${schema}.stage_20260504_20260510_posts IN ACCESS EXCLUSIVE MODE`);
      const listed = await listStages(db.pool, scope);
      expect(listed).toContainEqual(
        expect.objectContaining({ start: week.start, reportId: 'r-busy', bytes: null, size: null }),
      );
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
    const free = (await listStages(db.pool, scope)).find((s) => s.reportId === 'r-busy');
    expect(free?.bytes).toBeGreaterThan(0);
  });

  it('drops stage tables no progress row names', async () => {
    await db.pool.query(`CREATE TABLE ${schema}.stage_20260406_20260412_posts (id int)`);
    await db.pool.query(`CREATE TABLE ${schema}.stage_20260406_20260412_segments (id int)`);
    expect(await listStages(db.pool, scope)).toContainEqual(
      expect.objectContaining({ start: '2026-04-06', end: '2026-04-12', reportId: null }),
    );
    const week = { start: '2026-04-06', end: '2026-04-12' };
    const dropped = await dropStagesNotResumed(db.pool, scope, runOver([week], '2026-04-13T11:00:00Z'));
    expect(dropped).toContainEqual(
      expect.objectContaining({
        start: '2026-04-06',
        why: 'no progress',
        tables: ['stage_20260406_20260412_posts', 'stage_20260406_20260412_segments'],
      }),
    );
    expect(await stageTables()).not.toContain('stage_20260406_20260412_posts');
  });
});
