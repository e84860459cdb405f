/*
 * A service whose reuse period is longer than POST_REPORTS_REPORT_REUSE_MS: the connector cannot know how old a
 * report handed back is, and takes it as made that setting before it first received it. The documented outcome
 * (README, Data age): with the setting too short a window's loaded_through may name a day the report did not hold
 * whole; set to the service's period, it never does.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { runCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { compareWithReference } from '../../helpers/reference-check.js';

const db = await createTestDatabase();
const HOUR = 3_600_000;
const sims: RunningSimulator[] = [];
afterAll(async () => {
  await Promise.all(sims.map((s) => s.close()));
});

const FROM = '2026-01-05';
const TO = '2026-01-11';

/**
 * A service that reuses reports for 6 h. Another client of the organization asks for the week at 22:00 on its
 * last day; three posts of that day arrive after; the connector runs five hours later, at 03:00 the next day,
 * and is handed the report of 22:00.
 */
async function handedAnOldReport(
  schema: string,
  setting: number | undefined,
): Promise<{ through: string | null; problems: string[] }> {
  const sim = await startSimulator({
    seed: 85,
    postsPerDay: 8,
    reportReuseMs: 6 * HOUR,
    now: `${TO}T22:00:00Z`,
  });
  sims.push(sim);
  const created = await fetch(`${sim.baseUrl}/reports/posts`, {
    method: 'POST',
    headers: { authorization: `Bearer ${sim.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ start_date: FROM, end_date: TO }),
  });
  expect(created.status).toBe(200);
  await created.arrayBuffer();
  sim.addPosts(TO, 3);
  sim.advanceTime(5 * HOUR);
  const extra: Record<string, string> = { POST_REPORTS_SCHEMA: schema, POST_REPORTS_NOW: sim.now() };
  if (setting !== undefined) extra.POST_REPORTS_REPORT_REUSE_MS = String(setting);
  const run = await runCli(['backfill', '--from', FROM, '--to', TO], cliEnv(sim, db.url, extra));
  expect(run.code, run.stderr.slice(-2000)).toBe(0);
  // Handed back: the service made no report for the connector.
  expect(sim.stats().reportsCreated).toBe(1);
  const { rows } = await db.pool.query<{ through: string | null }>(
    `SELECT loaded_through::text AS through FROM ${schema}.report_windows`,
  );
  const reference = sim.referencePosts({ start_date: FROM, end_date: TO });
  return {
    through: rows[0]?.through ?? null,
    problems: (await compareWithReference(db.pool, schema, reference)).problems,
  };
}

describe('a service reuse period longer than the setting (the built CLI)', () => {
  it('with the default 3 h: the report is taken as made at midnight, and the last day counted loaded without its late posts', async () => {
    const { through, problems } = await handedAnOldReport('reuse_default', undefined);
    expect(through).toBe(TO);
    const missing = problems.filter((p) => p.includes(`(${TO}) is missing`));
    expect(missing).toHaveLength(3);
  });

  it('set to the service’s 6 h: the report is taken as made before 22:00, and the last day stays open', async () => {
    const { through, problems } = await handedAnOldReport('reuse_six', 6 * HOUR);
    expect(through).toBe('2026-01-10');
    // The same report: the same three posts are not in it; the open day is what says so.
    expect(problems.filter((p) => p.includes(`(${TO}) is missing`))).toHaveLength(3);
  });
});
