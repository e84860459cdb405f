import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StoreError } from '../../../src/errors.js';
import { createPool } from '../../../src/load/database.js';
import { Loader } from '../../../src/load/loader.js';
import { migrate } from '../../../src/load/migrate.js';
import type { MappedPost } from '../../../src/model/post-record.js';
import type { Window } from '../../../src/model/window.js';
import { Secret } from '../../../src/secret.js';
import { createTestDatabase } from '../../helpers/database.js';
import { lockWait } from '../../helpers/lock-wait.js';
import { captureLogger, idsOf, load, post, snapshot, stagePage, target } from './load-fixtures.js';

const db = await createTestDatabase();
const log = captureLogger();
const APP = 'loader-under-test';
const pool = createPool(
  {
    url: new Secret(db.url),
    schema: target.schema,
    organization: 'default',
    statementTimeoutMs: 60_000,
    lockWaitMs: 1000,
    partitionPeriod: 'year',
  },
  log.logger,
  { max: 3, applicationName: APP },
);
const loader = new Loader(pool, target, log.logger);

beforeAll(async () => {
  await migrate(pool, target, log.logger);
});
afterAll(async () => {
  await pool.end();
});

function page(ids: readonly number[], tag: string): MappedPost[] {
  return ids.map((id) => post(id, { tag, views: id }, [{ name: 'Region', value: tag }]));
}

/**
 * Holds the window's report_windows row locked, runs `action` (which blocks on it mid-transaction), then
 * terminates the loader's backend that waits for the lock, and returns the action's error.
 */
async function killWhileBlocked(window: Window, action: () => Promise<unknown>): Promise<unknown> {
  const blocker = await db.pool.connect();
  try {
    await blocker.query('BEGIN');
    await blocker.query(
      'SELECT 1 FROM post_reports.report_windows WHERE window_start = $1 AND window_end = $2 FOR UPDATE',
      [window.start, window.end],
    );
    const outcome = action().then(
      () => undefined,
      (error: unknown) => error,
    );
    const { pid } = await lockWait(blocker, APP);
    await blocker.query('SELECT pg_terminate_backend($1)', [pid]);
    return await outcome;
  } finally {
    await blocker.query('ROLLBACK');
    blocker.release();
  }
}

describe('a connection killed mid-window', () => {
  it('during staging leaves the old contents and the progress of committed pages; the re-run is exact', async () => {
    const w = { start: '2026-01-01', end: '2026-01-07' };
    await load(loader, w, 'old', [page([1, 2, 3], 'old')]);
    const before = await snapshot(db.pool);
    const pages = [page([10, 11], 'new'), page([12], 'new'), page([13, 14], 'new')];
    await loader.openWindow(w, 'new');
    await stagePage(loader, w, { index: 0, nextPage: 'g1', posts: pages[0]! });
    const error = await killWhileBlocked(w, () =>
      stagePage(loader, w, { index: 1, nextPage: 'g2', posts: pages[1]! }),
    );
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).code).toBe('DB_ERROR');
    expect(await snapshot(db.pool)).toEqual(before);

    // The re-run resumes after the last committed page: page 1 was rolled back with its progress.
    expect(await loader.openWindow(w, 'new')).toEqual({
      reportId: 'new',
      pagesStaged: 1,
      nextPage: 'g1',
      rowsStaged: 2,
    });
    await stagePage(loader, w, { index: 1, nextPage: 'g2', posts: pages[1]! });
    await stagePage(loader, w, { index: 2, nextPage: null, posts: pages[2]! });
    expect((await loader.commitWindows([w])).rows).toBe(5);
    expect(await idsOf(db.pool, w)).toEqual(['10', '11', '12', '13', '14']);
    const resumed = await snapshot(db.pool);
    await load(loader, w, 'new', pages);
    expect(await snapshot(db.pool)).toEqual(resumed);
  });

  it('during the swap leaves the old contents; committing again is exact', async () => {
    const w = { start: '2026-02-01', end: '2026-02-07' };
    await load(loader, w, 'old', [page([1, 2, 3], 'old')]);
    const before = await snapshot(db.pool);
    const pages = [page([20, 21], 'swap'), page([22], 'swap')];
    await loader.openWindow(w, 'swap');
    await stagePage(loader, w, { index: 0, nextPage: 'g1', posts: pages[0]! });
    await stagePage(loader, w, { index: 1, nextPage: null, posts: pages[1]! });
    const error = await killWhileBlocked(w, () => loader.commitWindows([w]));
    expect(error).toBeInstanceOf(StoreError);
    expect(await snapshot(db.pool)).toEqual(before);
    const status = await db.pool.query(
      `SELECT w.status, (SELECT DISTINCT _report_id FROM post_reports.posts WHERE _window_start = $1) AS loaded_from
         FROM post_reports.report_windows w WHERE window_start = $1`,
      [w.start],
    );
    expect(status.rows).toEqual([{ status: 'loaded', loaded_from: 'old' }]);

    expect((await loader.commitWindows([w])).rows).toBe(3);
    expect(await idsOf(db.pool, w)).toEqual(['20', '21', '22']);
    const committed = await snapshot(db.pool);
    await load(loader, w, 'swap', pages);
    expect(await snapshot(db.pool)).toEqual(committed);
  });
});
