/*
 * Widening a column of posts partition by partition (src/load/column-retype.ts): readers go on during the copy,
 * only the final swap waits for them, a reader that never lets go fails the widening without changing anything,
 * and the loader widens this way when a value needs it.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { retypeColumn } from '../../../src/load/column-retype.js';
import { withTransaction } from '../../../src/load/database.js';
import { Loader } from '../../../src/load/loader.js';
import { migrate } from '../../../src/load/migrate.js';
import { ExactNumber, type MappedPost } from '../../../src/model/post-record.js';
import type { Window } from '../../../src/model/window.js';
import { createTestDatabase } from '../../helpers/database.js';
import { captureLogger, load, post } from './load-fixtures.js';

const db = await createTestDatabase();
const log = captureLogger();

// One window a month, in month partitions: four partitions to copy.
const WINDOWS: Window[] = [
  { start: '2025-10-06', end: '2025-10-12' },
  { start: '2025-11-03', end: '2025-11-09' },
  { start: '2025-12-01', end: '2025-12-07' },
  { start: '2026-01-05', end: '2026-01-11' },
];

function spends(window: number, count: number): MappedPost[] {
  return Array.from({ length: count }, (_, i) =>
    post(window * 1000 + i, { spend: 100 * window + i, caption: `w${window} p${i}` }, [
      { name: 'Region', value: i % 2 ? 'North' : 'South' },
    ]),
  );
}

/** A schema whose `spend` column was typed bigint by whole first values, with four loaded windows. */
async function schemaWithWholeSpends(schema: string): Promise<Loader> {
  const target = { schema, postIdField: 'platform_post_id', partitionPeriod: 'month' as const };
  await migrate(db.pool, target, log.logger);
  const loader = new Loader(db.pool, target, log.logger);
  for (const [i, window] of WINDOWS.entries()) await load(loader, window, `r${i}`, [spends(i, 30)]);
  expect(await columnTypes(schema)).toEqual(new Set(['bigint']));
  return loader;
}

/** The type of `spend` on posts and on each of its partitions. */
async function columnTypes(schema: string): Promise<Set<string>> {
  const { rows } = await db.pool.query<{ t: string }>(
    `SELECT format_type(a.atttypid, a.atttypmod) AS t
       FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND (c.relname = 'posts' OR c.relname ~ '^posts_m[0-9]{6}$')
        AND a.attname = 'spend' AND NOT a.attisdropped`,
    [schema],
  );
  return new Set(rows.map((r) => r.t));
}

/** Rows as text (spend as digits), partitions with their keys: what a widening must keep. */
async function contents(schema: string): Promise<{ rows: string[]; partitions: string[] }> {
  const s = pg.escapeIdentifier(schema);
  const rows = await db.pool.query<{ r: string }>(
    `SELECT concat_ws('|', platform_post_id, _window_start, _window_end, _report_id, spend::text, caption) AS r
       FROM ${s}.posts ORDER BY platform_post_id`,
  );
  const partitions = await db.pool.query<{ p: string }>(
    `SELECT c.relname || ' ' || pg_get_expr(c.relpartbound, c.oid) || ' ' ||
            coalesce((SELECT i.relname FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
                       WHERE x.indrelid = c.oid AND x.indisprimary), 'no key') AS p
       FROM pg_inherits h JOIN pg_class c ON c.oid = h.inhrelid
      WHERE h.inhparent = to_regclass($1) ORDER BY 1`,
    [`${s}.posts`],
  );
  return { rows: rows.rows.map((r) => r.r), partitions: partitions.rows.map((r) => r.p) };
}

const retype = (schema: string) => ({
  schema,
  table: 'posts',
  column: 'spend',
  type: 'numeric',
  key: ['_org', '_window_start', 'platform_post_id'],
  indexed: ['platform_post_id'],
  postIdField: 'platform_post_id',
});

