import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cutWindows } from '../../../src/pipeline/windows.js';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { runCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { FaultTally } from '../../soak/fault-tally.js';
import { Ledger } from '../../soak/verify-tables.js';

const db = await createTestDatabase();
let sim: RunningSimulator;
const FROM = '2025-05-05';
const TO = '2025-05-25';
const grid = cutWindows(FROM, TO, 7);

beforeAll(async () => {
  sim = await startSimulator({ seed: 90, postsPerDay: 10 });
});
afterAll(async () => {
  await sim.close();
});

const backfill = (schema: string, extra: string[] = []) =>
  runCli(['backfill', '--from', FROM, '--to', TO, '--schema', schema, ...extra], cliEnv(sim, db.url));

describe("the soak's ledger", () => {
  it('catches a window lost together with its record, which the final clean run would have hidden', async () => {
    const ledger = new Ledger(sim, 'lost', { from: FROM, to: TO }, grid);
    expect((await backfill('lost')).code).toBe(0);
    expect((await ledger.check(db.pool, new Set())).problems).toEqual([]);
    // A window's rows and its record disappear, as a faulty reload could make them.
    await db.pool.query(`DELETE FROM lost.posts WHERE _window_start = $1`, [grid[1]?.start]);
    await db.pool.query(`DELETE FROM lost.report_windows WHERE window_start = $1`, [grid[1]?.start]);
    const check = await ledger.check(db.pool, new Set());
    expect(check.problems).toEqual([
      `window ${grid[1]?.start}..${grid[1]?.end} was loaded (epoch 0) but its posts are gone`,
    ]);
  });

  it('knows which windows hold late data: a window not reloaded keeps the old figures, and the end needs the new ones', async () => {
    const ledger = new Ledger(sim, 'late', { from: FROM, to: TO }, grid);
    expect((await backfill('late')).code).toBe(0);
    expect((await ledger.check(db.pool, new Set())).problems).toEqual([]);
    ledger.revise([grid[0]?.start ?? FROM]);
    sim.advanceTime(4 * 3_600_000);
    // Old figures are still right after the revision: nothing reloaded them.
    expect((await ledger.check(db.pool, new Set())).problems).toEqual([]);
    const complete = await ledger.checkComplete(db.pool);
    expect(complete.problems).toEqual([
      `window ${grid[0]?.start}..${grid[0]?.end} holds the figures of epoch 0, not the current 1`,
    ]);
    expect((await backfill('late', ['--reload'])).code).toBe(0);
    expect((await ledger.checkComplete(db.pool)).problems).toEqual([]);
    // Once reloaded, a window never goes back to older figures.
    await db.pool.query(`UPDATE late.posts SET ${'total_spend'} = total_spend + 1 WHERE _window_start = $1`, [
      grid[0]?.start,
    ]);
    // The problem names the window and the posts off by exactly the one added to their spend, field by field.
    const prefix = `window ${grid[0]?.start}..${grid[0]?.end} holds the figures of no epoch from 1 to 1; against the current truth: `;
    const problems = (await ledger.check(db.pool, new Set())).problems;
    expect(problems).toHaveLength(1);
    expect(problems[0]?.startsWith(prefix)).toBe(true);
    const lines = (problems[0] ?? '').slice(prefix.length).split('; ');
    expect(lines).toHaveLength(5);
    for (const line of lines) {
      const match =
        /^post (\d+) field total_spend: loaded \{"number":"([\d.]+)"\}, expected \{"number":"([\d.]+)"\}$/.exec(
          line,
        );
      expect(match, line).not.toBeNull();
      expect(Math.round((Number(match?.[2]) - Number(match?.[3])) * 100)).toBe(100);
    }
  });
});

describe("the soak's fault tally", () => {
  it('counts a kind for a run only when it was served to that run: a later run serving it does not make up a miss', () => {
    const tally = new FaultTally();
    tally.record('run 1', ['report-gone', 'sigkill'], { sigkill: 1 });
    // The next run serves report-gone, but did not plan it: run 1's miss stands.
    tally.record('run 2', ['sigkill'], { sigkill: 1, 'report-gone': 3 });
    expect(tally.table({ served: true })).toEqual([
      '  report-gone            struck in   0 of   1 runs (served report-gone 0); missed in run 1',
      '  sigkill                struck in   2 of   2 runs (served sigkill 2)',
    ]);
    expect(tally.failures(0.8)).toEqual([
      'report-gone struck in 0 of the 1 runs that planned it (at least 80 % needed)',
    ]);
  });

  it('fails a kind that struck in fewer than the stated share of its runs, and names the runs it missed', () => {
    const tally = new FaultTally();
    for (const run of [1, 2, 3, 4, 5]) {
      tally.record(`run ${run}`, ['page-token-expires'], run <= 3 ? { 'page-token-expired': 1 } : {});
    }
    expect(tally.table({ served: true })).toEqual([
      '  page-token-expires     struck in   3 of   5 runs (served page-token-expired 3); missed in run 4, run 5',
    ]);
    expect(tally.table({ served: false })).toEqual([
      '  page-token-expires     struck in   3 of   5 runs; missed in run 4, run 5',
    ]);
    expect(tally.failures(0.6)).toEqual([]);
    expect(tally.failures(0.8)).toEqual([
      'page-token-expires struck in 3 of the 5 runs that planned it (at least 80 % needed)',
    ]);
  });

  it('needs every kind of evidence a fault has, and takes any other kind by a served count of its own name', () => {
    const tally = new FaultTally();
    tally.record('run 1', ['late-data-outage', 'idle-cut'], { 'late-data': 1, 'idle-cut': 2 });
    tally.record('run 2', ['late-data-outage'], { 'late-data': 1, 'creation-outage': 4 });
    expect(FaultTally.struck(['late-data-outage', 'idle-cut'], { 'late-data': 1, 'idle-cut': 2 })).toEqual([
      'idle-cut',
    ]);
    expect(tally.table({ served: true })).toEqual([
      '  late-data-outage       struck in   1 of   2 runs (served late-data 2, creation-outage 4); missed in run 1',
      '  idle-cut               struck in   1 of   1 runs (served idle-cut 2)',
    ]);
  });
});
