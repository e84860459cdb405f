import { beforeAll, describe, expect, it } from 'vitest';
import { withTransaction } from '../../../src/load/database.js';
import { Loader } from '../../../src/load/loader.js';
import { migrate } from '../../../src/load/migrate.js';
import {
  advanceCursorTo,
  dropEmptyPartitions,
  readTarget,
  resetTarget,
  writeTarget,
} from '../../../src/load/window-state.js';
import { createTestDatabase } from '../../helpers/database.js';
import { captureLogger, load, post, target } from '../load/load-fixtures.js';

const db = await createTestDatabase();
const log = captureLogger();
const loader = new Loader(db.pool, target, log.logger);
const scope = { schema: target.schema, org: 'default' };

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

describe('resetTarget (--reset)', () => {
  it('drops the partitions, stages and record with the cursor, so that windows of another grid load afterwards', async () => {
    await writeTarget(db.pool, scope, target.postIdField, { brands: ['x'] });
    await load(loader, { start: '2026-01-05', end: '2026-01-11' }, 'a', [[post(1, { brand: 'x' })]]);
    await load(loader, { start: '2026-01-12', end: '2026-01-18' }, 'b', [
      [post(2, { brand: 'y' }), post(4, { brand: 'y' })],
    ]);
    await loader.openWindow({ start: '2026-01-19', end: '2026-01-25' }, 'half');
    await advanceCursorTo(db.pool, scope, '2026-01-18');
    // The two windows' year partition of each table.
    expect(await partitions()).toHaveLength(2);
    const removed = await withTransaction(db.pool, undefined, (client) =>
      resetTarget(client, scope, target.postIdField, { brands: ['z'] }),
    );
    expect(removed).toEqual({ windows: 2, posts: 3 });
    // Emptied by the reset's transaction, dropped after it (as a run does), nothing else holding the parents.
    expect(await dropEmptyPartitions(db.pool, scope)).toEqual({ dropped: 2, kept: 0 });
    expect(await partitions()).toEqual([]);
    const left = await db.pool.query(
      `SELECT (SELECT count(*)::int FROM post_reports.report_windows) AS windows,
              (SELECT count(*)::int FROM post_reports.stage_progress) AS stages,
              (SELECT count(*)::int FROM pg_tables WHERE schemaname = 'post_reports' AND tablename ~ '^stage_[0-9]{8}_') AS tables`,
    );
    expect(left.rows[0]).toEqual({ windows: 0, stages: 0, tables: 0 });
    expect(await readTarget(db.pool, scope)).toEqual({
      postIdField: target.postIdField,
      filters: { brands: ['z'] },
      cursorDate: null,
      fieldSelection: { mode: 'all' },
    });
    // A 14-day window over both old weeks: nothing old is left to half-cover.
    expect(await load(loader, { start: '2026-01-05', end: '2026-01-18' }, 'c', [[post(3, {})]])).toBe(1);
    expect(await partitions()).toEqual(['post_custom_segments_y2026', 'posts_y2026']);
  });
});
