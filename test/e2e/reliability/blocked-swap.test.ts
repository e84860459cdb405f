import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, expect, it } from 'vitest';
import { commitLockKey, lockKey } from '../../../src/load/locks.js';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { type CliRun, runCli, startCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { compareWithReference } from '../../helpers/reference-check.js';

const db = await createTestDatabase();
const SCHEMA = 'swap';
const FROM = '2025-04-07';
const TO = '2025-04-20';
let sim: RunningSimulator | undefined;
const holders: pg.Client[] = [];
afterAll(async () => {
  for (const holder of holders) await holder.end().catch(() => {});
  await sim?.close();
});

/** The loaded rows, whatever the storage layout (plain tables or window partitions). */
async function loadedData(): Promise<string> {
  const parts: string[] = [];
  for (const table of ['posts', 'post_custom_segments', 'field_columns']) {
    const { rows } = await db.pool.query<{ doc: string }>(
      `SELECT row_to_json(t)::text AS doc FROM ${SCHEMA}.${table} t ORDER BY 1`,
    );
    parts.push(`${table}: ${rows.map((r) => r.doc).join('\n')}`);
  }
  return parts.join('\n\n');
}

async function holder(): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: db.url });
  holders.push(client);
  await client.connect();
  await client.query('BEGIN');
  return client;
}

/** Resolves once a session of the connector waits for a lock of this kind ('advisory', 'relation'). */
async function runWaitsFor(locktype: string): Promise<void> {
  for (;;) {
    const { rows } = await db.pool.query(
      `SELECT 1 FROM pg_locks l JOIN pg_stat_activity a USING (pid)
        WHERE a.application_name LIKE 'post-reports-etl run %' AND NOT l.granted AND l.locktype = $1`,
      [locktype],
    );
    if (rows.length > 0) return;
    await sleep(20);
  }
}

/** Harness guard only: a child still running after this is a hang, and fails the test. */
async function endsWithin(run: CliRun, ms: number) {
  const guard = sleep(ms).then(() => 'hung' as const);
  const outcome = await Promise.race([run.done, guard]);
  if (outcome === 'hung') run.child.kill('SIGKILL');
  return outcome;
}

it('ends with 130 within 10 s when SIGTERM arrives while the swap waits on a table lock', async () => {
  sim = await startSimulator({ seed: 34, postsPerDay: 30 });
  const args = ['backfill', '--from', FROM, '--to', TO, '--window-days', '14', '--schema', SCHEMA];
  const first = await runCli(args, cliEnv(sim, db.url));
  expect(first.code, first.stderr).toBe(0);
  const before = await loadedData();
  expect(before).toContain('posts: {');
  sim.advanceTime(4 * 3_600_000);

  // The swap is held at its start until another session holds posts, so that it then waits on the table lock
  // whatever it did before (staging must not be what waits).
  const swapHolder = await holder();
  await swapHolder.query(lockKey, [commitLockKey(SCHEMA)]);
  const run = startCli([...args, '--reload'], cliEnv(sim, db.url, { LOG_LEVEL: 'debug' }));
  await run.waitForOutput('"msg":"window staged"');
  await runWaitsFor('advisory');
  const tableHolder = await holder();
  await tableHolder.query(`LOCK TABLE ${SCHEMA}.posts IN ACCESS EXCLUSIVE MODE`);
  await swapHolder.query('ROLLBACK');
  await runWaitsFor('relation');

  run.child.kill('SIGTERM');
  const outcome = await endsWithin(run, 10_000);
  await tableHolder.query('ROLLBACK');
  expect(outcome, 'still running 10 s after SIGTERM while the swap waited on a lock').not.toBe('hung');
  const result = await run.done;
  expect(result.code, result.stderr.slice(-2000)).toBe(130);
  expect(result.summary).toMatchObject({ status: 'interrupted', exitCode: 130 });
  expect(await loadedData()).toBe(before);

  // The run lock was released: a run that may not wait starts at once, and completes the reload exactly.
  const next = await runCli([...args, '--reload'], cliEnv(sim, db.url, { POST_REPORTS_LOCK_WAIT_MS: '0' }));
  expect(next.code, next.stderr.slice(-2000)).toBe(0);
  const reference = sim.referencePosts({ start_date: FROM, end_date: TO });
  expect((await compareWithReference(db.pool, SCHEMA, reference)).problems).toEqual([]);
});
