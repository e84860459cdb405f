import { beforeAll, describe, expect, it } from 'vitest';
import { Loader } from '../../../src/load/loader.js';
import { migrate } from '../../../src/load/migrate.js';
import { clearTarget } from '../../../src/pipeline/state.js';
import { createTestDatabase } from '../../helpers/database.js';
import { captureLogger, load, post, target } from '../load/load-fixtures.js';

const db = await createTestDatabase();
const log = captureLogger();
const loader = new Loader(db.pool, target, log.logger);

beforeAll(async () => {
  await migrate(db.pool, target, log.logger);
});

async function partitions(): Promise<string[]> {
  const result = await db.pool.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent IN ('post_reports.posts'::regclass, 'post_reports.post_custom_segments'::regclass)
      ORDER BY 1`,
  );
  return result.rows.map((r) => r.name);
}

describe('clearTarget (--reset)', () => {
  it('drops the window partitions with their record, so that windows of another grid load afterwards', async () => {
    await load(loader, { start: '2026-01-05', end: '2026-01-11' }, 'a', [[post(1, { brand: 'x' })]]);
    await load(loader, { start: '2026-01-12', end: '2026-01-18' }, 'b', [[post(2, { brand: 'y' })]]);
    expect(await partitions()).toHaveLength(4);
    await clearTarget(db.pool, target.schema);
    expect(await partitions()).toEqual([]);
    const windows = await db.pool.query('SELECT count(*)::int AS n FROM post_reports.report_windows');
    expect(windows.rows[0]).toEqual({ n: 0 });
    // A 14-day window over both old weeks: nothing old is left to half-cover.
    expect(await load(loader, { start: '2026-01-05', end: '2026-01-18' }, 'c', [[post(3, {})]])).toBe(1);
    expect(await partitions()).toEqual(['post_custom_segments_20260105_20260118', 'posts_20260105_20260118']);
  });
});
