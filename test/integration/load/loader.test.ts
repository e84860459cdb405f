import pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { DataError, StoreError } from '../../../src/errors.js';
import { decodePage } from '../../../src/extract/page-decoder.js';
import { Loader } from '../../../src/load/loader.js';
import { migrate } from '../../../src/load/migrate.js';
import { stageNames } from '../../../src/load/stage-progress.js';
import { CopyPools } from '../../../src/load/tape-encoding.js';
import type { PageTape } from '../../../src/model/page-tape.js';
import { ExactNumber, JsonDocument, type MappedPost } from '../../../src/model/post-record.js';
import type { Window } from '../../../src/model/window.js';
import { createTestDatabase } from '../../helpers/database.js';
import { lockWait } from '../../helpers/lock-wait.js';
import { captureLogger, idsOf, load, post, snapshot, stageAll, stagePage, target } from './load-fixtures.js';

const db = await createTestDatabase();
const log = captureLogger();
const loader = new Loader(db.pool, target, log.logger);

beforeAll(async () => {
  await migrate(db.pool, target, log.logger);
});

const seg = (name: string, value: string) => ({ name, value });

function windowPosts(ids: readonly number[], tag: string): MappedPost[] {
  return ids.map((id) =>
    post(id, { brand: `b${id}`, engagements: id * 10, roas: new ExactNumber(`${id}.25`), note: tag }, [
      seg('Region', id % 2 ? 'North' : 'South'),
      seg('Campaign Type', 'Always On'),
    ]),
  );
}

async function reportWindow(window: Window): Promise<Record<string, unknown> | undefined> {
  const result = await db.pool.query(
    `SELECT status, report_id, pages_staged, row_count::int AS row_count, finished_at IS NOT NULL AS finished
       FROM post_reports.report_windows WHERE window_start = $1 AND window_end = $2`,
    [window.start, window.end],
  );
  return result.rows[0];
}

async function columnType(column: string): Promise<string | undefined> {
  const result = await db.pool.query<{ t: string }>(
    `SELECT data_type AS t FROM information_schema.columns
      WHERE table_schema = 'post_reports' AND table_name = 'posts' AND column_name = $1`,
    [column],
  );
  return result.rows[0]?.t;
}

