import { beforeAll, describe, expect, it } from 'vitest';
import { StoreError } from '../../../src/errors.js';
import { Loader } from '../../../src/load/loader.js';
import { migrate } from '../../../src/load/migrate.js';
import { WindowClaims } from '../../../src/load/window-claims.js';
import { endAttempt, readWindow, receiveReport } from '../../../src/load/window-state.js';
import type { Window } from '../../../src/model/window.js';
import { createTestDatabase } from '../../helpers/database.js';
import { captureLogger, idsOf, stageReceived, target } from './load-fixtures.js';

const db = await createTestDatabase();
const log = captureLogger();
const loader = new Loader(db.pool, target, log.logger);
const REUSE_MS = 3 * 3_600_000;
const { schema } = target;
const scope = { schema, org: 'default' };

beforeAll(async () => {
  await migrate(db.pool, target, log.logger);
});

/** Stages `window` from report `reportId`, which the window first received at `receivedAt`. */
async function stageReport(
  window: Window,
  reportId: string,
  receivedAt: string,
  ids: number[],
): Promise<void> {
  await stageReceived(db.pool, loader, scope, { window, reportId, at: receivedAt, reuseMs: REUSE_MS }, ids);
}

describe('the age of a window report', () => {
  it('is its first receipt less the reuse period, whatever receipt comes after', async () => {
    const w = { start: '2026-05-04', end: '2026-05-10' };
    const first = await receiveReport(db.pool, scope, w, 'r-age', new Date('2026-05-11T01:00:00Z'), REUSE_MS);
    expect(first).toMatchObject({ first: true, outcome: 'received' });
    expect(first.madeAt.toISOString()).toBe('2026-05-10T22:00:00.000Z');
    const again = await receiveReport(db.pool, scope, w, 'r-age', new Date('2026-05-11T02:30:00Z'), REUSE_MS);
    expect(again).toMatchObject({ first: false, madeAt: first.madeAt, receivedAt: first.receivedAt });
  });

  it('a commit never replaces rows loaded from a newer report with an older report of overlapping dates', async () => {
    const week = { start: '2026-06-01', end: '2026-06-07' };
    const day = { start: '2026-06-01', end: '2026-06-01' };
    // The week's report was received first; the day's, later, is loaded first.
    await stageReport(week, 'week-old', '2026-06-10T10:00:00Z', [101, 102]);
    await stageReport(day, 'day-new', '2026-06-10T10:30:00Z', [101]);
    await loader.commitWindows([day]);
    const error = await loader.commitWindows([week]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreError);
    expect(error).toMatchObject({ code: 'REPORT_STALE' });
    expect((error as Error).message).toContain('report week-old of window 2026-06-01..2026-06-07 is older');
    expect(await idsOf(db.pool, day)).toEqual(['101']);
    expect(await readWindow(db.pool, scope, day)).toMatchObject({
      status: 'loaded',
      reportId: 'day-new',
      reportMadeAt: new Date('2026-06-10T07:30:00Z'),
    });

    // A newer report of the week replaces the day.
    await stageReport(week, 'week-new', '2026-06-10T11:00:00Z', [101, 102]);
    await loader.commitWindows([week]);
    expect(await readWindow(db.pool, scope, day)).toBeNull();
    expect(await readWindow(db.pool, scope, week)).toMatchObject({ status: 'loaded', reportId: 'week-new' });
  });

  it('ending an attempt never touches a window another process loaded meanwhile', async () => {
    const w = { start: '2026-07-06', end: '2026-07-12' };
    await stageReport(w, 'loaded-by-other', '2026-07-20T10:00:00Z', [301]);
    await loader.commitWindows([w]);
    await endAttempt(db.pool, scope, w, 'pending', 'claim lost before the commit');
    expect(await readWindow(db.pool, scope, w)).toMatchObject({ status: 'loaded', lastError: null });
  });

  it('a claim finds a window done by another process by the age of its data', async () => {
    const w = { start: '2026-08-03', end: '2026-08-09' };
    await stageReport(w, 'aged', '2026-08-20T10:00:00Z', [401]);
    await loader.commitWindows([w]);
    const claimsOf = (madeSince: string, reload: boolean) =>
      new WindowClaims(db.pool, scope, log.logger, {
        madeSince: new Date(madeSince),
        reloads: () => reload,
      });
    // A reload started after that report was received wants a report as new as its own.
    const later = claimsOf('2026-08-20T08:00:00Z', true);
    expect(await later.claim([w])).toBe('claimed');
    await later.close();
    const earlier = claimsOf('2026-08-20T06:00:00Z', true);
    expect(await earlier.claim([w])).toBe('done');
    await earlier.close();
    // A run that does not reload it takes it as done once it is loaded complete, whatever its age.
    const plain = claimsOf('2026-08-20T08:00:00Z', false);
    expect(await plain.claim([w])).toBe('done');
    await plain.close();
  });

  it('a run whose claims session was lost finds the window loaded by the process that took it, and leaves it', async () => {
    const w = { start: '2026-09-07', end: '2026-09-13' };
    const freshness = { madeSince: new Date('2026-09-20T06:00:00Z'), reloads: () => true };
    const lost = new WindowClaims(db.pool, scope, log.logger, freshness);
    expect(await lost.claim([w])).toBe('claimed');
    const { rows } = await db.pool.query<{ ok: boolean }>('SELECT pg_terminate_backend($1) AS ok', [
      lost.pid,
    ]);
    expect(rows[0]?.ok).toBe(true);
    const other = new WindowClaims(db.pool, scope, log.logger, freshness);
    // The other process claims the window once the lost session is gone, and loads it.
    while ((await other.claim([w])) !== 'claimed') await new Promise((r) => setTimeout(r, 20));
    await stageReport(w, 'by-the-other', '2026-09-20T10:00:00Z', [501]);
    await loader.commitWindows([w]);
    await other.close();
    expect(await lost.holds([w])).toBe('done');
    await lost.close();
    expect(await readWindow(db.pool, scope, w)).toMatchObject({
      status: 'loaded',
      reportId: 'by-the-other',
    });
  });
});
