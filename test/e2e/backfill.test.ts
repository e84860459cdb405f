import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { lockForSession, organizationLockKey, runLockKey, unlockSession } from '../../src/load/locks.js';
import { cutWindows } from '../../src/pipeline/windows.js';
import { type RunningSimulator, startSimulator } from '../../src/simulator/server.js';
import { runCli, startCli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/database.js';
import { cliEnv } from '../helpers/e2e-env.js';
import { compareWithReference } from '../helpers/reference-check.js';

const db = await createTestDatabase();
let sim: RunningSimulator;

beforeAll(async () => {
  sim = await startSimulator({ seed: 7, postsPerDay: 30, generationDelayMs: 150 });
});
afterAll(async () => {
  await sim.close();
});

describe('backfill (the built CLI against the simulator and PostgreSQL)', () => {
  it('loads a 90-day range with 3 windows in flight, exactly as the reference', async () => {
    const result = await runCli(
      ['backfill', '--from', '2026-01-01', '--to', '2026-03-31', '--concurrency', '3', '--schema', 'ninety'],
      cliEnv(sim, db.url),
    );
    expect(result.stderr).not.toContain('error:');
    expect(result.code).toBe(0);
    expect(result.summary).toMatchObject({ status: 'succeeded', exitCode: 0, windows: { failed: 0 } });
    const reference = sim.referencePosts({ start_date: '2026-01-01', end_date: '2026-03-31' });
    expect(reference.length).toBe(90 * 30);
    const check = await compareWithReference(db.pool, 'ninety', reference);
    expect(check.problems).toEqual([]);
    expect(check.posts).toBe(reference.length);
    expect(result.summary?.posts).toBe(reference.length);

    // Running it again skips every loaded window and changes nothing.
    const again = await runCli(
      ['backfill', '--from', '2026-01-01', '--to', '2026-03-31', '--schema', 'ninety'],
      cliEnv(sim, db.url),
    );
    expect(again.code).toBe(0);
    expect(again.summary).toMatchObject({ windows: { planned: 0, loaded: 0 }, reportsCreated: 0 });
    expect((await compareWithReference(db.pool, 'ninety', reference)).problems).toEqual([]);
  });

  it('resumes after SIGKILL in the middle of a window without creating its report again', async () => {
    // 200 posts a day: 3 pages per window, so the kill lands between pages of a window.
    const sim = await startSimulator({
      seed: 8,
      postsPerDay: 200,
      generationDelayMs: 100,
    });
    onTestFinished(() => sim.close());
    const env = cliEnv(sim, db.url, { LOG_LEVEL: 'debug' });
    const args = [
      'backfill',
      '--from',
      '2025-06-02',
      '--to',
      '2025-06-29',
      '--window-days',
      '14',
      '--concurrency',
      '1',
      '--schema',
      'killed',
    ];
    // The simulator holds every page after the first until the kill: the window cannot finish (nor the next
    // report be created) before it.
    const gate = sim.holdAnswers('page', 1);
    const run = startCli(args, env);
    await run.waitForOutput('"msg":"page staged"');
    await gate.held;
    run.child.kill('SIGKILL');
    const killed = await run.done;
    expect(killed.signal).toBe('SIGKILL');
    gate.release();
    expect(sim.stats().reportsCreated).toBe(1);

    const rerun = await runCli(args, env);
    expect(rerun.code).toBe(0);
    const reference = sim.referencePosts({ start_date: '2025-06-02', end_date: '2025-06-29' });
    const check = await compareWithReference(db.pool, 'killed', reference);
    expect(check.problems).toEqual([]);
    // One report per window: the killed run's report was polled again, not created twice.
    const windows = cutWindows('2025-06-02', '2025-06-29', 14);
    expect(sim.stats().reportsCreated).toBe(windows.length);
    for (const w of windows) expect(sim.stats().reportsCreatedByStartDate[w.start]).toBe(1);
    expect(rerun.stderr).toContain('resuming');
  });

  it('lets two concurrent runs share the schema; only a migration, or a reset of its organization, holding it alone makes one exit 4', async () => {
    sim.setFaults({ latencyMs: 20 });
    const args = ['backfill', '--from', '2025-01-06', '--to', '2025-02-16', '--schema', 'twice'];
    // The first to start migrates the new schema alone; the other waits for that, then they share it.
    const waitEnv = cliEnv(sim, db.url, { POST_REPORTS_LOCK_WAIT_MS: '60000' });
    const [a, b] = await Promise.all([runCli(args, waitEnv), runCli(args, waitEnv)]);
    expect([a.code, b.code], a.stderr + b.stderr).toEqual([0, 0]);
    const windows = [a, b].map((r) => r.summary?.windows as Record<string, number>);
    expect(windows[0]!.loaded! + windows[1]!.loaded!).toBe(6);
    expect(windows[0]!.byOthers! + windows[1]!.byOthers!).toBe(6);

    // A session holding the schema alone, as a migration does, or its organization, as a reset does: a run that
    // may not wait exits 4.
    const scope = { schema: 'twice', org: 'default' };
    for (const [key, holds] of [
      [runLockKey('twice'), 'a migration holds schema "twice" alone'],
      [organizationLockKey(scope), 'a reset or a rename holds schema "twice" alone'],
    ] as const) {
      const holder = await db.pool.connect();
      try {
        await lockForSession(holder, key);
        const locked = await runCli([...args, '--reload'], cliEnv(sim, db.url));
        expect(locked.code).toBe(4);
        expect(locked.stderr).toContain(holds);
        expect(locked.summary).toMatchObject({ status: 'lock_held', exitCode: 4 });
      } finally {
        await unlockSession(holder, key);
        holder.release();
      }
    }
    // Another organization's runs do not wait for a reset of this one.
    const holder = await db.pool.connect();
    try {
      await lockForSession(holder, organizationLockKey(scope));
      const other = await runCli([...args, '--organization', 'acme'], cliEnv(sim, db.url));
      expect(other.code, other.stderr).toBe(0);
      expect(other.summary).toMatchObject({ windows: { loaded: 6 } });
    } finally {
      await unlockSession(holder, organizationLockKey(scope));
      holder.release();
    }
    sim.setFaults({ latencyMs: 0 });
    const reference = sim.referencePosts({ start_date: '2025-01-06', end_date: '2025-02-16' });
    for (const org of ['default', 'acme']) {
      const check = await compareWithReference(db.pool, 'twice', reference, 'platform_post_id', org);
      expect(check.problems).toEqual([]);
    }
  });
});
