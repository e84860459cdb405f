import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { commitLockKey, ddlLockKey, lockHolders } from '../../../src/load/locks.js';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { type CliResult, startCli } from '../../helpers/cli.js';
import { type Cut, type CuttingProxy, startCuttingProxy } from '../../helpers/cutting-proxy.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { lockWait } from '../../helpers/lock-wait.js';
import { compareWithReference } from '../../helpers/reference-check.js';

/*
 * A commit meets a database fault: its answer lost after PostgreSQL committed, its session cut twice, a deadlock, a
 * lock waited for past lock_timeout. The window loads once, is counted loaded, and the run exits 0.
 */
const db = await createTestDatabase();
const server = new URL(db.url);
const proxy: CuttingProxy = await startCuttingProxy({ host: server.hostname, port: Number(server.port) });
const sims: RunningSimulator[] = [];
afterAll(async () => {
  proxy.close();
  for (const sim of sims) await sim.close();
});

const FROM = '2025-04-07';
const TO = '2025-04-13';
const LOCK_NUMBER = 'hashtextextended($1, 0)';

async function simulator(seed: number): Promise<RunningSimulator> {
  const sim = await startSimulator({ seed, postsPerDay: 30 });
  sims.push(sim);
  return sim;
}

function args(schema: string): string[] {
  return ['backfill', '--from', FROM, '--to', TO, '--window-days', '7', '--schema', schema];
}

/** The run loaded its one window exactly, counted it loaded, and left no stage behind. */
async function expectLoaded(result: CliResult, sim: RunningSimulator, schema: string): Promise<void> {
  expect(result.stderr).not.toMatch(/Unhandled 'error' event|\n\s+at [^\n]+:\d+:\d+|"stack":/);
  expect(result.code, result.stderr.slice(-3000)).toBe(0);
  expect(result.summary).toMatchObject({
    status: 'succeeded',
    exitCode: 0,
    windows: { planned: 1, loaded: 1, failed: 0 },
    failures: [],
  });
  const reference = sim.referencePosts({ start_date: FROM, end_date: TO });
  expect((await compareWithReference(db.pool, schema, reference)).problems).toEqual([]);
  const state = await db.pool.query<{ status: string; attempts: number }>(
    `SELECT status, attempts FROM ${pg.escapeIdentifier(schema)}.report_windows`,
  );
  expect(state.rows).toEqual([{ status: 'loaded', attempts: 1 }]);
  const stages = await db.pool.query(`SELECT 1 FROM ${pg.escapeIdentifier(schema)}.stage_progress`);
  expect(stages.rowCount).toBe(0);
}

describe('a commit whose session is cut (the built CLI, through a proxy)', () => {
  const cases: { name: string; cuts: Cut[]; seed: number }[] = [
    { name: 'its answer lost after PostgreSQL committed', cuts: ['answer'], seed: 61 },
    {
      name: 'cut before it committed, then its answer lost after PostgreSQL committed',
      cuts: ['statement', 'answer'],
      seed: 62,
    },
    { name: 'cut twice before it committed', cuts: ['statement', 'statement'], seed: 66 },
  ];
  for (const { name, cuts, seed } of cases) {
    it(`${name}: the window is loaded once, counted loaded, exit 0`, async () => {
      const sim = await simulator(seed);
      const schema = `cut_${cuts.join('_')}`;
      let cut = false;
      const done = proxy.cutTransactions(commitLockKey(schema), cuts).then(() => {
        cut = true;
      });
      const run = startCli(args(schema), cliEnv(sim, proxy.urlThrough(db.url)));
      const result = await run.done;
      await Promise.race([done, sleep(0)]);
      expect(cut, 'the proxy made every cut').toBe(true);
      await expectLoaded(result, sim, schema);
      expect(result.stderr).toContain('committing again');
      if (cuts.at(-1) === 'answer') {
        expect(result.stderr).toContain('the commit took effect before its answer was lost');
      }
    });
  }
});

