import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { runCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { setHostileDefaults } from '../../helpers/hostile-defaults.js';
import { compareWithReference } from '../../helpers/reference-check.js';
import { testNow } from '../../helpers/today.js';

const db = await createTestDatabase();
let sim: RunningSimulator;
/** The test's own reading of the tables, in PostgreSQL's default DateStyle: the check reads dates as text. */
const reader = new pg.Pool({ connectionString: db.url, max: 1, options: '-c DateStyle=ISO,MDY' });
// An idle session ended by the server (the database dropped at the end, a restart) must not crash the file.
reader.on('error', () => {});

beforeAll(async () => {
  sim = await startSimulator({ seed: 42, postsPerDay: 200, pageSize: 100, now: testNow() });
  const name = new URL(db.url).pathname.slice(1);
  await setHostileDefaults(db.pool, name);
});
afterAll(async () => {
  await reader.end();
  await sim.close();
});

describe("a database whose defaults are a DBA's, not PostgreSQL's (the built CLI)", () => {
  it('takes none of them: windows loaded one, then several at once, exact', async () => {
    // A new session takes the database's defaults: the ALTERs above hold for every session from now on.
    const probe = new pg.Client({ connectionString: db.url });
    await probe.connect();
    const { rows } = await probe.query<{ style: string; isolation: string }>(
      `SELECT current_setting('DateStyle') AS style, current_setting('default_transaction_isolation') AS isolation`,
    );
    await probe.end();
    expect(rows[0]).toEqual({ style: 'SQL, DMY', isolation: 'serializable' });

    const range = { from: '2026-03-02', to: '2026-03-29' };
    const first = await runCli(
      ['backfill', '--from', range.from, '--to', '2026-03-08', '--schema', 'hostile'],
      cliEnv(sim, db.url),
    );
    expect(first.code, first.stderr).toBe(0);
    // Three windows committed side by side next to one loaded: under serializable, their commits conflict (40001).
    const result = await runCli(
      ['backfill', '--from', range.from, '--to', range.to, '--concurrency', '4', '--schema', 'hostile'],
      cliEnv(sim, db.url),
    );
    expect(result.code, result.stderr).toBe(0);
    expect(result.summary).toMatchObject({
      status: 'succeeded',
      windows: { loaded: 3, skipped: 1, failed: 0 },
    });
    // Nor one attempt failed and retried on the way.
    expect(result.stderr).not.toContain('window attempt failed');
    const reference = sim.referencePosts({ start_date: range.from, end_date: range.to });
    expect(reference.length).toBeGreaterThan(0);
    const check = await compareWithReference(reader, 'hostile', reference);
    expect(check.problems).toEqual([]);
    expect(check.posts).toBe(reference.length);

    // A second run reads back what the first wrote (dates, report ages, the windows' state), and has nothing to do.
    const again = await runCli(
      ['backfill', '--from', range.from, '--to', range.to, '--concurrency', '4', '--schema', 'hostile'],
      cliEnv(sim, db.url),
    );
    expect(again.code, again.stderr).toBe(0);
    expect(again.summary).toMatchObject({ status: 'succeeded', windows: { loaded: 0, skipped: 4 } });

    const status = await runCli(['status', '--schema', 'hostile', '--json'], cliEnv(sim, db.url));
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain('2026-03-02');
  });
});
