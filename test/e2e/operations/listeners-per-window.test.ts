import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { runCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { summaryOf } from '../../helpers/summary.js';

const db = await createTestDatabase();
let sim: RunningSimulator;

beforeAll(async () => {
  sim = await startSimulator({ seed: 53, postsPerDay: 3 });
});
afterAll(async () => {
  await sim.close();
});

describe('listeners added per window are removed when the window ends (the built CLI)', () => {
  it('a backfill of 181 windows at --concurrency 8 prints no MaxListenersExceededWarning', async () => {
    const env = cliEnv(sim, db.url, { POST_REPORTS_SCHEMA: 'many_windows' });
    const run = await runCli(
      ['backfill', '--from', '2026-01-01', '--to', '2026-06-30', '--window-days', '1', '--concurrency', '8'],
      env,
    );
    expect(run.code, run.stderr).toBe(0);
    expect(summaryOf(run).windows).toMatchObject({ planned: 181, loaded: 181 });
    expect(run.stderr).not.toContain('MaxListenersExceededWarning');
    expect(run.stderr).not.toMatch(/\(node:\d+\) \w*Warning/);
  });
});
