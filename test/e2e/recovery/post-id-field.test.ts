import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { runCli, startCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { compareWithReference } from '../../helpers/reference-check.js';

const db = await createTestDatabase();
let sim: RunningSimulator;
const FIELD = 'acme_post_id';
const FROM = '2025-03-03';
const TO = '2025-03-23';

beforeAll(async () => {
  // The production API names the id after the brand; pages of 20 give a kill something to interrupt.
  sim = await startSimulator({ seed: 52, postsPerDay: 15, postIdField: FIELD, pageSize: 20 });
});
afterAll(async () => {
  await sim.close();
});

describe('a post id field other than platform_post_id (the built CLI)', () => {
  it('keys the tables by it: a backfill killed mid-window, resumed, then reloaded, exactly', async () => {
    const env = cliEnv(sim, db.url, { POST_REPORTS_POST_ID_FIELD: FIELD, LOG_LEVEL: 'debug' });
    const args = ['backfill', '--from', FROM, '--to', TO, '--concurrency', '1', '--schema', 'acme'];
    const reference = () => sim.referencePosts({ start_date: FROM, end_date: TO });

    // Killed once a page is staged, while the simulator holds the next.
    const gate = sim.holdAnswers('page', 1);
    const killed = startCli(args, env);
    await killed.waitForOutput('"msg":"page staged"');
    await gate.held;
    killed.child.kill('SIGKILL');
    await killed.done;
    gate.release();
    const resumed = await runCli(args, env);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toContain('resuming a staged window');
    expect((await compareWithReference(db.pool, 'acme', reference(), FIELD)).problems).toEqual([]);

    const reload = await runCli([...args, '--reload'], env);
    expect(reload.code, reload.stderr).toBe(0);
    const check = await compareWithReference(db.pool, 'acme', reference(), FIELD);
    expect(check.problems).toEqual([]);
    expect(check.posts).toBe(21 * 15);

    // The id is the key of posts and of the segments, under its own name; no platform_post_id anywhere.
    const { rows } = await db.pool.query<{ table: string; column: string }>(
      `SELECT tc.table_name AS table, kcu.column_name AS column
         FROM information_schema.table_constraints tc
         JOIN information_schema.key_column_usage kcu USING (constraint_schema, constraint_name)
        WHERE tc.table_schema = 'acme' AND tc.constraint_type = 'PRIMARY KEY' AND tc.table_name = 'posts'
        ORDER BY kcu.ordinal_position`,
    );
    expect(rows.map((r) => r.column)).toContain(FIELD);
    const { rows: stray } = await db.pool.query(
      `SELECT table_name FROM information_schema.columns WHERE table_schema = 'acme' AND column_name = 'platform_post_id'`,
    );
    expect(stray).toEqual([]);

    // A run with the default id field on this schema is refused before anything changes.
    const other = await runCli(args, cliEnv(sim, db.url));
    expect(other.code).toBe(2);
    expect(other.stderr).toContain(`post id field "${FIELD}"`);
  });
});
