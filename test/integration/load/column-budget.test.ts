import { beforeAll, describe, expect, it } from 'vitest';
import { Loader } from '../../../src/load/loader.js';
import { migrate } from '../../../src/load/migrate.js';
import { renameOrganization } from '../../../src/load/organization-rename.js';
import { writeTarget } from '../../../src/load/window-state.js';
import { ExactNumber, JsonDocument } from '../../../src/model/post-record.js';
import { createTestDatabase } from '../../helpers/database.js';
import { captureLogger, load, post, target } from './load-fixtures.js';

const db = await createTestDatabase();
const log = captureLogger();
const { schema } = target;
// 8 columns for undocumented fields in all, 2 for one organization.
const budget = { ...target, columnBudget: 8 };

beforeAll(async () => {
  await migrate(db.pool, target, log.logger);
  for (const org of ['acme', 'globex', 'initech']) {
    await writeTarget(db.pool, { schema, org }, target.postIdField, {});
  }
});

const WEEK = { start: '2026-02-02', end: '2026-02-08' };
const NEXT = { start: '2026-02-09', end: '2026-02-15' };

async function columns(): Promise<string[]> {
  const { rows } = await db.pool.query<{ name: string }>(
    `SELECT attname::text AS name FROM pg_attribute
      WHERE attrelid = '${schema}.posts'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum`,
  );
  return rows.map((r) => r.name);
}

async function rowsOf(org: string, select: string): Promise<Record<string, unknown>[]> {
  const { rows } = await db.pool.query(
    `SELECT ${select} FROM ${schema}.posts WHERE _org = $1 ORDER BY platform_post_id, _window_start`,
    [org],
  );
  return rows;
}

const keptLines = () =>
  log.lines().filter((line) => String(line.msg).includes('kept in _extra_fields')) as {
    fields?: string[];
  }[];

describe('the column budget of posts', () => {
  it('gives one organization its share of columns and keeps every other field of its posts in _extra_fields, exact', async () => {
    const acme = new Loader(db.pool, { ...budget, org: 'acme' }, log.logger);
    const before = (await columns()).length;
    const rows = await load(acme, WEEK, 'acme-1', [
      [
        post(1, {
          brand: 'Acme',
          f_one: 1,
          f_two: 'two',
          f_three: new ExactNumber('12345678901234567890.125'),
          'Fourth Field': true,
        }),
        post(2, { f_five: new JsonDocument('{"a":[1,"x\\\\y"]}'), f_six: 'tab\there', 'é\u0000': 'nul' }),
        post(3, { brand: 'Acme' }),
      ],
      // A second page with fields already kept: named in the log once a run.
      [post(4, { f_three: 7, f_seven: null, f_eight: false })],
    ]);
    expect(rows).toBe(4);
    // Two columns of its own (the first two new fields of its first page), no more.
    expect((await columns()).slice(before)).toEqual(['f_one', 'f_two']);
    expect(
      await rowsOf(
        'acme',
        "platform_post_id::text AS id, brand, f_one, f_two, _extra_fields - 'f_three' AS extra, _extra_fields->>'f_three' AS three",
      ),
    ).toEqual([
      {
        id: '1',
        brand: 'Acme',
        f_one: '1',
        f_two: 'two',
        // The exact digits of a number beyond a double, as jsonb keeps them.
        extra: { 'Fourth Field': true },
        three: '12345678901234567890.125',
      },
      {
        id: '2',
        brand: null,
        f_one: null,
        f_two: null,
        // jsonb holds no NUL, in a key or a value: U+FFFD marks it, as everywhere.
        extra: { f_five: { a: [1, 'x\\y'] }, f_six: 'tab\there', 'é\uFFFD': 'nul' },
        three: null,
      },
      { id: '3', brand: 'Acme', f_one: null, f_two: null, extra: null, three: null },
      { id: '4', brand: null, f_one: null, f_two: null, extra: { f_eight: false }, three: '7' },
    ]);
    const kept = keptLines();
    expect(kept.map((line) => line.fields)).toEqual([
      ['f_three', 'Fourth Field', 'f_five', 'f_six', 'é\u0000'],
      ['f_eight'],
    ]);
  });

  it('leaves another organization its own share: a field the schema has not seen gets its column', async () => {
    const globex = new Loader(db.pool, { ...budget, org: 'globex' }, log.logger);
    await load(globex, WEEK, 'globex-1', [
      // f_one has acme's column already: globex uses it at no cost.
      [post(1, { f_one: 10, g_new: new ExactNumber('0.1000000000000000055511151231257827') })],
    ]);
    expect(await columns()).toContain('g_new');
    expect(
      await rowsOf(
        'globex',
        'platform_post_id::text AS id, f_one, g_new::text AS g_new, _extra_fields AS extra',
      ),
    ).toEqual([{ id: '1', f_one: '10', g_new: '0.1000000000000000055511151231257827', extra: null }]);
    const owners = await db.pool.query(
      `SELECT field, org FROM ${schema}.field_columns WHERE field IN ('f_one', 'f_two', 'g_new') ORDER BY field`,
    );
    expect(owners.rows).toEqual([
      { field: 'f_one', org: 'acme' },
      { field: 'f_two', org: 'acme' },
      { field: 'g_new', org: 'globex' },
    ]);
  });

  it('keeps a field in _extra_fields, not widened, once the run has made the widenings it may', async () => {
    const initech = new Loader(db.pool, { ...budget, org: 'initech', wideningsPerRun: 0 }, log.logger);
    const type = async () =>
      (
        await db.pool.query<{ t: string }>(
          `SELECT format_type(atttypid, atttypmod) AS t FROM pg_attribute
            WHERE attrelid = '${schema}.posts'::regclass AND attname = 'f_one'`,
        )
      ).rows[0]!.t;
    expect(await type()).toBe('bigint');
    await load(initech, NEXT, 'initech-1', [
      [post(1, { f_one: new ExactNumber('2.5') }), post(2, { f_one: 3 })],
    ]);
    expect(await type()).toBe('bigint');
    expect(await rowsOf('initech', 'platform_post_id::text AS id, f_one, _extra_fields AS extra')).toEqual([
      { id: '1', f_one: null, extra: { f_one: 2.5 } },
      { id: '2', f_one: null, extra: { f_one: 3 } },
    ]);
  });

  it('follows an organization renamed: its columns and its partitions’ row-level security go with it', async () => {
    await renameOrganization(db.pool, { schema, org: 'acme' }, 'acme_renamed', { waitMs: 60_000 });
    const owners = await db.pool.query(
      `SELECT org, count(*)::int AS n FROM ${schema}.field_columns WHERE org LIKE 'acme%' GROUP BY org`,
    );
    expect(owners.rows).toEqual([{ org: 'acme_renamed', n: 2 }]);
    // Its rows are in partitions of the new id, named from the key the schema gave it (acme's own are gone).
    const key = await db.pool.query<{ key: string }>(
      `SELECT key FROM ${schema}.organization_keys WHERE org = 'acme_renamed'`,
    );
    const { rows } = await db.pool.query(
      `SELECT c.relname::text AS name, c.relrowsecurity AS rls FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE c.relnamespace = '${schema}'::regnamespace AND pg_get_expr(c.relpartbound, c.oid) LIKE '%''acme%'
        ORDER BY 1`,
    );
    expect(rows).toEqual([
      { name: `post_custom_segments_${key.rows[0]!.key}_y2026`, rls: true },
      { name: `posts_${key.rows[0]!.key}_y2026`, rls: true },
    ]);
  });
});
