import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addDays } from '../../../src/model/dates.js';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { runCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { compareWithReference, snapshotSchema } from '../../helpers/reference-check.js';
import { summaryOf } from '../../helpers/summary.js';
import { TODAY, testNow } from '../../helpers/today.js';

const db = await createTestDatabase();
let sim: RunningSimulator;
const HOURS_4 = 4 * 3_600_000;
const BRAND = 'Café Ñandú';
const start = addDays(TODAY, -40);

beforeAll(async () => {
  sim = await startSimulator({ seed: 21, postsPerDay: 12, now: testNow() });
});
afterAll(async () => {
  await sim.close();
});

async function problems(schema: string, from: string, to: string, brands?: string[]): Promise<string[]> {
  const reference = sim.referencePosts({ start_date: from, end_date: to, ...(brands ? { brands } : {}) });
  return (await compareWithReference(db.pool, schema, reference)).problems;
}

describe('--reset starts over (the built CLI)', () => {
  it('after a filter change, sync --reset --start-date loads the whole history again from the start date', async () => {
    const env = cliEnv(sim, db.url, { POST_REPORTS_SCHEMA: 'refiltered' });
    const first = await runCli(['sync', '--start-date', start], env);
    expect(first.code, first.stderr).toBe(0);
    expect(await problems('refiltered', start, TODAY)).toEqual([]);

    const refused = await runCli(['sync', '--brands', BRAND], env);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/pass --reset/);
    // --reset starts from the start date, so it needs one; refused before anything changes.
    const before = await snapshotSchema(db.pool, 'refiltered');
    const noStart = await runCli(['sync', '--reset', '--yes', '--brands', BRAND], env);
    expect(noStart.code).toBe(2);
    expect(noStart.stderr).toMatch(/--reset .*--start-date/);
    expect(await snapshotSchema(db.pool, 'refiltered')).toBe(before);

    const reset = await runCli(['sync', '--reset', '--yes', '--start-date', start, '--brands', BRAND], env);
    expect(reset.code, reset.stderr).toBe(0);
    expect(reset.summary).toMatchObject({ status: 'succeeded', from: start, to: TODAY, cursor: TODAY });
    expect(summaryOf(reset).reset).toEqual({
      windows: summaryOf(first).windows.loaded,
      posts: summaryOf(first).posts,
    });
    expect(await problems('refiltered', start, TODAY, [BRAND])).toEqual([]);

    // The history stays: the next sync reloads only its lookback.
    const next = await runCli(['sync', '--brands', BRAND], env);
    expect(next.code, next.stderr).toBe(0);
    expect(summaryOf(next).from! > start).toBe(true);
    expect(await problems('refiltered', start, TODAY, [BRAND])).toEqual([]);
  });

  it('with unchanged filters, --reset clears the schema and loads what a first run would', async () => {
    const env = cliEnv(sim, db.url, { POST_REPORTS_SCHEMA: 'restarted' });
    const first = await runCli(['sync', '--start-date', start], env);
    expect(first.code, first.stderr).toBe(0);

    // Posts appear deep in the history, far outside the lookback: only a run that starts over sees them.
    sim.addPosts(addDays(start, 2), 4);
    sim.advanceTime(HOURS_4);
    const again = await runCli(['sync', '--reset', '--yes', '--start-date', start], env);
    expect(again.code, again.stderr).toBe(0);
    expect(again.summary).toMatchObject({ from: start, cursor: TODAY, windows: { skipped: 0 } });
    expect(summaryOf(again).reset).toEqual({
      windows: summaryOf(first).windows.loaded,
      posts: summaryOf(first).posts,
    });
    expect(await problems('restarted', start, TODAY)).toEqual([]);

    // A later start date: nothing before it is left.
    const later = addDays(TODAY, -15);
    const shorter = await runCli(['sync', '--reset', '--yes', '--start-date', later], env);
    expect(shorter.code, shorter.stderr).toBe(0);
    expect(shorter.summary).toMatchObject({ from: later, cursor: TODAY });
    expect(await problems('restarted', later, TODAY)).toEqual([]);

    // backfill --reset: exactly its range, and no cursor (backfills never set one).
    const to = addDays(start, 9);
    const backfill = await runCli(['backfill', '--reset', '--yes', '--from', start, '--to', to], env);
    expect(backfill.code, backfill.stderr).toBe(0);
    expect(backfill.summary).toMatchObject({ from: start, to, cursor: null, windows: { skipped: 0 } });
    expect(summaryOf(backfill).reset?.windows).toBeGreaterThan(0);
    expect(await problems('restarted', start, to)).toEqual([]);
  });

  it("a reset while another organization holds the parents (a long commit, a rename's move) empties its partitions and loads, exit 0", async () => {
    const schema = 'reset_busy';
    const range = ['--from', addDays(TODAY, -20), '--to', addDays(TODAY, -8), '--schema', schema];
    const org = (name: string) => cliEnv(sim, db.url, { POST_REPORTS_ORGANIZATION: name });
    for (const name of ['acme', 'globex']) {
      const loaded = await runCli(['backfill', ...range], org(name));
      expect(loaded.code, loaded.stderr).toBe(0);
    }
    // globex writes through the parents in a transaction that stays open for the whole reset of acme: no moment
    // free of it, which a DROP of acme's partitions would need.
    const holder = await db.pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`UPDATE ${schema}.posts SET _loaded_at = _loaded_at WHERE _org = 'globex'`);
      const reset = await runCli(
        ['backfill', ...range, '--reset', '--yes'],
        cliEnv(sim, db.url, { POST_REPORTS_ORGANIZATION: 'acme', POST_REPORTS_RECONNECT_WAIT_MS: '1000' }),
      );
      expect(reset.code, reset.stderr).toBe(0);
      expect(reset.summary).toMatchObject({ status: 'succeeded', windows: { failed: 0 } });
      expect(reset.stderr).toContain('partitions emptied by the reset kept');
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
    for (const name of ['acme', 'globex']) {
      const reference = sim.referencePosts({ start_date: addDays(TODAY, -20), end_date: addDays(TODAY, -8) });
      expect(
        (await compareWithReference(db.pool, schema, reference, 'platform_post_id', name)).problems,
      ).toEqual([]);
    }
  });
});
