import pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { Loader } from '../../../src/load/loader.js';
import { migrate } from '../../../src/load/migrate.js';
import { stageKeyIndex } from '../../../src/load/queries.js';
import { stageNames } from '../../../src/load/stage-progress.js';
import { ExactNumber } from '../../../src/model/post-record.js';
import type { Window } from '../../../src/model/window.js';
import { createTestDatabase } from '../../helpers/database.js';
import { captureLogger, load, post, snapshot, stageAll, target } from './load-fixtures.js';

const db = await createTestDatabase();
const log = captureLogger();
const loader = new Loader(db.pool, target, log.logger);

beforeAll(async () => {
  await migrate(db.pool, target, log.logger);
});

const seg = (name: string, value: string) => ({ name, value });

const ATTACHED = "the window's stage attached as its period's partitions";
const FILLED = "the period's partitions made with the window's rows, their indexes built by the attach";

/** The windows (labels) a message was logged for, from `year` on. */
function logged(message: string, year: string): string[] {
  return log
    .lines()
    .filter((l) => l.msg === message && String(l.window) >= year && String(l.window) < `${Number(year) + 1}`)
    .map((l) => String(l.window));
}

/** Whether the window's posts stage has its key, i.e. it was opened as a partition to be. */
async function stageKeyed(window: Window): Promise<boolean> {
  const found = await db.pool.query<{ keyed: boolean }>('SELECT to_regclass($1) IS NOT NULL AS keyed', [
    `post_reports.${stageKeyIndex(stageNames('default', window).posts)}`,
  ]);
  return found.rows[0]!.keyed;
}

/** Each partition of `year`: its parent's indexes and its own attached to them, its CHECKs, its named indexes. */
async function partitionsOf(year: string) {
  const found = await db.pool.query(
    `SELECT c.relname AS partition,
            (SELECT count(*)::int FROM pg_index x WHERE x.indrelid = i.inhparent) AS parents,
            (SELECT count(*)::int FROM pg_index x JOIN pg_inherits h ON h.inhrelid = x.indexrelid
              WHERE x.indrelid = c.oid) AS attached,
            (SELECT count(*)::int FROM pg_constraint k WHERE k.conrelid = c.oid AND k.contype = 'c') AS checks,
            (SELECT array_agg(x.indexrelid::regclass::text ORDER BY 1) FROM pg_index x WHERE x.indrelid = c.oid)
              AS indexes,
            (SELECT count(*)::int FROM pg_attrdef d JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
              WHERE d.adrelid = c.oid AND a.attname IN ('_window_start', '_window_end', '_report_id')) AS window_defaults,
            (SELECT count(*)::int FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = '_seq') AS seq
       FROM pg_class c JOIN pg_inherits i ON i.inhrelid = c.oid
      WHERE c.relnamespace = 'post_reports'::regnamespace AND c.relname ~ $1 ORDER BY 1`,
    [`_y${year}$`],
  );
  return found.rows;
}

