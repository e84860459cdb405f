import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { runCli, startCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { summaryOf } from '../../helpers/summary.js';

const db = await createTestDatabase();
let sim: RunningSimulator;

beforeAll(async () => {
  // Reports that take long to generate: the first window is still polling when the signal comes.
  sim = await startSimulator({ seed: 49, postsPerDay: 4, generationDelayMs: 60_000 });
});
afterAll(async () => {
  await sim.close();
});

describe('a run stopped by SIGTERM (the built CLI)', () => {
  it('counts as interrupted the windows status lists as interrupted, and the others as not started', async () => {
    const env = cliEnv(sim, db.url, { POST_REPORTS_SCHEMA: 'stopped', POST_REPORTS_CONCURRENCY: '1' });
    const run = startCli(['backfill', '--from', '2026-02-02', '--to', '2026-03-01'], env);
    await run.waitForOutput('"msg":"report created"');
    run.child.kill('SIGTERM');
    const result = await run.done;
    expect(result.code, result.stderr).toBe(130);
    const { windows } = summaryOf(result);
    const status = await runCli(['status', '--json'], env);
    expect(status.code, status.stderr).toBe(0);
    const listed = (status.summary as { windows: { interrupted: number } }).windows.interrupted;
    expect(windows.interrupted).toBe(listed);
    expect(windows.interrupted).toBe(1);
    expect(windows.notStarted).toBe(3);
    expect(
      windows.loaded + windows.failed + windows.interrupted + windows.notStarted + windows.byOthers,
    ).toBe(windows.planned);
  });
});