describe('window-atomic loads', () => {
  it('reloading a window yields identical tables', async () => {
    const w = { start: '2026-01-01', end: '2026-01-07' };
    const pages = [windowPosts([1, 2, 3], 'a'), windowPosts([4, 5], 'a')];
    expect(await load(loader, w, 'r1', pages)).toBe(5);
    const first = await snapshot(db.pool);
    expect(first.posts).toHaveLength(5);
    expect(first.segments).toHaveLength(10);
    expect(await reportWindow(w)).toEqual({
      status: 'loaded',
      report_id: 'r1',
      pages_staged: 2,
      row_count: 5,
      finished: true,
    });
    expect(await load(loader, w, 'r1', pages)).toBe(5);
    expect(await snapshot(db.pool)).toEqual(first);
  });

  it('inserts each stage into its period partition, keyed, leaving no stage behind', async () => {
    const w = { start: '2026-01-15', end: '2026-01-21' };
    await load(loader, w, 'p1', [windowPosts([7, 8], 'p')]);
    await load(loader, w, 'p2', [windowPosts([9], 'p')]);
    // posts by their primary key, segments by a unique index on hashes of name and value (migration 009).
    const tables = await db.pool.query<{ name: string; parent: string | null; keyed: boolean }>(
      `SELECT c.relname AS name, p.relname AS parent,
              EXISTS (SELECT 1 FROM pg_index x WHERE x.indrelid = c.oid AND x.indisunique) AS keyed
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         LEFT JOIN pg_inherits i ON i.inhrelid = c.oid LEFT JOIN pg_class p ON p.oid = i.inhparent
        WHERE n.nspname = 'post_reports' AND c.relkind = 'r' AND (c.relname ~ '_y2026$' OR c.relname ~ '^stage_[0-9]')
        ORDER BY 1`,
    );
    expect(tables.rows).toEqual([
      { name: 'post_custom_segments_y2026', parent: 'post_custom_segments', keyed: true },
      { name: 'posts_y2026', parent: 'posts', keyed: true },
    ]);
    const rows = await db.pool.query<{ id: string; report: string }>(
      `SELECT platform_post_id::text AS id, _report_id AS report FROM post_reports.posts WHERE _window_start = $1`,
      [w.start],
    );
    expect(rows.rows).toEqual([{ id: '9', report: 'p2' }]);
  });

  it('a post that disappeared from a re-run window is gone, with its segments', async () => {
    const w = { start: '2026-01-01', end: '2026-01-07' };
    await load(loader, w, 'r2', [windowPosts([1, 2, 3], 'b')]);
    expect(await idsOf(db.pool, w)).toEqual(['1', '2', '3']);
    const segments = await db.pool.query(
      `SELECT count(*)::int AS n FROM post_reports.post_custom_segments WHERE platform_post_id IN (4, 5)`,
    );
    expect(segments.rows[0]).toEqual({ n: 0 });
    // An empty report (one empty page) empties the window.
    await load(loader, w, 'r3', [[]]);
    expect(await idsOf(db.pool, w)).toEqual([]);
    expect(await reportWindow(w)).toMatchObject({ status: 'loaded', row_count: 0 });
  });

  it("fills the first window's new period partitions before attaching them with every index of the parents", async () => {
    // An index an operator added to posts: the attach builds it on the new partition too.
    await db.pool.query('CREATE INDEX posts_brand_idx ON post_reports.posts (brand)');
    try {
      const w = { start: '2032-02-01', end: '2032-02-07' };
      // Post 7 twice: the keys are built at the attach, and fail it as they fail an insert.
      const pages = [
        [post(7, { brand: 'first' }, [seg('Region', 'North')]), post(8, {}, [seg('Region', 'South')])],
        [post(7, { brand: 'last' }, [seg('Region', 'West'), seg('Tier', 'Gold')])],
      ];
      expect(await load(loader, w, 'n1', pages)).toBe(2);
      const filled = () =>
        log
          .lines()
          .filter((l) => String(l.msg).startsWith("the period's partitions made with the window's rows"))
          .map((l) => String(l.window))
          .filter((label) => label >= '2032');
      expect(filled()).toEqual(['2032-02-01..2032-02-07']);
      const posts = await db.pool.query(
        `SELECT platform_post_id::text AS id, brand FROM post_reports.posts_y2032 ORDER BY 1`,
      );
      expect(posts.rows).toEqual([
        { id: '7', brand: 'last' },
        { id: '8', brand: null },
      ]);
      const segments = await db.pool.query(
        `SELECT platform_post_id || ' ' || name || '=' || value AS s FROM post_reports.post_custom_segments_y2032 ORDER BY 1`,
      );
      expect(segments.rows.map((r) => r.s)).toEqual(['7 Region=West', '7 Tier=Gold', '8 Region=South']);
      // Each partition has one index for each of its parent's, attached to it, and no constraint of its own left.
      const indexes = await db.pool.query<{
        partition: string;
        parents: number;
        attached: number;
        checks: number;
      }>(
        `SELECT c.relname AS partition,
                (SELECT count(*)::int FROM pg_index x WHERE x.indrelid = i.inhparent) AS parents,
                (SELECT count(*)::int FROM pg_index x JOIN pg_inherits h ON h.inhrelid = x.indexrelid
                  WHERE x.indrelid = c.oid) AS attached,
                (SELECT count(*)::int FROM pg_constraint k WHERE k.conrelid = c.oid AND k.contype = 'c') AS checks
           FROM pg_class c JOIN pg_inherits i ON i.inhrelid = c.oid
          WHERE c.relnamespace = 'post_reports'::regnamespace AND c.relname ~ '_y2032$' ORDER BY 1`,
      );
      expect(indexes.rows).toEqual([
        { partition: 'post_custom_segments_y2032', parents: 2, attached: 2, checks: 0 },
        { partition: 'posts_y2032', parents: 3, attached: 3, checks: 0 },
      ]);
      // The key holds: the next window of the period goes in through the parent.
      const next = { start: '2032-02-08', end: '2032-02-14' };
      expect(await load(loader, next, 'n2', [[post(7, {}, [seg('Region', 'West')])]])).toBe(1);
      expect(filled()).toEqual(['2032-02-01..2032-02-07']);
      await expect(
        db.pool.query(
          `INSERT INTO post_reports.posts_y2032 (_org, platform_post_id, _window_start, _window_end, _report_id)
           VALUES ('default', 8, '2032-02-01', '2032-02-07', 'x')`,
        ),
      ).rejects.toThrow(/duplicate key/);
      // Another period setting puts a window where its dates already are, making nothing; its own new periods
      // are made too, here by the window's stage (keyed-stage.test.ts), which repeats no post id.
      const monthly = new Loader(db.pool, { ...target, partitionPeriod: 'month' }, log.logger);
      await load(monthly, { start: '2032-03-01', end: '2032-03-01' }, 'm1', [
        [post(9, {}, [seg('Region', 'East')])],
      ]);
      await load(monthly, { start: '2033-03-01', end: '2033-03-01' }, 'm2', [
        [post(9, {}, [seg('Region', 'East')])],
      ]);
      const where = await db.pool.query(
        `SELECT tableoid::regclass::text AS t, _window_start::text AS d FROM post_reports.post_custom_segments
          WHERE platform_post_id = 9 AND _window_start >= '2032-03-01' ORDER BY 2`,
      );
      expect(filled()).toEqual(['2032-02-01..2032-02-07']);
      const attached = log
        .lines()
        .filter((l) => l.msg === "the window's stage attached as its period's partitions")
        .map((l) => String(l.window))
        .filter((label) => label >= '2032');
      expect(attached).toEqual(['2033-03-01..2033-03-01']);
      expect(where.rows).toEqual([
        { t: 'post_reports.post_custom_segments_y2032', d: '2032-03-01' },
        { t: 'post_reports.post_custom_segments_m203303', d: '2033-03-01' },
      ]);
    } finally {
      await db.pool.query('DROP INDEX post_reports.posts_brand_idx');
    }
  });

  it('puts the first window of a period through the parents when an operator watches them with a trigger', async () => {
    await db.pool.query(`CREATE TABLE post_reports.audit (id bigint)
      ; CREATE FUNCTION post_reports.audit() RETURNS trigger LANGUAGE plpgsql AS
        $$ BEGIN INSERT INTO post_reports.audit VALUES (NEW.platform_post_id); RETURN NEW; END $$
      ; CREATE TRIGGER audit AFTER INSERT ON post_reports.posts FOR EACH ROW EXECUTE FUNCTION post_reports.audit()`);
    try {
      const w = { start: '2034-05-01', end: '2034-05-07' };
      expect(await load(loader, w, 't1', [[post(11, {}, [seg('Region', 'North')]), post(12)]])).toBe(2);
      const audited = await db.pool.query('SELECT id::text AS id FROM post_reports.audit ORDER BY 1');
      expect(audited.rows).toEqual([{ id: '11' }, { id: '12' }]);
      expect(await idsOf(db.pool, w)).toEqual(['11', '12']);
    } finally {
      await db.pool.query('DROP TRIGGER audit ON post_reports.posts; DROP TABLE post_reports.audit');
      await db.pool.query('DROP FUNCTION post_reports.audit()');
    }
  });

  it('a reload rewrites only the segment values that changed, and ends with exactly the new ones', async () => {
    const w = { start: '2026-01-22', end: '2026-01-28' };
    await load(loader, w, 's1', [
      [post(1, {}, [seg('Region', 'North'), seg('Tier', 'Gold')]), post(2, {}, [seg('Region', 'South')])],
      [post(3, {}, [seg('Region', 'East')])],
    ]);
    const rows = async () => {
      const { rows } = await db.pool.query<{ row: string; xmin: string }>(
        `SELECT platform_post_id || ' ' || name || '=' || value AS row, xmin::text AS xmin
           FROM post_reports.post_custom_segments WHERE _window_start = $1 ORDER BY 1`,
        [w.start],
      );
      return new Map(rows.map((r) => [r.row, r.xmin]));
    };
    const before = await rows();
    // Post 1 keeps one value and changes the other, post 2 is unchanged, post 3 is gone, post 4 is new.
    await load(loader, w, 's2', [
      [post(2, {}, [seg('Region', 'South')]), post(1, {}, [seg('Region', 'North'), seg('Tier', 'Silver')])],
      [post(4, {}, [seg('Region', 'West')])],
    ]);
    const after = await rows();
    expect([...after.keys()]).toEqual(['1 Region=North', '1 Tier=Silver', '2 Region=South', '4 Region=West']);
    // The values staged again are the rows loaded before, not copies of them; the others were written anew.
    expect(after.get('1 Region=North')).toBe(before.get('1 Region=North'));
    expect(after.get('2 Region=South')).toBe(before.get('2 Region=South'));
    const loadedBefore = new Set(before.values());
    expect(loadedBefore.has(after.get('1 Tier=Silver')!)).toBe(false);
    expect(loadedBefore.has(after.get('4 Region=West')!)).toBe(false);
    // The posts themselves are always written anew: their report and load time change.
    expect(await idsOf(db.pool, w)).toEqual(['1', '2', '4']);
  });

  it('windows of another size replace the old ones without counting a date twice or losing one', async () => {
    const a = { start: '2026-02-01', end: '2026-02-07' };
    const b = { start: '2026-02-08', end: '2026-02-14' };
    await load(loader, a, 'ra', [windowPosts([1, 2], 'week')]);
    await load(loader, b, 'rb', [windowPosts([1, 3], 'week')]);
    const c = { start: '2026-02-01', end: '2026-02-10' };
    const d = { start: '2026-02-11', end: '2026-02-20' };
    await stageAll(loader, c, 'rc', [windowPosts([1, 2, 3], 'ten')]);
    const before = await snapshot(db.pool);
    // C alone would cover only part of B: refused, nothing changed.
    const error = await loader.commitWindows([c]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).message).toMatch(/2026-02-08\.\.2026-02-14 is only partly covered/);
    expect(await snapshot(db.pool)).toEqual(before);
    await stageAll(loader, d, 'rd', [windowPosts([4], 'ten')]);
    expect((await loader.commitWindows([c, d])).rows).toBe(4);
    const windows = await db.pool.query<{ s: string; e: string; n: number }>(
      `SELECT _window_start::text AS s, _window_end::text AS e, count(*)::int AS n FROM post_reports.posts
        WHERE _window_start >= '2026-02-01' AND _window_start <= '2026-02-28' GROUP BY 1, 2 ORDER BY 1`,
    );
    expect(windows.rows).toEqual([
      { s: '2026-02-01', e: '2026-02-10', n: 3 },
      { s: '2026-02-11', e: '2026-02-20', n: 1 },
    ]);
    expect(await reportWindow(a)).toBeUndefined();
    expect(await reportWindow(b)).toBeUndefined();
    expect(await reportWindow(c)).toMatchObject({ status: 'loaded', row_count: 3 });
    // Overlapping windows in one commit would count their shared dates twice: refused.
    await expect(loader.commitWindows([c, { start: '2026-02-10', end: '2026-02-12' }])).rejects.toThrow(
      /overlap/,
    );
  });

  it('readers see the old window or the new one, never a mix', async () => {
    const w = { start: '2026-03-01', end: '2026-03-07' };
    const small = [windowPosts(range(1, 300), 's')];
    const large = [windowPosts(range(1000, 1500), 'l')];
    await load(loader, w, 'r0', small);
    const reader = await db.pool.connect();
    const seen = new Set<string>();
    let stop = false;
    const reading = (async () => {
      while (!stop) {
        const r = await reader.query<{ n: number; s: number }>(
          `SELECT count(*)::int AS n, (SELECT count(*)::int FROM post_reports.post_custom_segments WHERE _window_start = $1) AS s
             FROM post_reports.posts WHERE _window_start = $1`,
          [w.start],
        );
        seen.add(`${r.rows[0]!.n}/${r.rows[0]!.s}`);
      }
    })();
    try {
      for (let i = 0; i < 6; i++) await load(loader, w, `r${i + 1}`, i % 2 ? small : large);
    } finally {
      stop = true;
      await reading;
      reader.release();
    }
    for (const observation of seen) expect(['300/600', '501/1002']).toContain(observation);

    // A read during a swap, made certain: the test holds the segments table against writes, so the next commit
    // stops between removing the window's old posts and its segments, inside its transaction.
    const blocker = await db.pool.connect();
    let committing: Promise<number> | undefined;
    try {
      await blocker.query('BEGIN');
      await blocker.query('LOCK TABLE post_reports.post_custom_segments IN SHARE MODE');
      committing = load(loader, w, 'r7', large);
      const { pid } = await lockWait(db.pool);
      const writer = await db.pool.query<{ xid: string | null }>(
        `SELECT a.backend_xid::text AS xid FROM pg_stat_activity a JOIN pg_locks l ON l.pid = a.pid
          WHERE a.pid = $1 AND l.relation = 'post_reports.posts'::regclass AND l.mode = 'RowExclusiveLock'
            AND l.granted`,
        [pid],
      );
      const xid = writer.rows[0]?.xid;
      expect(xid, 'the committing session has begun removing the old posts').toMatch(/^\d+$/);
      const during = await db.pool.query<{ n: number; s: number; snapshot: string }>(
        `SELECT count(*)::int AS n,
                (SELECT count(*)::int FROM post_reports.post_custom_segments WHERE _window_start = $1) AS s,
                pg_current_snapshot()::text AS snapshot
           FROM post_reports.posts WHERE _window_start = $1`,
        [w.start],
      );
      // The read's snapshot was taken with the swap in progress: its transaction not yet committed for it, that is
      // at or past the snapshot's xmax, or in its list of those in progress (xmin:xmax:xip; a transaction alone in
      // progress is xmin = xmax with an empty list).
      const [, xmax = '0', xip = ''] = during.rows[0]!.snapshot.split(':');
      const low32 = (id: string) => BigInt(id) % 2n ** 32n;
      const writerXid = BigInt(xid!);
      const inProgress =
        writerXid >= low32(xmax) ||
        xip
          .split(',')
          .filter((x) => x !== '')
          .map(low32)
          .includes(writerXid);
      expect(inProgress, `xid ${xid}, snapshot ${during.rows[0]!.snapshot}`).toBe(true);
      expect(`${during.rows[0]!.n}/${during.rows[0]!.s}`).toBe('300/600');
    } finally {
      await blocker.query('COMMIT');
      blocker.release();
    }
    expect(await committing).toBe(501);
    const after = await db.pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM post_reports.posts WHERE _window_start = $1',
      [w.start],
    );
    expect(after.rows[0]!.n).toBe(501);
  });

  it('a reload does not wait for readers in a transaction, who see the old window until they end', async () => {
    const w = { start: '2026-03-09', end: '2026-03-15' };
    await load(loader, w, 'q1', [windowPosts([1, 2], 'q')]);
    const idsIn = async (client: pg.ClientBase): Promise<string[]> => {
      const { rows } = await client.query<{ id: string }>(
        `SELECT p.platform_post_id::text || ':' || count(s.name) AS id
           FROM post_reports.posts p LEFT JOIN post_reports.post_custom_segments s USING (_org, platform_post_id, _window_start)
          WHERE p._window_start = $1 GROUP BY p.platform_post_id ORDER BY 1`,
        [w.start],
      );
      return rows.map((r) => r.id);
    };
    // A reader holding both tables in a snapshot of its own, as a report or a BI extract does.
    const reader = await db.pool.connect();
    try {
      await reader.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
      const before = await idsIn(reader);
      expect(before).toEqual(['1:2', '2:2']);
      // The reload commits while the reader's transaction is open: it takes no lock that readers hold.
      expect(await load(loader, w, 'q2', [windowPosts([3], 'q')])).toBe(1);
      expect(await idsIn(reader)).toEqual(before);
      await reader.query('COMMIT');
      expect(await idsIn(reader)).toEqual(['3:2']);
    } finally {
      reader.release();
    }
  });

  it('refuses a page of a report whose stage another process replaced with its own', async () => {
    const w = { start: '2026-04-13', end: '2026-04-19' };
    await loader.openWindow(w, 'rep-a');
    await stagePage(loader, w, { index: 0, nextPage: 'a1', posts: windowPosts([1], 'a'), reportId: 'rep-a' });
    // The window's claim was lost and another process opened it for its own report.
    const other = new Loader(db.pool, target, log.logger);
    await other.openWindow(w, 'rep-b');
    await expect(
      stagePage(loader, w, { index: 1, nextPage: null, posts: windowPosts([2], 'a'), reportId: 'rep-a' }),
    ).rejects.toThrow(/its stage is now report rep-b's, not rep-a's: page 2 is not staged/);
    await stagePage(other, w, { index: 0, nextPage: null, posts: windowPosts([3], 'b'), reportId: 'rep-b' });
    await other.commitWindows([w]);
    expect(await idsOf(db.pool, w)).toEqual(['3']);
  });

  it('resumes a window from the next page after a restart, and restarts for another report', async () => {
    const w = { start: '2026-04-01', end: '2026-04-07' };
    const pages = [windowPosts([1, 2], 'p0'), windowPosts([3], 'p1'), windowPosts([4, 5], 'p2')];
    await loader.openWindow(w, 'rep-1');
    await stagePage(loader, w, { index: 0, nextPage: 'g1', posts: pages[0]! });
    await stagePage(loader, w, { index: 1, nextPage: 'g2', posts: pages[1]! });
    const restarted = new Loader(db.pool, target, log.logger);
    expect(await restarted.openWindow(w, 'rep-1')).toEqual({
      reportId: 'rep-1',
      pagesStaged: 2,
      nextPage: 'g2',
      rowsStaged: 3,
    });
    // A page already staged (a retry after a lost acknowledgement) is not staged twice; a gap is refused.
    await stagePage(restarted, w, { index: 1, nextPage: 'g2', posts: pages[1]! });
    await expect(stagePage(restarted, w, { index: 3, nextPage: null, posts: [] })).rejects.toThrow(
      /page 4 arrived but 3 is next/,
    );
    await expect(restarted.commitWindows([w])).rejects.toThrow(/not completely staged/);
    await stagePage(restarted, w, { index: 2, nextPage: null, posts: pages[2]! });
    expect((await restarted.commitWindows([w])).rows).toBe(5);
    expect(await idsOf(db.pool, w)).toEqual(['1', '2', '3', '4', '5']);

    await restarted.openWindow(w, 'rep-2');
    await stagePage(restarted, w, { index: 0, nextPage: 'x', posts: windowPosts([9], 'other') });
    expect(await restarted.openWindow(w, 'rep-3')).toEqual({
      reportId: 'rep-3',
      pagesStaged: 0,
      nextPage: null,
      rowsStaged: 0,
    });
    expect(await idsOf(db.pool, w)).toEqual(['1', '2', '3', '4', '5']);
  });

  it('stops on an aborted signal with code ABORTED, staging nothing', async () => {
    const w = { start: '2026-04-20', end: '2026-04-26' };
    await loader.openWindow(w, 'abort');
    const controller = new AbortController();
    controller.abort();
    const error = await stagePage(
      loader,
      w,
      { index: 0, nextPage: null, posts: windowPosts([1], 'x') },
      controller.signal,
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).code).toBe('ABORTED');
    expect(await loader.openWindow(w, 'abort')).toMatchObject({ pagesStaged: 0 });
  });

  it('keeps the last occurrence of a post id repeated within a report', async () => {
    const w = { start: '2026-05-01', end: '2026-05-07' };
    await load(loader, w, 'dup', [
      [
        post(7, { note: 'first' }, [seg('Region', 'North')]),
        post(7, { note: 'second' }, [seg('Region', 'East')]),
      ],
      [post(8, { note: 'only' }), post(7, { note: 'last' }, [seg('Region', 'West'), seg('Region', 'West')])],
    ]);
    const rows = await db.pool.query(
      `SELECT platform_post_id::text AS id, note FROM post_reports.posts WHERE _window_start = $1 ORDER BY 1`,
      [w.start],
    );
    expect(rows.rows).toEqual([
      { id: '7', note: 'last' },
      { id: '8', note: 'only' },
    ]);
    const segments = await db.pool.query(
      `SELECT value FROM post_reports.post_custom_segments WHERE _window_start = $1 ORDER BY 1`,
      [w.start],
    );
    expect(segments.rows).toEqual([{ value: 'West' }]);
  });

  it('prepares the next page while the previous one is written, a new column included', async () => {
    const w = { start: '2026-06-01', end: '2026-06-07' };
    await loader.openWindow(w, 'pipelined');
    const first = await loader.preparePage(w, { index: 0, nextPage: 'p1', posts: windowPosts([1, 2], 'p0') });
    const second = await loader.preparePage(w, {
      index: 1,
      nextPage: null,
      posts: [post(3, { pipelined_metric: 7, note: 'p1' }, [seg('Region', 'North')])],
    });
    // Prepared pages are still written in order.
    await expect(loader.writePage(second)).rejects.toThrow(/page 2 arrived but 1 is next/);
    const writing = loader.writePage(first);
    // Preparing a page with a new field evolves posts while the previous page's COPY is in flight.
    const third = await loader.preparePage(w, {
      index: 1,
      nextPage: null,
      posts: [post(3, { pipelined_metric: 7, other_new: 'x', note: 'p1' }, [seg('Region', 'North')])],
    });
    await writing;
    expect(await idsOf(db.pool, w)).toEqual([]);
    await loader.writePage(third);
    expect((await loader.commitWindows([w])).rows).toBe(3);
    expect(await columnType('pipelined_metric')).toBe('bigint');
    const rows = await db.pool.query(
      `SELECT platform_post_id::text AS id, pipelined_metric::text AS m, other_new, note
         FROM post_reports.posts WHERE _window_start = $1 ORDER BY 1`,
      [w.start],
    );
    expect(rows.rows).toEqual([
      { id: '1', m: null, other_new: null, note: 'p0' },
      { id: '2', m: null, other_new: null, note: 'p0' },
      { id: '3', m: '7', other_new: 'x', note: 'p1' },
    ]);
  });
});