describe('a window that opens a period', () => {
  it('is staged keyed, as the partition it becomes at the commit, which writes no row', async () => {
    const w = { start: '2040-03-01', end: '2040-03-07' };
    const pages = [
      [
        post(1, { brand: 'a', roas: new ExactNumber('1.25'), 'odd "name"': 'x' }, [seg('Region', 'North')]),
        post(2, { engagements: 20 }, [seg('Region', 'South'), seg('Tier', 'Gold')]),
      ],
      [post(3, { brand: 'c', engagements: 30 }, [seg('Region', 'West')])],
    ];
    await stageAll(loader, w, 'k1', pages);
    expect(await stageKeyed(w)).toBe(true);
    expect((await loader.commitWindows([w])).rows).toBe(3);
    expect(logged(ATTACHED, '2040')).toEqual(['2040-03-01..2040-03-07']);
    expect(await partitionsOf('2040')).toEqual([
      {
        partition: 'post_custom_segments_y2040',
        parents: 2,
        attached: 2,
        checks: 0,
        indexes: [
          'post_reports.post_custom_segments_y2040_key',
          'post_reports.post_custom_segments_y2040_post_id_idx',
        ],
        window_defaults: 0,
        seq: 0,
      },
      {
        partition: 'posts_y2040',
        parents: 2,
        attached: 2,
        checks: 0,
        indexes: ['post_reports.posts_y2040_pkey', 'post_reports.posts_y2040_post_id_idx'],
        window_defaults: 0,
        seq: 0,
      },
    ]);
    const attached = await snapshot(db.pool);
    // The same window again goes in through the parents, from a stage with no key: the same rows, by the other way.
    await stageAll(loader, w, 'k1-again', pages);
    expect(await stageKeyed(w)).toBe(false);
    expect((await loader.commitWindows([w])).rows).toBe(3);
    const inserted = await snapshot(db.pool);
    expect(inserted.segments).toEqual(attached.segments);
    expect(inserted.posts).toEqual(attached.posts.map((row) => row.replace('"k1"', '"k1-again"')));
    expect(logged(ATTACHED, '2040')).toEqual(['2040-03-01..2040-03-07']);
    // The key holds on the attached partition, as on one the connector made.
    await expect(
      db.pool.query(
        `INSERT INTO post_reports.posts (_org, platform_post_id, _window_start, _window_end, _report_id)
         VALUES ('default', 3, '2040-03-01', '2040-03-07', 'x')`,
      ),
    ).rejects.toThrow(/duplicate key/);
    await expect(
      db.pool.query(
        `INSERT INTO post_reports.post_custom_segments (_org, platform_post_id, _window_start, name, value)
         VALUES ('default', 3, '2040-03-01', 'Region', 'West')`,
      ),
    ).rejects.toThrow(/duplicate key/);
  });

  it('is indexed on the post id at its attach, not while staged; one staged with that index by an earlier version attaches too', async () => {
    const postIdIndexes = async (window: Window) => {
      const names = stageNames('default', window);
      const found = await db.pool.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM pg_index x WHERE x.indrelid IN ($1::regclass, $2::regclass) AND x.indnatts = 1',
        [`post_reports.${names.posts}`, `post_reports.${names.segments}`],
      );
      return found.rows[0]!.n;
    };
    const fresh = { start: '2048-03-01', end: '2048-03-07' };
    await stageAll(loader, fresh, 'k-fresh', [[post(1, { brand: 'a' }, [seg('Region', 'North')])]]);
    expect(await stageKeyed(fresh)).toBe(true);
    expect(await postIdIndexes(fresh)).toBe(0);
    // An earlier version indexed the stage on the post id as it staged it: a stage it left is resumed as it is.
    const earlier = { start: '2049-03-01', end: '2049-03-07' };
    await stageAll(loader, earlier, 'k-earlier', [[post(2, { brand: 'b' }, [seg('Region', 'South')])]]);
    const names = stageNames('default', earlier);
    for (const table of [names.posts, names.segments]) {
      await db.pool.query(
        `CREATE INDEX ${pg.escapeIdentifier(`${table}_post_id`)} ON post_reports.${pg.escapeIdentifier(table)} (platform_post_id)`,
      );
    }
    expect(await postIdIndexes(earlier)).toBe(2);
    expect((await loader.commitWindows([fresh])).rows).toBe(1);
    expect((await loader.commitWindows([earlier])).rows).toBe(1);
    for (const year of ['2048', '2049']) {
      expect(logged(ATTACHED, year)).toHaveLength(1);
      expect((await partitionsOf(year)).map((p) => [p.partition, p.parents, p.attached, p.indexes])).toEqual([
        [
          `post_custom_segments_y${year}`,
          2,
          2,
          [
            `post_reports.post_custom_segments_y${year}_key`,
            `post_reports.post_custom_segments_y${year}_post_id_idx`,
          ],
        ],
        [
          `posts_y${year}`,
          2,
          2,
          [`post_reports.posts_y${year}_pkey`, `post_reports.posts_y${year}_post_id_idx`],
        ],
      ]);
    }
  });

  it("takes the columns posts gained while it was staged, NULL in the window's rows", async () => {
    const w = { start: '2041-01-01', end: '2041-01-01' };
    await stageAll(loader, w, 'g1', [[post(1, { brand: 'a' })]]);
    // Another window, of another period, brings a field while this one waits for its commit.
    await load(loader, { start: '2039-01-01', end: '2039-01-01' }, 'g0', [[post(9, { gained_later: 5 })]]);
    expect((await loader.commitWindows([w])).rows).toBe(1);
    expect(logged(ATTACHED, '2041')).toEqual(['2041-01-01..2041-01-01']);
    const rows = await db.pool.query(
      `SELECT platform_post_id::text AS id, brand, gained_later FROM post_reports.posts WHERE _window_start = $1`,
      [w.start],
    );
    expect(rows.rows).toEqual([{ id: '1', brand: 'a', gained_later: null }]);
  });

  it('staged beside another of its period: only the first is keyed; whichever commits first makes the partitions', async () => {
    const first = { start: '2042-01-01', end: '2042-01-01' };
    const second = { start: '2042-01-02', end: '2042-01-02' };
    await stageAll(loader, first, 'b1', [[post(1, { brand: 'one' }, [seg('Region', 'North')])]]);
    await stageAll(loader, second, 'b2', [[post(1, { brand: 'two' }, [seg('Region', 'South')])]]);
    expect([await stageKeyed(first), await stageKeyed(second)]).toEqual([true, false]);
    // The unkeyed one first: it fills the partitions, and the keyed stage's rows then go in through the parents.
    await loader.commitWindows([second]);
    await loader.commitWindows([first]);
    expect(logged(FILLED, '2042')).toEqual(['2042-01-02..2042-01-02']);
    expect(logged(ATTACHED, '2042')).toEqual([]);
    const rows = await db.pool.query(
      `SELECT tableoid::regclass::text AS t, _window_start::text AS d, brand FROM post_reports.posts
        WHERE _window_start >= '2042-01-01' AND _window_start < '2043-01-01' ORDER BY 2`,
    );
    expect(rows.rows).toEqual([
      { t: 'post_reports.posts_y2042', d: '2042-01-01', brand: 'one' },
      { t: 'post_reports.posts_y2042', d: '2042-01-02', brand: 'two' },
    ]);
    const segments = await db.pool.query(
      `SELECT _window_start::text || ' ' || value AS s FROM post_reports.post_custom_segments
        WHERE _window_start >= '2042-01-01' AND _window_start < '2043-01-01' ORDER BY 1`,
    );
    expect(segments.rows.map((r) => r.s)).toEqual(['2042-01-01 North', '2042-01-02 South']);
    // The keyed one first: attached, and the other goes in through the parents.
    const third = { start: '2046-01-01', end: '2046-01-01' };
    const fourth = { start: '2046-01-02', end: '2046-01-02' };
    await stageAll(loader, third, 'b3', [[post(1, { brand: 'three' })]]);
    await stageAll(loader, fourth, 'b4', [[post(1, { brand: 'four' })]]);
    await loader.commitWindows([third]);
    await loader.commitWindows([fourth]);
    expect(logged(ATTACHED, '2046')).toEqual(['2046-01-01..2046-01-01']);
    const later = await db.pool.query(
      `SELECT tableoid::regclass::text AS t, brand FROM post_reports.posts
        WHERE _window_start >= '2046-01-01' AND _window_start < '2047-01-01' ORDER BY _window_start`,
    );
    expect(later.rows).toEqual([
      { t: 'post_reports.posts_y2046', brand: 'three' },
      { t: 'post_reports.posts_y2046', brand: 'four' },
    ]);
  });

  it('whose column was widened since it was staged is filled by the commit instead, the values cast', async () => {
    const w = { start: '2043-01-01', end: '2043-01-01' };
    await stageAll(loader, w, 'r1', [[post(1, { widened_since: 7 })]]);
    await load(loader, { start: '2038-01-01', end: '2038-01-01' }, 'r0', [
      [post(2, { widened_since: new ExactNumber('1.5') })],
    ]);
    expect((await loader.commitWindows([w])).rows).toBe(1);
    expect(logged(ATTACHED, '2043')).toEqual([]);
    expect(logged(FILLED, '2043')).toEqual(['2043-01-01..2043-01-01']);
    const rows = await db.pool.query(
      `SELECT widened_since::text AS v, pg_typeof(widened_since)::text AS t FROM post_reports.posts WHERE _window_start = $1`,
      [w.start],
    );
    expect(rows.rows).toEqual([{ v: '7', t: 'numeric' }]);
  });

  it('whose report repeats a post id loses its key while staged, and keeps the last occurrence', async () => {
    const w = { start: '2044-01-01', end: '2044-01-07' };
    const pages = [
      [post(7, { note: 'first' }, [seg('Region', 'North')]), post(8, { note: 'only' })],
      [post(7, { note: 'last' }, [seg('Region', 'West')])],
    ];
    await stageAll(loader, w, 'd1', pages);
    expect(await stageKeyed(w)).toBe(false);
    expect((await loader.commitWindows([w])).rows).toBe(2);
    expect(logged(FILLED, '2044')).toEqual(['2044-01-01..2044-01-07']);
    const rows = await db.pool.query(
      `SELECT platform_post_id::text AS id, note FROM post_reports.posts WHERE _window_start = $1 ORDER BY 1`,
      [w.start],
    );
    expect(rows.rows).toEqual([
      { id: '7', note: 'last' },
      { id: '8', note: 'only' },
    ]);
    const segments = await db.pool.query(
      'SELECT value FROM post_reports.post_custom_segments WHERE _window_start = $1',
      [w.start],
    );
    expect(segments.rows).toEqual([{ value: 'West' }]);
  });

  it('whose posts gained a column with a default meanwhile gets it as an insert would, the default filled', async () => {
    const w = { start: '2047-01-01', end: '2047-01-01' };
    await stageAll(loader, w, 'o1', [[post(1, { brand: 'a' })]]);
    await db.pool.query(`ALTER TABLE post_reports.posts ADD COLUMN operator_tag text DEFAULT 'tagged'`);
    try {
      expect((await loader.commitWindows([w])).rows).toBe(1);
      expect(logged(ATTACHED, '2047')).toEqual([]);
      expect(logged(FILLED, '2047')).toEqual(['2047-01-01..2047-01-01']);
      const rows = await db.pool.query(
        'SELECT brand, operator_tag FROM post_reports.posts WHERE _window_start = $1',
        [w.start],
      );
      expect(rows.rows).toEqual([{ brand: 'a', operator_tag: 'tagged' }]);
    } finally {
      await db.pool.query('ALTER TABLE post_reports.posts DROP COLUMN operator_tag');
    }
  });

  it('goes in through the parents when an operator starts watching them while it is staged', async () => {
    const w = { start: '2045-01-01', end: '2045-01-01' };
    await stageAll(loader, w, 'w1', [[post(11, {}, [seg('Region', 'North')]), post(12)]]);
    expect(await stageKeyed(w)).toBe(true);
    await db.pool.query(`CREATE TABLE post_reports.audit (id bigint)
      ; CREATE FUNCTION post_reports.audit() RETURNS trigger LANGUAGE plpgsql AS
        $$ BEGIN INSERT INTO post_reports.audit VALUES (NEW.platform_post_id); RETURN NEW; END $$
      ; CREATE TRIGGER audit AFTER INSERT ON post_reports.posts FOR EACH ROW EXECUTE FUNCTION post_reports.audit()`);
    try {
      expect((await loader.commitWindows([w])).rows).toBe(2);
      const audited = await db.pool.query('SELECT id::text AS id FROM post_reports.audit ORDER BY 1');
      expect(audited.rows).toEqual([{ id: '11' }, { id: '12' }]);
      expect(logged(ATTACHED, '2045')).toEqual([]);
    } finally {
      await db.pool.query('DROP TRIGGER audit ON post_reports.posts; DROP TABLE post_reports.audit');
      await db.pool.query('DROP FUNCTION post_reports.audit()');
    }
  });
});
