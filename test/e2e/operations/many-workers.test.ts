/*
 * Many processes on one schema, as orchestrators start them: identical commands (duplicate triggers, a Job's
 * pods), overlapping and disjoint ranges, some killed mid-window and started again, reports taking time to
 * generate. Every process ends well, the data is exact, and no window's report is asked for by two processes.
 */
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { type CliResult, runCli, startCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { compareWithReference } from '../../helpers/reference-check.js';
import { duplicateLiveWindows } from '../../soak/live-requests.js';
import { RecordingProxy } from '../../soak/recording-proxy.js';

const db = await createTestDatabase();
let sim: RunningSimulator;

beforeAll(async () => {
  sim = await startSimulator({ seed: 47, postsPerDay: 6, generationDelayMs: 300 });
});
afterAll(async () => {
  await sim.close();
});

function env(schema: string): Record<string, string> {
  // Waiting for the first process's migrations is part of starting together.
  return cliEnv(sim, db.url, { POST_REPORTS_SCHEMA: schema, POST_REPORTS_LOCK_WAIT_MS: '60000' });
}

function backfill(from: string, to: string): string[] {
  return ['backfill', '--from', from, '--to', to, '--concurrency', '2'];
}

/** When each window's report was asked for since `before` (the simulator records every call, reuse included). */
function creationsSince(before: Record<string, number[]>): Record<string, number[]> {
  const now = sim.stats().creationCallsByWindow;
  return Object.fromEntries(
    Object.entries(now)
      .map(([window, times]) => [window, times.slice(before[window]?.length ?? 0)] as const)
      .filter(([, times]) => times.length > 0),
  );
}

async function exact(schema: string, from: string, to: string): Promise<string[]> {
  const reference = sim.referencePosts({ start_date: from, end_date: to });
  return (await compareWithReference(db.pool, schema, reference)).problems;
}

function windowsOf(result: CliResult): Record<string, number> {
  return (result.summary?.windows ?? {}) as Record<string, number>;
}

describe('many processes on one schema (the built CLI)', () => {
  it('identical, overlapping and disjoint ranges at once: all exit 0, exact, one report per window', async () => {
    const schema = 'many';
    const before = sim.stats().creationCallsByWindow;
    const ranges: [string, string][] = [
      ['2026-01-05', '2026-03-01'],
      ['2026-01-05', '2026-03-01'],
      ['2026-01-05', '2026-03-01'],
      ['2026-02-02', '2026-03-29'],
      ['2026-03-30', '2026-04-26'],
    ];
    const results = await Promise.all(ranges.map(([from, to]) => runCli(backfill(from, to), env(schema))));
    for (const result of results) {
      expect(result.code, result.stderr.slice(-3000)).toBe(0);
      expect(windowsOf(result)).toMatchObject({ failed: 0, interrupted: 0 });
    }
    // Each process accounts for every window it planned: loaded by itself, or by another while it waited.
    for (const [i, result] of results.entries()) {
      const w = windowsOf(result);
      expect(w.loaded! + w.byOthers!, `process ${i}`).toBe(w.planned);
    }
    // The 16 weeks were loaded once each, shared between the processes.
    expect(results.reduce((n, r) => n + windowsOf(r).loaded!, 0)).toBe(16);
    expect(results.filter((r) => windowsOf(r).loaded! > 0).length).toBeGreaterThan(1);
    const calls = creationsSince(before);
    expect(Object.keys(calls)).toHaveLength(16);
    expect(Object.values(calls).every((times) => times.length === 1)).toBe(true);
    expect(await exact(schema, '2026-01-05', '2026-04-26')).toEqual([]);
  });

  it('processes killed mid-window and started again: the others and the restarts finish their work exactly', async () => {
    const schema = 'killed';
    const before = sim.stats().creationCallsByWindow;
    const args = backfill('2025-09-01', '2025-11-23');
    // Each process talks to the API through a port of its own: which process asked for which report, and when.
    const proxy = await RecordingProxy.start(sim.baseUrl, 6);
    onTestFinished(() => proxy.close());
    const through = (client: number) => ({ ...env(schema), POST_REPORTS_BASE_URL: proxy.baseUrl(client) });
    const runs = [0, 1, 2, 3].map((client) => startCli(args, through(client)));
    // Two processes die once each holds a window whose report it created.
    for (const run of runs.slice(0, 2)) {
      await run.waitForOutput('"msg":"report created"');
      run.child.kill('SIGKILL');
    }
    const restarted = [4, 5].map((client) => startCli(args, through(client)));
    const killed = await Promise.all(runs.slice(0, 2).map((r) => r.done));
    expect(killed.map((r) => r.signal)).toEqual(['SIGKILL', 'SIGKILL']);
    const finished = await Promise.all([...runs.slice(2), ...restarted].map((r) => r.done));
    for (const result of finished) {
      expect(result.code, result.stderr.slice(-3000)).toBe(0);
      expect(windowsOf(result)).toMatchObject({ failed: 0, interrupted: 0 });
    }
    // A killed process's window is resumed with the report it recorded, by whoever claims it next; a report it
    // asked for without recording it may be asked for again, after its death. No window's report was worked on by
    // two processes at overlapping times.
    expect(Object.keys(creationsSince(before))).toHaveLength(12);
    const { calls } = proxy.take();
    expect(duplicateLiveWindows(calls)).toEqual([]);
    expect(new Set(calls.map((c) => c.client)).size).toBe(6);
    expect(await exact(schema, '2025-09-01', '2025-11-23')).toEqual([]);
  });

  it('a reset waits for the runs on the schema, saying so, then starts over alone', async () => {
    const schema = 'reset_waits';
    const first = await runCli(backfill('2026-05-04', '2026-05-17'), env(schema));
    expect(first.code, first.stderr.slice(-2000)).toBe(0);
    // Long enough to still be working when the reset, a process of its own, has started.
    const run = startCli(backfill('2026-05-18', '2026-10-25'), env(schema));
    await run.waitForOutput('"msg":"report created"');
    const reset = await runCli(
      ['sync', '--reset', '--yes', '--start-date', '2026-06-01'],
      cliEnv(sim, db.url, { POST_REPORTS_SCHEMA: schema, POST_REPORTS_LOCK_WAIT_MS: '60000' }),
    );
    const running = await run.done;
    expect(running.code, running.stderr.slice(-2000)).toBe(0);
    expect(reset.code, reset.stderr.slice(-2000)).toBe(0);
    expect(reset.stderr).toContain(
      '--reset needs schema \\"reset_waits\\" alone, and other runs are working on it',
    );
    // The reset came after the run: what it loaded is gone, and the schema holds exactly what the sync loaded,
    // from its start date to its cursor.
    const cursor = String(reset.summary?.cursor);
    expect(reset.summary).toMatchObject({ from: '2026-06-01' });
    expect(await exact(schema, '2026-06-01', cursor)).toEqual([]);
  });
});
