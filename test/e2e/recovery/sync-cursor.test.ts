import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addDays } from '../../../src/model/dates.js';
import { cutWindows } from '../../../src/pipeline/windows.js';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { runCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { compareWithReference } from '../../helpers/reference-check.js';
import { summaryOf } from '../../helpers/summary.js';
import { TODAY, testNow } from '../../helpers/today.js';

const db = await createTestDatabase();
let sim: RunningSimulator;
const start = addDays(TODAY, -34);
const windows = cutWindows(start, TODAY, 7);
// A window in the middle of the range: windows after it load, the cursor must not pass it.
const failing = windows[2] ?? { start, end: start };

beforeAll(async () => {
  sim = await startSimulator({ seed: 44, postsPerDay: 12, now: testNow() });
});
afterAll(async () => {
  await sim.close();
});

describe('sync with a window that keeps failing (the built CLI)', () => {
  it('stops the cursor the day before that window, keeps what loaded, and the next sync recovers it', async () => {
    const env = cliEnv(sim, db.url, { POST_REPORTS_SCHEMA: 'stuck', POST_REPORTS_WINDOW_ATTEMPTS: '2' });
    sim.setFaults({ failReportStartDates: [failing.start] });
    const first = await runCli(['sync', '--start-date', start], env);
    expect(first.code, first.stderr).toBe(3);
    const summary = summaryOf(first);
    expect(summary).toMatchObject({ status: 'partial', cursor: addDays(failing.start, -1) });
    expect(summary.failures).toEqual([
      expect.objectContaining({ start: failing.start, end: failing.end, code: 'REPORT_FAILED' }),
    ]);
    expect(summary.windows).toMatchObject({ loaded: windows.length - 1, failed: 1 });
    // Every other window loaded, before and after the failed one; nothing of the failed one.
    const all = sim.referencePosts({ start_date: start, end_date: TODAY });
    const others = all.filter((p) => p.date < failing.start || p.date > failing.end);
    expect((await compareWithReference(db.pool, 'stuck', others)).problems).toEqual([]);

    // Still failing: the cursor stays where it was, it never moves past the window.
    const again = await runCli(['sync'], env);
    expect(again.code, again.stderr).toBe(3);
    expect(summaryOf(again).cursor).toBe(addDays(failing.start, -1));
    expect(String(summaryOf(again).from) <= failing.start).toBe(true);

    // The API hands back the same failed report until its reuse period ends.
    sim.setFaults({ failReportStartDates: [] });
    sim.advanceTime(4 * 3_600_000);
    const recovered = await runCli(['sync'], env);
    expect(recovered.code, recovered.stderr).toBe(0);
    expect(summaryOf(recovered)).toMatchObject({ status: 'succeeded', cursor: TODAY, failures: [] });
    expect(String(summaryOf(recovered).from) <= failing.start).toBe(true);
    expect((await compareWithReference(db.pool, 'stuck', all)).problems).toEqual([]);
  });
});
