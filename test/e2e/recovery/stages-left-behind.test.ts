import { afterAll, describe, expect, it } from 'vitest';
import type { SchemaStatus } from '../../../src/pipeline/schema-status.js';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { runCli, startCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { compareWithReference } from '../../helpers/reference-check.js';
import { summaryOf } from '../../helpers/summary.js';
import { runOnTerminal } from '../../helpers/terminal.js';

const db = await createTestDatabase();
const sims: RunningSimulator[] = [];
afterAll(async () => {
  for (const sim of sims) await sim.close();
});

// One 7-day window of 140 posts in pages of 10: a run killed after two pages leaves its stage.
const FROM = '2025-06-02';
const TO = '2025-06-08';

function backfill(schema: string, windowDays: number): string[] {
  return [
    'backfill',
    '--from',
    FROM,
    '--to',
    TO,
    '--window-days',
    String(windowDays),
    '--concurrency',
    '1',
    '--schema',
    schema,
  ];
}

async function stageTables(schema: string): Promise<string[]> {
  const { rows } = await db.pool.query<{ name: string }>(
    `SELECT c.relname::text AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relkind = 'r' AND c.relname ~ '^stage_[0-9]{8}_' ORDER BY 1`,
    [schema],
  );
  return rows.map((r) => r.name);
}

describe('stages no window will resume (the built CLI)', () => {
  it('status lists a stage left by a killed run; a run of another grid drops it before it loads, and loads exactly', async () => {
    const sim = await startSimulator({ seed: 95, postsPerDay: 20, pageSize: 10 });
    sims.push(sim);
    const schema = 'left_behind';
    const env = cliEnv(sim, db.url, { LOG_LEVEL: 'debug' });
    const gate = sim.holdAnswers('page', 2);
    const killed = startCli(backfill(schema, 7), env);
    await killed.waitForOutput('"page":2,');
    await gate.held;
    killed.child.kill('SIGKILL');
    expect((await killed.done).signal).toBe('SIGKILL');
    gate.release();

    const tables = ['stage_20250602_20250608_posts', 'stage_20250602_20250608_segments'];
    expect(await stageTables(schema)).toEqual(tables);
    const listed = await runCli(['status', '--json', '--schema', schema], env);
    expect(listed.code, listed.stderr).toBe(0);
    const before = listed.summary as unknown as SchemaStatus;
    expect(before.stages).toEqual([
      expect.objectContaining({ start: FROM, end: TO, reportId: expect.any(String), tables }),
    ]);
    expect(before.stages[0]?.bytes).toBeGreaterThan(0);
    expect(before.stageBytes).toBe(before.stages[0]?.bytes);
    // Text on a terminal (a pipe gets JSON).
    const text = await runOnTerminal(['status', '--schema', schema], env);
    expect(text.output).toContain(`stage ${FROM}..${TO}`);
    expect(text.output).toContain(tables.join(', '));

    // Days, not a week: no window of this run resumes the week's stage.
    const run = await runCli(backfill(schema, 1), env);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain('stages no window will resume dropped');
    expect(run.stderr).toContain('"why":"another grid"');
    // Dropped before the run loaded anything.
    expect(run.stderr.indexOf('stages no window will resume dropped')).toBeLessThan(
      run.stderr.indexOf('"msg":"window started"'),
    );
    expect(summaryOf(run)).toMatchObject({ status: 'succeeded', posts: 140 });
    expect(await stageTables(schema)).toEqual([]);
    const after = await runCli(['status', '--json', '--schema', schema], env);
    expect((after.summary as unknown as SchemaStatus).stages).toEqual([]);
    expect((await runOnTerminal(['status', '--schema', schema], env)).output).not.toContain('stage ');

    const reference = sim.referencePosts({ start_date: FROM, end_date: TO });
    const check = await compareWithReference(db.pool, schema, reference);
    expect(check.problems).toEqual([]);
    expect(check.posts).toBe(reference.length);
  });
});
