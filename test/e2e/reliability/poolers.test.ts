import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { type CliResult, type CliRun, startCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { type Pooler, startPgBouncer } from '../../helpers/pgbouncer.js';
import { compareWithReference } from '../../helpers/reference-check.js';

const db = await createTestDatabase();
const poolers: Pooler[] = [];
const sims: RunningSimulator[] = [];
afterAll(async () => {
  for (const pooler of poolers) await pooler.stop();
  for (const sim of sims) await sim.close();
});

const FROM = '2025-04-01';
const TO = '2025-05-31';
const args = (schema: string) => [
  'backfill',
  '--from',
  FROM,
  '--to',
  TO,
  '--window-days',
  '7',
  '--schema',
  schema,
];

/** Harness guard only: a child still running after this is a hang, and fails the test. */
async function endsWithin(run: CliRun, ms: number): Promise<CliResult | 'hung'> {
  const guard = sleep(ms).then(() => 'hung' as const);
  const outcome = await Promise.race([run.done, guard]);
  if (outcome === 'hung') run.child.kill('SIGKILL');
  return outcome;
}

describe('through PgBouncer (the built CLI)', () => {
  it('in session mode: exit 0, exact', async () => {
    const pooler = await startPgBouncer(db.url, 'session');
    poolers.push(pooler);
    const sim = await startSimulator({ seed: 71, postsPerDay: 40 });
    sims.push(sim);
    const run = startCli(args('via_session'), cliEnv(sim, pooler.url));
    const result = await endsWithin(run, 120_000);
    expect(result, 'still running after 120 s').not.toBe('hung');
    if (result === 'hung') return;
    expect(result.code, result.stderr.slice(-2000)).toBe(0);
    expect(result.summary).toMatchObject({ status: 'succeeded', exitCode: 0 });
    const reference = sim.referencePosts({ start_date: FROM, end_date: TO });
    expect((await compareWithReference(db.pool, 'via_session', reference)).problems).toEqual([]);
  });

  it('in transaction mode: refused before anything is written, on one line naming the mode and what to use', async () => {
    const pooler = await startPgBouncer(db.url, 'transaction');
    poolers.push(pooler);
    const sim = await startSimulator({ seed: 72, postsPerDay: 40 });
    sims.push(sim);
    const run = startCli(args('via_transaction'), cliEnv(sim, pooler.url));
    const result = await endsWithin(run, 120_000);
    expect(result, 'still running after 120 s').not.toBe('hung');
    if (result === 'hung') return;
    expect(result.code, result.stderr.slice(-2000)).toBe(2);
    expect(result.summary).toMatchObject({ status: 'invalid', error: { code: 'DB_POOLER_UNSUPPORTED' } });
    const lines = result.stderr.split('\n').filter((line) => line.startsWith('post-reports-etl: error:'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/pooler in transaction mode.*session mode.*directly/);
    expect(sim.stats().reportsCreated).toBe(0);
    const { rows } = await db.pool.query(`SELECT to_regnamespace('via_transaction') AS schema`);
    expect(rows[0]).toEqual({ schema: null });
  });
});
