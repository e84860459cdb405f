import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { runCli, startCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { compareWithReference } from '../../helpers/reference-check.js';
import { summaryOf } from '../../helpers/summary.js';

const db = await createTestDatabase();
const FROM = '2025-06-02';
const TO = '2025-06-15';
let sim: RunningSimulator;

beforeAll(async () => {
  // Report ids as JSON integers past 2^53: the spec does not show the id's type.
  sim = await startSimulator({ seed: 170, postsPerDay: 20, pageSize: 10, reportIds: 'numeric' });
});
afterAll(() => sim.close());

const args = (schema: string) => [
  'backfill',
  '--from',
  FROM,
  '--to',
  TO,
  '--window-days',
  '7',
  '--concurrency',
  '1',
  '--schema',
  schema,
];

/** The report ids the simulator was asked to read, as the paths carried them. */
function idsRead(): Set<string> {
  return new Set(
    sim
      .requests()
      .map((request) => /^\/v4\/reports\/posts\/(\d+)$/.exec(request.path)?.[1])
      .filter((id): id is string => id !== undefined),
  );
}

describe('numeric report ids (the built CLI)', () => {
  it('loads exactly, reading each report by its id digit for digit, and resumes a killed run by it', async () => {
    const schema = 'numeric_ids';
    const env = cliEnv(sim, db.url, { LOG_LEVEL: 'debug' });
    // Killed while the simulator holds the first window's third page: the resume polls the report by its id.
    const gate = sim.holdAnswers('page', 2);
    const killed = startCli(args(schema), env);
    await gate.held;
    await killed.waitForOutput('"page":2,');
    killed.child.kill('SIGKILL');
    await killed.done;
    gate.release();
    const { rows } = await db.pool.query<{ id: string }>(
      `SELECT attempt_report_id AS id FROM ${schema}.report_windows WHERE window_start = $1`,
      [FROM],
    );
    const stored = rows[0]?.id ?? '';
    expect(stored).toMatch(/^\d+$/);
    expect(BigInt(stored) > 2n ** 53n).toBe(true);

    const resumed = await runCli(args(schema), env);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toContain('resuming a staged window');
    expect(summaryOf(resumed)).toMatchObject({ reportsCreated: 1, windows: { loaded: 2 } });
    // Two reports in all, each read by the id it was served with, the resumed one included.
    expect(sim.stats().reportsCreated).toBe(2);
    const read = idsRead();
    expect(read.size).toBe(2);
    expect(read.has(stored)).toBe(true);
    const reference = sim.referencePosts({ start_date: FROM, end_date: TO });
    const check = await compareWithReference(db.pool, schema, reference);
    expect(check.problems).toEqual([]);
    expect(check.posts).toBe(reference.length);
  });
});
