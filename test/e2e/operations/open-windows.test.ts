import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addDays } from '../../../src/model/dates.js';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { runCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { compareWithReference } from '../../helpers/reference-check.js';
import { TODAY, testNow } from '../../helpers/today.js';

const db = await createTestDatabase();
let sim: RunningSimulator;
const HOURS_4 = 4 * 3_600_000;

beforeAll(async () => {
  sim = await startSimulator({ seed: 51, postsPerDay: 10, now: testNow() });
});
afterAll(async () => {
  await sim.close();
});

describe('open windows (the built CLI)', () => {
  it('a window reaching today is recorded as open (a --to after today is cut there), and the same backfill run later completes it', async () => {
    const from = addDays(TODAY, -12);
    const to = addDays(TODAY, 13);
    const env = cliEnv(sim, db.url, { POST_REPORTS_SCHEMA: 'open' });
    const args = ['backfill', '--from', from, '--to', to];
    const first = await runCli(args, env);
    expect(first.code, first.stderr).toBe(0);
    const { rows } = await db.pool.query<{ start: string; end: string; through: string }>(
      `SELECT window_start::text AS start, window_end::text AS end, loaded_through::text AS through
         FROM open.report_windows ORDER BY window_start`,
    );
    const open = rows.filter((w) => w.end >= TODAY);
    const closed = rows.filter((w) => w.end < TODAY);
    // Nothing is recorded for dates that have not begun: the last window ends today.
    expect(open).toEqual([{ start: expect.any(String), end: TODAY, through: addDays(TODAY, -1) }]);
    expect(first.summary).toMatchObject({ to: TODAY });
    expect(closed.length).toBeGreaterThan(0);
    // Loaded up to yesterday: today is not over.
    for (const w of open) expect(w.through).toBe(addDays(TODAY, -1));
    for (const w of closed) expect(w.through).toBe(w.end);

    // Posts of today arrive after the first run.
    sim.addPosts(TODAY, 4);
    sim.advanceTime(HOURS_4);
    const again = await runCli(args, env);
    expect(again.code, again.stderr).toBe(0);
    expect(again.summary).toMatchObject({
      windows: { planned: open.length, loaded: open.length, skipped: closed.length },
    });
    const reference = sim.referencePosts({ start_date: from, end_date: TODAY });
    expect((await compareWithReference(db.pool, 'open', reference)).problems).toEqual([]);
  });
});