describe('a commit that meets another transaction (the built CLI)', () => {
  it('a lock waited for past lock_timeout (55P03) is waited for again: exit 0', async () => {
    const sim = await simulator(63);
    const schema = 'lock_timeout';
    const holder = await db.pool.connect();
    try {
      await holder.query(`SELECT pg_advisory_lock(${LOCK_NUMBER})`, [commitLockKey(schema)]);
      const run = startCli(
        args(schema),
        cliEnv(sim, db.url, { POST_REPORTS_LOCK_TIMEOUT_MS: '300', POST_REPORTS_RECONNECT_WAIT_MS: '60000' }),
      );
      // The commit waits for the lock, gives up at lock_timeout, and waits for it again.
      await lockWait(db.pool);
      await Promise.race([run.waitForOutput('(lock timeout): committing again'), run.done]);
      await Promise.race([lockWait(db.pool), run.done]);
      await holder.query(`SELECT pg_advisory_unlock(${LOCK_NUMBER})`, [commitLockKey(schema)]);
      await expectLoaded(await run.done, sim, schema);
    } finally {
      holder.release(true);
    }
  });

  it('a deadlock (40P01) at the commit is committed again: exit 0', async () => {
    const sim = await simulator(64);
    const schema = 'deadlocked';
    const gate = await db.pool.connect();
    const other = await db.pool.connect();
    try {
      // Held until the run's commit waits for it: the commit then holds nothing yet.
      await gate.query(`SELECT pg_advisory_lock(${LOCK_NUMBER})`, [commitLockKey(schema)]);
      const run = startCli(args(schema), cliEnv(sim, db.url));
      await lockWait(db.pool);
      // Another transaction takes the DDL lock the commit takes after the commit lock, and is never the one
      // PostgreSQL picks to end: its deadlock check comes after a minute.
      await other.query('BEGIN');
      await other.query(`SET LOCAL deadlock_timeout = '60s'`);
      await other.query(`SELECT pg_advisory_xact_lock(${LOCK_NUMBER})`, [ddlLockKey(schema)]);
      await gate.query(`SELECT pg_advisory_unlock(${LOCK_NUMBER})`, [commitLockKey(schema)]);
      // The commit holds the commit lock and waits for the DDL lock.
      for (;;) {
        const holders = await lockHolders(db.pool, [commitLockKey(schema)]);
        if ((holders.get(commitLockKey(schema)) ?? []).length > 0) break;
        await sleep(20);
      }
      await lockWait(db.pool);
      // Now the other transaction waits for the commit lock: a deadlock, which ends the commit's transaction.
      await other.query(`SELECT pg_advisory_xact_lock(${LOCK_NUMBER})`, [commitLockKey(schema)]);
      await other.query('COMMIT');
      const result = await run.done;
      expect(result.stderr).toContain('(conflict): committing again');
      expect(result.stderr).toContain('40P01');
      await expectLoaded(result, sim, schema);
    } finally {
      gate.release(true);
      other.release(true);
    }
  });

  it('a serialization failure (40001) at the commit is committed again: exit 0', async () => {
    const sim = await simulator(65);
    const schema = 'serialized';
    const q = (name: string) => `${pg.escapeIdentifier(schema)}.${pg.escapeIdentifier(name)}`;
    const gate = await db.pool.connect();
    try {
      await gate.query(`SELECT pg_advisory_lock(${LOCK_NUMBER})`, [commitLockKey(schema)]);
      const run = startCli(args(schema), cliEnv(sim, db.url));
      await lockWait(db.pool);
      // The run's sessions pin read committed, where PostgreSQL raises no serialization failure of its own: the
      // first commit's write of a window loaded fails as one does (a sequence counts it, whatever rolls back).
      await db.pool.query(`CREATE SEQUENCE ${q('serialization_failures')}`);
      await db.pool.query(
        `CREATE FUNCTION ${q('fail_once')}() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN
           IF NEW.status = 'loaded' AND nextval('${schema}.serialization_failures') = 1 THEN
             RAISE EXCEPTION 'could not serialize access due to read/write dependencies among transactions'
               USING ERRCODE = '40001';
           END IF;
           RETURN NEW;
         END $$`,
      );
      await db.pool.query(
        `CREATE TRIGGER fail_once BEFORE UPDATE ON ${q('report_windows')}
           FOR EACH ROW EXECUTE FUNCTION ${q('fail_once')}()`,
      );
      await gate.query(`SELECT pg_advisory_unlock(${LOCK_NUMBER})`, [commitLockKey(schema)]);
      const result = await run.done;
      expect(result.stderr).toContain('(conflict): committing again');
      expect(result.stderr).toContain('40001');
      const failed = await db.pool.query<{ n: string }>(
        `SELECT last_value AS n FROM ${q('serialization_failures')}`,
      );
      expect(Number(failed.rows[0]?.n)).toBe(2);
      await expectLoaded(result, sim, schema);
    } finally {
      gate.release(true);
    }
  });
});
