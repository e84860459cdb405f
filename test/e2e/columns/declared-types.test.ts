/*
 * Issue 13 point 6 through the built CLI: documented fields get their documented types from the first window
 * (total_spend numeric even when the first spends are whole numbers, date_captured a date, counts bigint, rates
 * numeric), undocumented ones are typed from their values, and an older schema's bigint total_spend is widened
 * when a decimal first needs it, not before. A date_captured that is no date: bad-input-sweep.test.ts.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { runCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { compareWithReference } from '../../helpers/reference-check.js';

const db = await createTestDatabase();
// Three ISO weeks: the first two have whole-number spends, the third decimals.
const WEEKS = [
  { start: '2026-03-02', end: '2026-03-08' },
  { start: '2026-03-09', end: '2026-03-15' },
  { start: '2026-03-16', end: '2026-03-22' },
] as const;
let sim: RunningSimulator;

beforeAll(async () => {
  sim = await startSimulator({ seed: 13, postsPerDay: 12, wholeSpendThrough: WEEKS[1].end });
});
afterAll(async () => {
  await sim.close();
});

async function columnTypes(schema: string): Promise<Record<string, string>> {
  const { rows } = await db.pool.query<{ c: string; t: string }>(
    `SELECT column_name AS c, data_type AS t FROM information_schema.columns
      WHERE table_schema = $1 AND table_name = 'posts'`,
    [schema],
  );
  return Object.fromEntries(rows.map((r) => [r.c, r.t]));
}

async function backfill(schema: string, week: { start: string; end: string }) {
  const result = await runCli(
    ['backfill', '--from', week.start, '--to', week.end, '--schema', schema],
    cliEnv(sim, db.url),
  );
  expect(result.code, result.stderr).toBe(0);
  return result;
}

async function expectReference(schema: string, to: string): Promise<void> {
  const reference = sim.referencePosts({ start_date: WEEKS[0].start, end_date: to });
  const check = await compareWithReference(db.pool, schema, reference);
  expect(check.problems).toEqual([]);
  expect(check.posts).toBe(reference.length);
}

function widenings(stderr: string): unknown[] {
  return stderr
    .split('\n')
    .filter((line) => line.includes('"msg":"column widened from bigint to numeric"'))
    .map((line) => JSON.parse(line) as unknown);
}

describe('declared types of documented fields (the built CLI)', () => {
  it('types documented fields as documented from the first window, so that no later window retypes them', async () => {
    const schema = 'declared';
    const first = await backfill(schema, WEEKS[0]);
    const spends = await db.pool.query<{ whole: boolean; n: number }>(
      `SELECT bool_and(total_spend = trunc(total_spend)) AS whole, count(total_spend)::int AS n FROM ${schema}.posts`,
    );
    expect(spends.rows[0]).toEqual({ whole: true, n: expect.any(Number) });
    expect(spends.rows[0]?.n).toBeGreaterThan(0);
    expect(await columnTypes(schema)).toMatchObject({
      platform_post_id: 'bigint',
      platform_asset_id: 'bigint',
      brand: 'text',
      status: 'text',
      branded: 'boolean',
      total_spend: 'numeric',
      currency: 'text',
      date_captured: 'date',
      creative_link: 'text',
      engagements: 'bigint',
      conversions: 'bigint',
      purchase_count: 'bigint',
      engagement_rate: 'numeric',
      roas: 'numeric',
      third_party_data: 'jsonb',
      // Not documented: typed from the values.
      impressions: 'bigint',
      ctr: 'numeric',
    });
    const added = first.stderr
      .split('\n')
      .filter((line) => line.includes('"msg":"new fields: columns added to posts"'))
      .flatMap((line) => (JSON.parse(line) as { columns: unknown[] }).columns);
    expect(added).toContainEqual({ field: 'total_spend', column: 'total_spend', type: 'numeric' });
    expect(added).toContainEqual({ field: 'date_captured', column: 'date_captured', type: 'date' });

    for (const week of WEEKS.slice(1)) {
      const next = await backfill(schema, week);
      expect(widenings(next.stderr)).toEqual([]);
    }
    const decimals = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${schema}.posts WHERE total_spend <> trunc(total_spend)`,
    );
    expect(decimals.rows[0]?.n).toBeGreaterThan(0);
    expect((await columnTypes(schema)).total_spend).toBe('numeric');
    await expectReference(schema, WEEKS[2].end);
    // A date column: date arithmetic works as is.
    const dated = await db.pool.query<{ ok: boolean }>(
      `SELECT bool_and(date_captured BETWEEN _window_start AND _window_end) AS ok FROM ${schema}.posts`,
    );
    expect(dated.rows[0]?.ok).toBe(true);
  });

  it("widens an older schema's bigint total_spend when a decimal first needs it, and only then", async () => {
    const schema = 'older';
    await backfill(schema, WEEKS[0]);
    // As an older connector typed them from whole first values (posts_latest, which holds them, dropped first, as
    // the storage model tells an operator: the next run makes it again).
    await db.pool.query(
      `DROP VIEW ${pg.escapeIdentifier(schema)}.posts_latest;
       ALTER TABLE ${pg.escapeIdentifier(schema)}.posts ALTER COLUMN total_spend TYPE bigint,
         ALTER COLUMN date_captured TYPE text`,
    );
    const whole = await backfill(schema, WEEKS[1]);
    expect(widenings(whole.stderr)).toEqual([]);
    expect(await columnTypes(schema)).toMatchObject({ total_spend: 'bigint', date_captured: 'text' });

    const decimal = await backfill(schema, WEEKS[2]);
    expect(widenings(decimal.stderr)).toEqual([
      // Both weeks loaded so far are in the partition of 2026.
      expect.objectContaining({ field: 'total_spend', column: 'total_spend', partitions: 1 }),
    ]);
    // Every date fits a text column: it stays as it was.
    expect(await columnTypes(schema)).toMatchObject({ total_spend: 'numeric', date_captured: 'text' });
    await expectReference(schema, WEEKS[2].end);
  });
});
