import pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { StoreError } from '../../../src/errors.js';
import { Loader } from '../../../src/load/loader.js';
import { migrate } from '../../../src/load/migrate.js';
import type { PreparedPage, StagedPage } from '../../../src/load/staging.js';
import { ExactNumber, type FieldValue } from '../../../src/model/post-record.js';
import type { Window } from '../../../src/model/window.js';
import { createTestDatabase } from '../../helpers/database.js';
import { captureLogger, load, post, snapshot, target } from './load-fixtures.js';

// Each page of an attempt is planned against the columns of posts the page before it saw (a run passes them on);
// another window, another process or an operator may change posts meanwhile.
const db = await createTestDatabase();
const log = captureLogger();
const loader = new Loader(db.pool, target, log.logger);
// Another process loading into the same schema.
const other = new Loader(db.pool, target, captureLogger().logger);

beforeAll(async () => {
  await migrate(db.pool, target, log.logger);
});

function page(index: number, last: boolean, posts: Array<[number, Record<string, FieldValue>]>): StagedPage {
  return { index, nextPage: last ? null : `page-${index + 1}`, posts: posts.map(([id, f]) => post(id, f)) };
}

/** Prepares and writes a page as a run does: planned against the previous page's view of the columns. */
async function stage(window: Window, staged: StagedPage, previous?: PreparedPage): Promise<PreparedPage> {
  const prepared = await loader.preparePage(window, staged, undefined, previous?.registry);
  await loader.writePage(prepared);
  return prepared;
}

async function values(window: Window, column: string): Promise<Array<{ id: string; v: string | null }>> {
  const result = await db.pool.query<{ id: string; v: string | null }>(
    `SELECT platform_post_id::text AS id, ${pg.escapeIdentifier(column)}::text AS v FROM post_reports.posts
      WHERE _window_start = $1 ORDER BY platform_post_id`,
    [window.start],
  );
  return result.rows;
}

async function columnType(column: string): Promise<string | undefined> {
  const result = await db.pool.query<{ t: string }>(
    `SELECT format_type(atttypid, atttypmod) AS t FROM pg_attribute
      WHERE attrelid = 'post_reports.posts'::regclass AND attname = $1 AND NOT attisdropped`,
    [column],
  );
  return result.rows[0]?.t;
}

/**
 * An operator's retype of a column of posts, as the storage model says: posts_latest, which holds the column, is
 * dropped first (a run's start makes it again).
 */
function retypedByHand(alter: string): string {
  return `BEGIN; DROP VIEW IF EXISTS post_reports.posts_latest; ${alter}; COMMIT`;
}

describe('pages planned against the columns the page before saw', () => {
  it('still give a field the column another window added meanwhile, once', async () => {
    const w = { start: '2026-01-05', end: '2026-01-05' };
    await loader.openWindow(w, 'added-elsewhere');
    const first = await stage(w, page(0, false, [[1, { likes: 3 }]]));
    expect(first.registry.byField.has('saves_total')).toBe(false);
    await load(other, { start: '2026-01-06', end: '2026-01-06' }, 'other-adds', [
      [post(50, { saves_total: 9 })],
    ]);
    await stage(w, page(1, true, [[2, { likes: 4, saves_total: 11 }]]), first);
    expect((await loader.commitWindows([w])).rows).toBe(2);
    expect(await columnType('saves_total')).toBe('bigint');
    expect(await values(w, 'saves_total')).toEqual([
      { id: '1', v: null },
      { id: '2', v: '11' },
    ]);
  });

  it('read the columns again before failing a page on a value they reject: an operator widened the column', async () => {
    const w = { start: '2026-01-12', end: '2026-01-12' };
    await loader.openWindow(w, 'operator-widens');
    const first = await stage(w, page(0, false, [[1, { label_code: 12 }]]));
    expect(first.registry.byField.get('label_code')?.type).toBe('bigint');
    await db.pool.query(retypedByHand('ALTER TABLE post_reports.posts ALTER COLUMN label_code TYPE text'));
    await stage(w, page(1, true, [[2, { label_code: 'A-7' }]]), first);
    expect((await loader.commitWindows([w])).rows).toBe(2);
    expect(await values(w, 'label_code')).toEqual([
      { id: '1', v: '12' },
      { id: '2', v: 'A-7' },
    ]);
  });

  it('go into a column another window widened from bigint to numeric, exactly', async () => {
    const w = { start: '2026-01-19', end: '2026-01-19' };
    await loader.openWindow(w, 'widened-elsewhere');
    const first = await stage(w, page(0, false, [[1, { views_total: new ExactNumber('9007199254740993') }]]));
    await load(other, { start: '2026-01-20', end: '2026-01-20' }, 'other-widens', [
      [post(51, { views_total: new ExactNumber('2.5') })],
    ]);
    expect(await columnType('views_total')).toBe('numeric');
    // The page fits the bigint the page before saw: it is staged as bigint.
    await stage(w, page(1, true, [[2, { views_total: 7 }]]), first);
    expect((await loader.commitWindows([w])).rows).toBe(2);
    expect(await values(w, 'views_total')).toEqual([
      { id: '1', v: '9007199254740993' },
      { id: '2', v: '7' },
    ]);
  });

  it('fail the commit, naming the column, when it was retyped under staged values, and keep the old rows', async () => {
    const w = { start: '2026-01-26', end: '2026-01-26' };
    await load(loader, w, 'before', [[post(1, { score_doc: 5 }), post(2, { score_doc: 6 })]]);
    await loader.openWindow(w, 'retyped-under-stage');
    const first = await stage(w, page(0, false, [[1, { score_doc: 50 }]]));
    await db.pool.query(
      retypedByHand(
        'ALTER TABLE post_reports.posts ALTER COLUMN score_doc TYPE jsonb USING to_jsonb(score_doc)',
      ),
    );
    // Numbers fit the bigint the page before saw, and no cast from bigint into jsonb keeps what a fresh staging
    // would write for every value: the window is loaded again instead.
    await stage(w, page(1, true, [[2, { score_doc: 60 }]]), first);
    const before = await snapshot(db.pool);
    const error = await loader.commitWindows([w]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).code).toBe('SCHEMA_MISMATCH');
    expect((error as StoreError).message).toMatch(
      /column "score_doc" of posts became jsonb while window 2026-01-26\.\.2026-01-26 was staged as bigint: load the window again/,
    );
    expect(await snapshot(db.pool)).toEqual(before);
    expect(await values(w, 'score_doc')).toEqual([
      { id: '1', v: '5' },
      { id: '2', v: '6' },
    ]);
  });
});
