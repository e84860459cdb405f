// PENDING (not in npm test: rename to .test.ts to run). SIGTERM while the window swap waits on a table lock does
// not end the run: the swap's statements are not cancelled on abort (src/load/loader.ts commitWindows checks the
// signal only between statements; withTransaction in src/load/database.ts never cancels the running query), so the
// run waits for the lock (up to statement_timeout, 10 min by default). Fix: on abort, cancel the checked-out
// client's statement (SELECT pg_cancel_backend(client.processID) on another pooled connection) in withTransaction.
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { runCli, startCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { snapshotSchema } from '../../helpers/reference-check.js';

const db = await createTestDatabase();
let sim: RunningSimulator | undefined;
afterAll(async () => {
  await sim?.close();
});

it('ends with 130 within 10 s when SIGTERM arrives while the swap waits on a lock', async () => {
  sim = await startSimulator({ seed: 34, postsPerDay: 30 });
  const args = [
    'backfill',
    '--from',
    '2025-04-07',
    '--to',
    '2025-04-20',
    '--window-days',
    '14',
    '--schema',
    'swap',
  ];
  expect((await runCli(args, cliEnv(sim, db.url))).code).toBe(0);
  const before = await snapshotSchema(db.pool, 'swap');
  sim.advanceTime(4 * 3_600_000);
  const holder = new pg.Client({ connectionString: db.url });
  await holder.connect();
  await holder.query('BEGIN');
  await holder.query('LOCK TABLE swap.posts IN ACCESS EXCLUSIVE MODE');
  const run = startCli([...args, '--reload'], cliEnv(sim, db.url, { LOG_LEVEL: 'debug' }));
  await run.waitForOutput('"msg":"window staged"');
  for (;;) {
    const { rows } = await db.pool.query(
      `SELECT 1 FROM pg_stat_activity WHERE application_name = 'post-reports-etl' AND wait_event_type = 'Lock'`,
    );
    if (rows.length > 0) break;
    await sleep(20);
  }
  run.child.kill('SIGTERM');
  const outcome = await Promise.race([run.done, sleep(10_000).then(() => 'hung' as const)]);
  await holder.query('ROLLBACK');
  await holder.end();
  expect(outcome).not.toBe('hung');
  const result = await run.done;
  expect(result.code).toBe(130);
  expect((await snapshotSchema(db.pool, 'swap')).split('\n\n')[0]).toBe(before.split('\n\n')[0]);
});