describe('pipelined pages', () => {
  /** How each page of the window was written: pipelined (true) or the careful way, by page. */
  function ways(w: Window): Record<number, boolean> {
    const label = `${w.start}..${w.end}`;
    return Object.fromEntries(
      log
        .lines()
        .filter((l) => l.msg === 'page staged' && l.window === label)
        .map((l) => [l.page as number, l.pipelined as boolean]),
    );
  }

  /** The rows of the window's two stage tables, before its commit. */
  async function staged(w: Window): Promise<{ posts: string[]; segments: string[] }> {
    const names = stageNames('default', w);
    const posts = await db.pool.query<{ id: string }>(
      `SELECT platform_post_id::text AS id FROM post_reports.${names.posts} ORDER BY _seq, 1`,
    );
    const segments = await db.pool.query<{ v: string }>(
      `SELECT platform_post_id || ':' || value AS v FROM post_reports.${names.segments} ORDER BY 1`,
    );
    return { posts: posts.rows.map((r) => r.id), segments: segments.rows.map((r) => r.v) };
  }

  it('pipelines a page into the stage as the page before left it, else writes it the careful way', async () => {
    // A period no window opened yet: the stage is keyed, so a repeated post id fails its key.
    const w = { start: '2043-02-02', end: '2043-02-08' };
    await load(loader, w, 'trips', [
      windowPosts([1, 2], 'p0'),
      windowPosts([3], 'p1'),
      // A new column: the stage lacks it.
      [post(4, { trip_metric: 7 }, [seg('Region', 'West')])],
      windowPosts([5], 'p3'),
      // Post 1 again: the keyed stage refuses it, and the careful way unkeys it.
      [post(1, { note: 'last' }, [seg('Region', 'East')])],
    ]);
    expect(ways(w)).toEqual({ 1: false, 2: true, 3: false, 4: true, 5: false });
    const rows = await db.pool.query(
      `SELECT platform_post_id::text AS id, note, trip_metric::text AS m FROM post_reports.posts
        WHERE _window_start = $1 ORDER BY 1`,
      [w.start],
    );
    expect(rows.rows).toEqual([
      { id: '1', note: 'last', m: null },
      { id: '2', note: 'p0', m: null },
      { id: '3', note: 'p1', m: null },
      { id: '4', note: null, m: '7' },
      { id: '5', note: 'p3', m: null },
    ]);
    const segments = await db.pool.query(
      `SELECT platform_post_id::text AS id, value FROM post_reports.post_custom_segments
        WHERE _window_start = $1 AND name = 'Region' ORDER BY 1`,
      [w.start],
    );
    expect(segments.rows).toEqual([
      { id: '1', value: 'East' },
      { id: '2', value: 'South' },
      { id: '3', value: 'North' },
      { id: '4', value: 'West' },
      { id: '5', value: 'North' },
    ]);
  });

  it('rolls back the pipeline of a page already staged (a lost acknowledgement): skipped, no row twice', async () => {
    // A period already loaded: the stage has no key, so only the rollback keeps a row from going in twice.
    const w = { start: '2026-12-07', end: '2026-12-13' };
    await load(loader, w, 'before', [windowPosts([9], 'x')]);
    await loader.openWindow(w, 'again');
    const first = await loader.preparePage(w, { index: 0, nextPage: 'a1', posts: windowPosts([1, 2], 'p0') });
    const stage = await loader.writePage(first);
    const second = await loader.preparePage(w, { index: 1, nextPage: 'a2', posts: windowPosts([3], 'p1') });
    expect(await loader.writePage(second, undefined, stage)).toEqual(stage);
    const before = await staged(w);
    expect(await loader.writePage(second, undefined, stage)).toBeUndefined();
    expect(await staged(w)).toEqual(before);
    expect(before.posts).toEqual(['1', '2', '3']);
    expect(await loader.openWindow(w, 'again')).toMatchObject({
      pagesStaged: 2,
      nextPage: 'a2',
      rowsStaged: 3,
    });
    expect(log.lines().some((l) => l.msg === 'page already staged: skipped' && l.page === 2)).toBe(true);
  });

  it('sends a page written behind the one before whole, its BEGIN with it, before the server answers any of it', async () => {
    // While the server writes a page, this process encodes the next one on the same thread: a statement sent
    // apart would wait for its answer until then, and the server would have nothing to write meanwhile.
    const pool = new pg.Pool({ connectionString: db.url, max: 1 });
    pool.on('error', () => {});
    const traffic: Array<{ sent: Buffer } | 'ready'> = [];
    pool.on('connect', (client) => {
      const { connection } = client as unknown as { connection: pg.Connection };
      const write = connection.stream.write.bind(connection.stream) as (...args: unknown[]) => boolean;
      connection.stream.write = ((chunk: Uint8Array | string, ...rest: unknown[]) => {
        traffic.push({ sent: Buffer.from(chunk) });
        return write(chunk, ...rest);
      }) as typeof connection.stream.write;
      connection.on('readyForQuery', () => traffic.push('ready'));
    });
    try {
      const piped = new Loader(pool, target, log.logger);
      const w = { start: '2043-03-02', end: '2043-03-08' };
      await piped.openWindow(w, 'whole');
      const first = await piped.preparePage(w, { index: 0, nextPage: 'w1', posts: windowPosts([1], 'w0') });
      const stage = await piped.writePage(first);
      const second = await piped.preparePage(w, {
        index: 1,
        nextPage: null,
        posts: windowPosts([2], 'sent-whole'),
      });
      const from = traffic.length;
      expect(await piped.writePage(second, undefined, stage)).toEqual(stage);
      const page = traffic.slice(from);
      const answered = page.indexOf('ready');
      const before = Buffer.concat(page.slice(0, answered).flatMap((t) => (t === 'ready' ? [] : [t.sent])));
      expect(answered).toBeGreaterThan(0);
      expect(before.includes('BEGIN')).toBe(true);
      expect(before.includes('sent-whole')).toBe(true);
      expect(before.includes('COMMIT')).toBe(false);
      expect((await staged(w)).posts).toEqual(['1', '2']);
    } finally {
      await pool.end();
    }
  });

  it('refuses, pipelined too, a page of a report whose stage another process replaced', async () => {
    const w = { start: '2026-12-14', end: '2026-12-20' };
    await loader.openWindow(w, 'rep-a');
    const first = await loader.preparePage(w, {
      index: 0,
      nextPage: 'a1',
      posts: windowPosts([1], 'a'),
      reportId: 'rep-a',
    });
    const stage = await loader.writePage(first);
    const other = new Loader(db.pool, target, log.logger);
    await other.openWindow(w, 'rep-b');
    await stagePage(other, w, { index: 0, nextPage: 'b1', posts: windowPosts([5], 'b'), reportId: 'rep-b' });
    const second = await loader.preparePage(w, {
      index: 1,
      nextPage: null,
      posts: windowPosts([2], 'a'),
      reportId: 'rep-a',
    });
    await expect(loader.writePage(second, undefined, stage)).rejects.toThrow(
      /its stage is now report rep-b's, not rep-a's: page 2 is not staged/,
    );
    expect((await staged(w)).posts).toEqual(['5']);
  });
});