/** Resolves once `pid` waits for a lock on the schema's posts table. */
async function waitingOnPosts(schema: string, pid: number): Promise<void> {
  for (;;) {
    const { rows } = await db.pool.query<{ waiting: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE pid = $1 AND NOT granted AND relation = to_regclass($2)) AS waiting`,
      [pid, `${pg.escapeIdentifier(schema)}.posts`],
    );
    if (rows[0]?.waiting) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('widening a column of posts partition by partition', () => {
  it('lets readers read during the copy and keeps every row, partition and key', async () => {
    const schema = 'copy_phase';
    const loader = await schemaWithWholeSpends(schema);
    const before = await contents(schema);
    const reader = new pg.Client({ connectionString: db.url });
    await reader.connect();
    const seen: string[] = [];
    try {
      const result = await withTransaction(db.pool, undefined, (client) =>
        retypeColumn(client, retype(schema), {
          onCopied: async (partition, done, total) => {
            // A reader that starts while partitions are copied is answered at once, from the old columns.
            const { rows } = await reader.query<{ n: string; t: string }>(
              `SELECT count(*)::text AS n, pg_typeof(max(spend))::text AS t FROM ${schema}.posts`,
            );
            seen.push(`${partition} ${done}/${total}: ${rows[0]?.n} ${rows[0]?.t}`);
          },
        }),
      );
      expect(result.partitions).toBe(WINDOWS.length);
    } finally {
      await reader.end();
    }
    expect(seen).toEqual(
      before.partitions.map((p, i) => `${p.split(' ')[0]} ${i + 1}/${WINDOWS.length}: 120 bigint`),
    );
    expect(await columnTypes(schema)).toEqual(new Set(['numeric']));
    expect(await contents(schema)).toEqual(before);
    const leftovers = await db.pool.query(
      `SELECT relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND relname LIKE 'retype%'`,
      [schema],
    );
    expect(leftovers.rows).toEqual([]);

    // The windows stay ordinary windows: a reload replaces one, a decimal loads.
    await load(loader, WINDOWS[1]!, 'reloaded', [[post(1, { spend: new ExactNumber('12.345') })]]);
    const reloaded = await db.pool.query<{ spend: string }>(
      `SELECT spend::text AS spend FROM ${schema}.posts WHERE _window_start = $1`,
      [WINDOWS[1]!.start],
    );
    expect(reloaded.rows).toEqual([{ spend: '12.345' }]);
  });

  it('waits for a reader holding the table only for the swap, after every partition is copied', async () => {
    const schema = 'swap_wait';
    await schemaWithWholeSpends(schema);
    const before = await contents(schema);
    const reader = new pg.Client({ connectionString: db.url });
    await reader.connect();
    let copied = 0;
    try {
      await reader.query('BEGIN');
      await reader.query(`SELECT count(*) FROM ${schema}.posts`);
      const widening = withTransaction(db.pool, undefined, async (client) => {
        const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
        const waited = waitingOnPosts(schema, pid);
        const result = retypeColumn(client, retype(schema), {
          onCopied: (_partition, done) => {
            copied = done;
          },
        });
        await waited;
        // The reader still holds posts: everything but the swap is done.
        expect(copied).toBe(WINDOWS.length);
        await reader.query('COMMIT');
        return result;
      });
      expect((await widening).partitions).toBe(WINDOWS.length);
    } finally {
      await reader.end();
    }
    expect(await columnTypes(schema)).toEqual(new Set(['numeric']));
    expect(await contents(schema)).toEqual(before);
  });

  it('fails after lock_timeout when a reader never lets go, leaving the column and rows as they were', async () => {
    const schema = 'swap_timeout';
    await schemaWithWholeSpends(schema);
    const before = await contents(schema);
    const reader = new pg.Client({ connectionString: db.url });
    await reader.connect();
    try {
      await reader.query('BEGIN');
      await reader.query(`SELECT count(*) FROM ${schema}.posts`);
      await expect(
        withTransaction(db.pool, undefined, async (client) => {
          await client.query("SET LOCAL lock_timeout = '300ms'");
          return retypeColumn(client, retype(schema));
        }),
      ).rejects.toThrow(/lock timeout/);
      await reader.query('COMMIT');
    } finally {
      await reader.end();
    }
    expect(await columnTypes(schema)).toEqual(new Set(['bigint']));
    expect(await contents(schema)).toEqual(before);
  });

  it('is how the loader widens a bigint column when a decimal arrives, logged with its partitions', async () => {
    const schema = 'by_loader';
    const loader = await schemaWithWholeSpends(schema);
    const before = await contents(schema);
    const next = { start: '2026-02-02', end: '2026-02-08' };
    await load(loader, next, 'decimal', [[post(9001, { spend: new ExactNumber('0.10') })]]);
    expect(await columnTypes(schema)).toEqual(new Set(['numeric']));
    const after = await contents(schema);
    expect(after.rows.slice(0, -1)).toEqual(before.rows);
    expect(after.rows.at(-1)).toBe('9001|2026-02-02|2026-02-08|decimal|0.10');
    const widened = log.lines().filter((l) => l.msg === 'column widened from bigint to numeric');
    expect(widened).toContainEqual(
      expect.objectContaining({ field: 'spend', column: 'spend', partitions: WINDOWS.length }),
    );
  });
});
