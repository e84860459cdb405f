import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backfill, createLogger, parseConfig } from '../../../src/index.js';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { createTestDatabase } from '../../helpers/database.js';
import { compareWithReference } from '../../helpers/reference-check.js';

const db = await createTestDatabase();
let sim: RunningSimulator;
const logger = createLogger({ level: 'silent' });

beforeAll(async () => {
  sim = await startSimulator({ seed: 61, postsPerDay: 6 });
});
afterAll(async () => {
  await sim.close();
});

const config = () =>
  parseConfig({
    POST_REPORTS_BASE_URL: sim.baseUrl,
    POST_REPORTS_TOKEN: sim.token,
    DATABASE_URL: db.url,
    POST_REPORTS_SCHEMA: 'closing',
    POST_REPORTS_POLL_INITIAL_MS: '20',
    POST_REPORTS_LOCK_WAIT_MS: '0',
  });

describe('open windows', () => {
  it('are loaded again until a run finds them over, then skipped', async () => {
    const range = { from: '2026-03-02', to: '2026-03-22' };
    // The range is cut at today: the third week has not begun, and no window of it is recorded.
    const first = await backfill({ config: config(), logger, ...range, today: '2026-03-10' });
    expect(first.windows).toMatchObject({ planned: 2, loaded: 2, skipped: 0 });
    const windows = async () =>
      (
        await db.pool.query(
          `SELECT window_start::text AS start, loaded_through::text AS through
             FROM closing.report_windows ORDER BY window_start`,
        )
      ).rows;
    expect(await windows()).toEqual([
      { start: '2026-03-02', through: '2026-03-08' },
      { start: '2026-03-09', through: '2026-03-09' },
    ]);

    sim.addPosts('2026-03-11', 2);
    sim.advanceTime(4 * 3_600_000);
    // Still inside the second week: its open window again, the third still not begun.
    const same = await backfill({ config: config(), logger, ...range, today: '2026-03-15' });
    expect(same.windows).toMatchObject({ planned: 1, loaded: 1, skipped: 1 });
    expect(await windows()).toEqual([
      { start: '2026-03-02', through: '2026-03-08' },
      { start: '2026-03-09', through: '2026-03-14' },
    ]);

    sim.addPosts('2026-03-20', 3);
    sim.advanceTime(4 * 3_600_000);
    const over = await backfill({ config: config(), logger, ...range, today: '2026-03-30' });
    expect(over.windows).toMatchObject({ planned: 2, loaded: 2, skipped: 1 });
    const reference = sim.referencePosts({ start_date: range.from, end_date: range.to });
    expect((await compareWithReference(db.pool, 'closing', reference)).problems).toEqual([]);

    const done = await backfill({ config: config(), logger, ...range, today: '2026-03-31' });
    expect(done.windows).toMatchObject({ planned: 0, loaded: 0, skipped: 3 });
  });
});