describe('memory', () => {
  /** A page as the API sends it, read in one pass: on a tape over its bytes. */
  async function tapeOf(w: Window, page: number, ids: readonly number[]): Promise<PageTape> {
    const records = ids.map((id) => ({
      platform_post_id: id,
      note: `note ${id} `.repeat(40),
      custom_segments: [{ name: 'Region', value: `r${id}` }],
    }));
    const body = JSON.stringify({ status: 'DONE', data: records, response_metadata: [{ next_page: null }] });
    const decoded = await decodePage(Buffer.from(body), { postIdField: 'platform_post_id', window: w, page });
    return decoded!.posts;
  }

  it('encodes a page into the COPY text of the page before the one before once that is written, rows exact', async () => {
    const w = { start: '2027-03-01', end: '2027-03-07' };
    await loader.openWindow(w, 'pooled');
    const pools = new CopyPools();
    const pages = [
      [1, 2, 3],
      [4, 5],
      [6, 7, 8],
    ];
    const prepare = async (i: number) =>
      loader.preparePage(
        w,
        {
          index: i,
          nextPage: i + 1 < pages.length ? `p${i + 1}` : null,
          posts: await tapeOf(w, i + 1, pages[i]!),
        },
        undefined,
        undefined,
        pools,
      );
    const first = await prepare(0);
    const second = await prepare(1);
    // Both in use: apart.
    expect(second.posts.buffer).not.toBe(first.posts.buffer);
    expect(second.segments.buffer).not.toBe(first.segments.buffer);
    await loader.writePage(first);
    pools.give(first);
    const third = await prepare(2);
    expect(third.posts.buffer).toBe(first.posts.buffer);
    expect(third.segments.buffer).toBe(first.segments.buffer);
    await loader.writePage(second);
    await loader.writePage(third);
    expect((await loader.commitWindows([w])).rows).toBe(8);
    const rows = await db.pool.query<{ id: string; note: string; region: string }>(
      `SELECT p.platform_post_id::text AS id, p.note, s.value AS region
         FROM post_reports.posts p JOIN post_reports.post_custom_segments s USING (_org, _window_start, platform_post_id)
        WHERE p._window_start = $1 ORDER BY p.platform_post_id`,
      [w.start],
    );
    expect(rows.rows).toEqual(
      pages.flat().map((id) => ({ id: String(id), note: `note ${id} `.repeat(40), region: `r${id}` })),
    );
  });

  it('refuses a tape whose memory was given back', async () => {
    const w = { start: '2027-03-08', end: '2027-03-14' };
    await loader.openWindow(w, 'retired');
    const tape = await tapeOf(w, 1, [1]);
    tape.retire();
    await expect(loader.preparePage(w, { index: 0, nextPage: null, posts: tape })).rejects.toThrow(
      /page 1 was encoded after its memory was given back/,
    );
  });
});

