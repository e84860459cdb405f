import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addDays } from '../../../src/model/dates.js';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { runCli, startCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { compareWithReference } from '../../helpers/reference-check.js';
import { TODAY, testNow } from '../../helpers/today.js';

const db = await createTestDatabase();
let sim: RunningSimulator;
const start = addDays(TODAY, -27);
// Mid-window dates: the first windows to carry the change also hold posts without it.
const appears = addDays(TODAY, -19);
const turnsDecimal = addDays(TODAY, -9);
// Fields the documentation does not name, so their types come from their values.
const APPEARING = 'saves_per_view';
const DECIMAL = 'watch_units';

beforeAll(async () => {
  sim = await startSimulator({
    seed: 77,
    postsPerDay: 25,
    now: testNow(),
    fieldSchedule: {
      appearing: [{ field: APPEARING, from: appears }],
      decimalFrom: [{ field: DECIMAL, from: turnsDecimal }],
    },
  });
});
afterAll(async () => {
  await sim.close();
});

async function exact(from: string, to: string): Promise<string[]> {
  const reference = sim.referencePosts({ start_date: from, end_date: to });
  const check = await compareWithReference(db.pool, 'evolving', reference);
  return check.posts === reference.length
    ? check.problems
    : [...check.problems, `${check.posts} posts loaded`];
}

async function columnType(field: string): Promise<string | undefined> {
  const { rows } = await db.pool.query<{ type: string }>(
    `SELECT format_type(a.atttypid, a.atttypmod) AS type
       FROM evolving.field_columns f
       JOIN pg_attribute a ON a.attrelid = 'evolving.posts'::regclass AND a.attname = f.column_name
      WHERE f.field = $1`,
    [field],
  );
  return rows[0]?.type;
}

describe('a field appearing and an integer field turning decimal, from a date on (the built CLI)', () => {
  it('across a backfill, a reload and a sync with a concurrent reader, every value exact', async () => {
    const env = cliEnv(sim, db.url, { POST_REPORTS_SCHEMA: 'evolving', POST_REPORTS_CONCURRENCY: '2' });

    // Before both dates: the field does not exist yet, the other holds whole numbers.
    const before = addDays(appears, -1);
    const first = await runCli(['backfill', '--from', start, '--to', before], env);
    expect(first.code, first.stderr).toBe(0);
    expect(await exact(start, before)).toEqual([]);
    expect(await columnType(APPEARING)).toBeUndefined();
    expect(await columnType(DECIMAL)).toBe('bigint');

    // A reload of those windows and more: the field appears mid-window, NULL for the posts before its date.
    const reloadTo = addDays(turnsDecimal, -1);
    const reload = await runCli(['backfill', '--from', start, '--to', reloadTo, '--reload'], env);
    expect(reload.code, reload.stderr).toBe(0);
    expect(await exact(start, reloadTo)).toEqual([]);
    expect(await columnType(APPEARING)).toBe('bigint');
    expect(await columnType(DECIMAL)).toBe('bigint');

    // A sync to today crosses the date the whole numbers turn decimal, while a reader keeps reading.
    const reader = new pg.Client({ connectionString: db.url });
    await reader.connect();
    const readerErrors: string[] = [];
    // The column's type as each read found it, in order: the reads must span the widening.
    const typesSeen: string[] = [];
    let stop = false;
    const readsDone = (n: number) =>
      new Promise<void>((resolve) => {
        const check = () => (typesSeen.length + readerErrors.length >= n ? resolve() : setTimeout(check, 5));
        check();
      });
    const reading = (async () => {
      while (!stop) {
        try {
          await reader.query(`SELECT count(*)::int AS n, sum(${DECIMAL})::text AS total FROM evolving.posts`);
          const { rows } = await reader.query<{ type: string }>(
            `SELECT format_type(atttypid, atttypmod) AS type FROM pg_attribute
              WHERE attrelid = 'evolving.posts'::regclass AND attname = $1`,
            [DECIMAL],
          );
          typesSeen.push(rows[0]?.type ?? '?');
        } catch (error) {
          readerErrors.push(error instanceof Error ? error.message : String(error));
        }
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    })();
    try {
      // A read before the sync starts, and one after it ended: the reader spans the widening.
      await readsDone(1);
      const sync = startCli(['sync', '--start-date', start], env);
      const result = await sync.done;
      expect(result.code, result.stderr).toBe(0);
      expect(result.summary).toMatchObject({ status: 'succeeded', cursor: TODAY });
      await readsDone(typesSeen.length + readerErrors.length + 1);
    } finally {
      stop = true;
      await reading;
      await reader.end();
    }
    expect(readerErrors).toEqual([]);
    expect(typesSeen[0]).toBe('bigint');
    expect(typesSeen.at(-1)).toBe('numeric');
    // One type, then the other: never back.
    expect(typesSeen.findIndex((t) => t !== 'bigint')).toBe(typesSeen.indexOf('numeric'));
    expect(typesSeen.slice(typesSeen.indexOf('numeric')).every((t) => t === 'numeric')).toBe(true);
    expect(await exact(start, TODAY)).toEqual([]);
    expect(await columnType(DECIMAL)).toBe('numeric');
    expect(await columnType(APPEARING)).toBe('bigint');
    // The whole numbers loaded before the change are kept digit for digit in the widened column.
    const { rows } = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM evolving.posts WHERE ${DECIMAL} IS NOT NULL AND date_captured::text < $1`,
      [turnsDecimal],
    );
    expect(rows[0]?.n).toBe(25 * 18);
  });
});
