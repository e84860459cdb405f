import { afterAll, describe, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { startCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { compareWithReference } from '../../helpers/reference-check.js';

const db = await createTestDatabase();
const sims: RunningSimulator[] = [];
afterAll(async () => {
  for (const sim of sims) await sim.close();
});

const SCHEMA = 'queued';
const range = (from: string, to: string) => [
  'backfill',
  '--from',
  from,
  '--to',
  to,
  '--window-days',
  '7',
  '--schema',
  SCHEMA,
];

describe('locks that queue (the built CLI)', () => {
  it('a waiting --reset gets the schema before a run that started after it', async () => {
    const sim = await startSimulator({ seed: 61, postsPerDay: 30, generationDelayMs: 2500 });
    sims.push(sim);
    const env = cliEnv(sim, db.url, { POST_REPORTS_LOCK_WAIT_MS: '60000' });
    // A run holds the schema (shared) while its reports generate.
    const first = startCli(range('2025-04-07', '2025-04-13'), env);
    await first.waitForOutput('"msg":"report created"');
    // A reset asks for the schema alone and waits for that run.
    const reset = startCli([...range('2025-04-07', '2025-04-13'), '--reset', '--yes'], env);
    await reset.waitForOutput('waiting up to');
    // A run of other dates starts after the reset asked: it must wait for the reset, not slip in before it
    // (the reset would then clear what it loaded).
    const later = startCli(range('2025-04-14', '2025-04-20'), env);
    const results = await Promise.all([first.done, reset.done, later.done]);
    for (const result of results) expect(result.code, result.stderr.slice(-2000)).toBe(0);
    expect(results[1]?.summary).toMatchObject({ status: 'succeeded' });
    const reference = sim.referencePosts({ start_date: '2025-04-07', end_date: '2025-04-20' });
    expect((await compareWithReference(db.pool, SCHEMA, reference)).problems).toEqual([]);
  });
});
