/*
 * `plan` prints what a run would do, window by window, with where each stands (loaded when, failed, claimed by
 * whom, to do), and changes nothing: no API call, no table, no schema.
 */
import { afterAll, beforeAll, expect, it, onTestFinished } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { runCli, startCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';

const db = await createTestDatabase();
let sim: RunningSimulator;
beforeAll(async () => {
  sim = await startSimulator({ seed: 53, postsPerDay: 4 });
});
afterAll(async () => {
  await sim.close();
});

interface Line {
  start: string;
  state: string;
  load: boolean;
  rows: number | null;
  loadedAt: string | null;
  lastError: string | null;
  claimedBy: { pid: number } | null;
}

async function plan(schema: string, args: string[]): Promise<Line[]> {
  const result = await runCli(['plan', ...args], cliEnv(sim, db.url, { POST_REPORTS_SCHEMA: schema }));
  expect(result.code, result.stderr).toBe(0);
  return result.stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Line);
}

async function schemaExists(schema: string): Promise<boolean> {
  const { rows } = await db.pool.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
  return rows.length > 0;
}

it('on a schema not set up yet: every window to do, and nothing created', async () => {
  const requests = sim.stats().requests;
  const lines = await plan('fresh', ['--from', '2026-02-02', '--to', '2026-02-15']);
  expect(lines.map((l) => [l.start, l.state, l.load])).toEqual([
    ['2026-02-02', 'todo', true],
    ['2026-02-09', 'todo', true],
  ]);
  expect(await schemaExists('fresh')).toBe(false);
  expect(sim.stats().requests).toBe(requests);
});

it('loaded, failed, claimed and to do, as a backfill, a reload and a sync would see them', async () => {
  const schema = 'planned';
  const env = cliEnv(sim, db.url, { POST_REPORTS_SCHEMA: schema });
  const loaded = await runCli(['backfill', '--from', '2026-03-02', '--to', '2026-03-15'], env);
  expect(loaded.code, loaded.stderr).toBe(0);
  // The API's message is what the plan shows: its errors as JSON objects (the other shapes: error-bodies.test.ts).
  sim.setFaults({ errorBodyShape: 'object' });
  onTestFinished(() => sim.setFaults({ errorBodyShape: null }));
  sim.refuseReports(['2026-03-16'], 'segment value retired');
  onTestFinished(() => sim.refuseReports([]));
  const failed = await runCli(['backfill', '--from', '2026-03-16', '--to', '2026-03-22'], env);
  expect(failed.code).toBe(3);
  sim.refuseReports([]);
  // A live run holds the week of 2026-03-23 (its report stays IN_PROGRESS).
  sim.setFaults({ reportStatusOverride: 'IN_PROGRESS' });
  onTestFinished(() => sim.setFaults({ reportStatusOverride: null }));
  const live = startCli(['backfill', '--from', '2026-03-23', '--to', '2026-03-29'], env);
  onTestFinished(async () => {
    live.child.kill('SIGKILL');
    await live.done;
  });
  await live.waitForOutput('"msg":"report created"');

  const tables = await db.pool.query(`SELECT count(*)::int AS n FROM ${schema}.posts`);
  // The live run keeps polling its report: the plan's own calls would be dimensions or creations.
  const calls = () => {
    const stats = sim.stats();
    return [stats.byRoute['GET /reports/posts/dimensions'], stats.creationCalls];
  };
  const before = calls();
  const lines = await plan(schema, ['--from', '2026-03-02', '--to', '2026-04-05']);
  expect(lines.map((l) => [l.start, l.state, l.load])).toEqual([
    ['2026-03-02', 'loaded', false],
    ['2026-03-09', 'loaded', false],
    ['2026-03-16', 'failed', true],
    ['2026-03-23', 'claimed', true],
    ['2026-03-30', 'todo', true],
  ]);
  expect(lines[0]).toMatchObject({ rows: 28, lastError: null });
  expect(lines[0]?.loadedAt).toMatch(/^\d{4}-\d{2}-\d{2}T/);
  expect(lines[2]?.lastError).toContain('segment value retired');
  expect(lines[3]?.claimedBy?.pid).toBeGreaterThan(0);
  // --reload loads every window again.
  const reload = await plan(schema, ['--from', '2026-03-02', '--to', '2026-03-15', '--reload']);
  expect(reload.map((l) => l.load)).toEqual([true, true]);
  // A sync's plan starts from its start date; nothing was asked of the API or written.
  const sync = await plan(schema, ['--sync', '--start-date', '2026-03-02']);
  expect(sync[0]).toMatchObject({ start: '2026-03-02', state: 'loaded' });
  expect(calls()).toEqual(before);
  expect((await db.pool.query(`SELECT count(*)::int AS n FROM ${schema}.posts`)).rows).toEqual(tables.rows);
});

it('refuses a plan without a range, in one line naming what it needs', async () => {
  const result = await runCli(['plan', '--from', '2026-03-02'], cliEnv(sim, db.url));
  expect(result.code).toBe(2);
  expect(result.stderr.trim().split('\n')).toEqual([
    'post-reports-etl: error: plan needs --from and --to (a backfill), or --sync',
  ]);
});