describe('values', () => {
  it('adds typed nullable columns for new fields, logged, and widens bigint to numeric', async () => {
    const w = { start: '2026-06-01', end: '2026-06-07' };
    await load(loader, w, 'types', [
      [
        post(1, {
          video_views: 12,
          spend_usd: new ExactNumber('1234.56'),
          caption: 'hello',
          is_boosted: true,
          third_party_data: new JsonDocument('{"vendor":"x","score":[1,2.50]}'),
          always_null: null,
        }),
        post(2, { video_views: null }),
      ],
    ]);
    expect(await columnType('video_views')).toBe('bigint');
    expect(await columnType('spend_usd')).toBe('numeric');
    expect(await columnType('caption')).toBe('text');
    expect(await columnType('is_boosted')).toBe('boolean');
    expect(await columnType('third_party_data')).toBe('jsonb');
    expect(await columnType('always_null')).toBeUndefined();
    // One line for the page's new fields, each with its column and type.
    type Added = { field: string; column: string; type: string };
    const added = log
      .lines()
      .filter((l) => l.msg === 'new fields: columns added to posts')
      .filter((l) => (l.columns as Added[]).some((c) => c.field === 'video_views'));
    expect(added).toHaveLength(1);
    const columns = added[0]?.columns as Added[];
    expect(added[0]?.count).toBe(columns.length);
    expect(columns).toContainEqual({ field: 'spend_usd', column: 'spend_usd', type: 'numeric' });
    expect(columns.map((c) => c.field)).toEqual(
      expect.arrayContaining(['video_views', 'spend_usd', 'caption', 'is_boosted', 'third_party_data']),
    );
    const rows = await db.pool.query(
      `SELECT platform_post_id::int AS id, video_views::text AS v, caption, is_boosted, third_party_data::text AS j
         FROM post_reports.posts WHERE _window_start = $1 ORDER BY 1`,
      [w.start],
    );
    expect(rows.rows).toEqual([
      { id: 1, v: '12', caption: 'hello', is_boosted: true, j: '{"score": [1, 2.50], "vendor": "x"}' },
      { id: 2, v: null, caption: null, is_boosted: null, j: null },
    ]);

    const w2 = { start: '2026-06-08', end: '2026-06-14' };
    await load(loader, w2, 'wider', [
      [post(3, { video_views: new ExactNumber('99999999999999999999999'), caption: 42 })],
    ]);
    expect(await columnType('video_views')).toBe('numeric');
    const wide = await db.pool.query(
      `SELECT video_views = 99999999999999999999999::numeric AS exact, caption FROM post_reports.posts WHERE platform_post_id = 3 AND _window_start = $1`,
      [w2.start],
    );
    expect(wide.rows).toEqual([{ exact: true, caption: '42' }]);
    expect(
      log.lines().some((l) => l.msg === 'column widened from bigint to numeric' && l.field === 'video_views'),
    ).toBe(true);
  });

  it('fails the window on a value its column cannot take, naming field, window and page, leaving the old contents', async () => {
    const w = { start: '2026-06-01', end: '2026-06-07' };
    const before = await snapshot(db.pool);
    await loader.openWindow(w, 'bad');
    await stagePage(loader, w, {
      index: 0,
      nextPage: 'n',
      posts: [post(1, { spend_usd: new ExactNumber('1.5') })],
    });
    const error = await stagePage(loader, w, {
      index: 1,
      nextPage: null,
      posts: [post(2, { spend_usd: true })],
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DataError);
    expect((error as DataError).code).toBe('FIELD_TYPE_MISMATCH');
    expect((error as DataError).message).toMatch(
      /field "spend_usd" holds a boolean value .* window 2026-06-01\.\.2026-06-07 page 2/,
    );
    await expect(
      stagePage(loader, w, {
        index: 1,
        nextPage: null,
        posts: [post(2, { is_boosted: new JsonDocument('{}') })],
      }),
    ).rejects.toThrow(/field "is_boosted" holds a json value/);
    expect(await snapshot(db.pool)).toEqual(before);
    expect(await loader.openWindow(w, 'bad')).toMatchObject({ pagesStaged: 1 });
  });

  it('makes hostile field names harmless columns, recorded in the registry', async () => {
    const w = { start: '2026-07-01', end: '2026-07-07' };
    const long = 'm'.repeat(70);
    const fields = {
      'x"; drop table posts; --': 'evil',
      [`${long}_one`]: 1,
      [`${long}_two`]: 2,
      _window_start: 'not mine',
      platform_post_id: 'not the id',
      Brand: 'capital',
      brand: 'lower',
    };
    await load(loader, w, 'hostile', [[post(1, fields)]]);
    const registry = await db.pool.query<{ field: string; column_name: string }>(
      `SELECT field, column_name FROM post_reports.field_columns WHERE field = ANY($1)`,
      [Object.keys(fields)],
    );
    const columnOf = new Map(registry.rows.map((r) => [r.field, r.column_name]));
    expect(columnOf.size).toBe(7);
    expect(new Set(columnOf.values()).size).toBe(7);
    expect(columnOf.get('x"; drop table posts; --')).toBe('x_drop_table_posts');
    expect(columnOf.get('_window_start')).toBe('window_start');
    expect(columnOf.get('platform_post_id')).toBe('platform_post_id_2');
    expect(columnOf.get('brand')).toBe('brand');
    expect(columnOf.get('Brand')).toBe('brand_2');
    for (const column of columnOf.values()) expect(Buffer.byteLength(column)).toBeLessThanOrEqual(63);
    const row = await db.pool.query(
      `SELECT to_jsonb(p) AS j FROM post_reports.posts p WHERE _window_start = $1`,
      [w.start],
    );
    const stored = row.rows[0].j as Record<string, unknown>;
    for (const [field, value] of Object.entries(fields)) expect(stored[columnOf.get(field)!]).toEqual(value);
    expect(stored.platform_post_id).toBe(1);
    expect(stored._window_start).toBe('2026-07-01');
  });

  it('round-trips ids up to 2^63-1 and long decimals exactly', async () => {
    const w = { start: '2026-08-01', end: '2026-08-07' };
    const ids = ['9223372036854775807', '-9223372036854775808', '17841405793187218', '17841405793187219'];
    const decimal = '123456789012345678901234567890.123456789012345678901234567890';
    await load(loader, w, 'exact', [
      ids.map((id) =>
        post(id, { asset_id: new ExactNumber('9007199254740993'), precise: new ExactNumber(decimal) }),
      ),
    ]);
    const check = await db.pool.query(
      `SELECT count(*)::int AS n FROM post_reports.posts
        WHERE _window_start = $1 AND platform_post_id::numeric = ANY($2::numeric[])
          AND asset_id::numeric = 9007199254740993 AND precise = $3::numeric AND precise::text = $4::text`,
      [w.start, ids, decimal, decimal],
    );
    expect(check.rows[0]).toEqual({ n: 4 });
  });

  it('escapes tab, newline, CR and backslash, and replaces NUL by U+FFFD with a logged count', async () => {
    const w = { start: '2026-09-01', end: '2026-09-07' };
    const nasty = 'a\tb\nc\rd\\e\\N\0f';
    await load(loader, w, 'text', [
      [
        post(1, { caption: nasty, payload: new JsonDocument('{"k":"v\\u0000w","t":"\\\\u0000"}') }, [
          seg('N\\a\tme', `v${nasty}`),
        ]),
      ],
    ]);
    const row = await db.pool.query(
      `SELECT caption, payload->>'k' AS k, payload->>'t' AS t, s.name, s.value
         FROM post_reports.posts p JOIN post_reports.post_custom_segments s USING (platform_post_id, _window_start)
        WHERE p._window_start = $1`,
      [w.start],
    );
    const clean = 'a\tb\nc\rd\\e\\N\uFFFDf';
    expect(row.rows).toEqual([
      { caption: clean, k: 'v\uFFFDw', t: '\\u0000', name: 'N\\a\tme', value: `v${clean}` },
    ]);
    const warned = log.lines().find((l) => l.msg === 'NUL characters replaced by U+FFFD');
    expect(warned?.count).toBe(3);
  });

  it('evolves the schema safely while several windows stage at once', async () => {
    const windows = range(0, 5).map((i) => ({
      start: `2026-10-${String(i * 3 + 1).padStart(2, '0')}`,
      end: `2026-10-${String(i * 3 + 3).padStart(2, '0')}`,
    }));
    await Promise.all(
      windows.map(async (w, i) => {
        const posts = range(1, 50).map((id) =>
          post(id, {
            shared_new_metric: id,
            [`only_in_${i}`]: `w${i}`,
            shared_decimal: i % 2 ? new ExactNumber('0.5') : 1,
          }),
        );
        await stageAll(loader, w, `conc-${i}`, [posts.slice(0, 25), posts.slice(25)]);
      }),
    );
    expect((await loader.commitWindows(windows)).rows).toBe(6 * 50);
    expect(await columnType('shared_new_metric')).toBe('bigint');
    expect(await columnType('shared_decimal')).toBe('numeric');
    const registered = await db.pool.query(
      `SELECT count(*)::int AS n FROM post_reports.field_columns WHERE field LIKE 'only_in_%' OR field LIKE 'shared_%'`,
    );
    expect(registered.rows[0]).toEqual({ n: 8 });
    const sum = await db.pool.query(
      `SELECT sum(shared_decimal)::text AS s FROM post_reports.posts WHERE _window_start >= '2026-10-01' AND _window_start < '2026-11-01'`,
    );
    expect(sum.rows[0]).toEqual({ s: '225.0' });
  });
});

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}
