import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { runCli, startCli } from '../../helpers/cli.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { type PrivatePostgres, startPrivatePostgres } from '../../helpers/private-postgres.js';
import { compareWithReference } from '../../helpers/reference-check.js';

// A restart ends every session of the server: this file has a server of its own.
const server: PrivatePostgres = await startPrivatePostgres();
const pool = new pg.Pool({ connectionString: server.url, max: 2 });
pool.on('error', () => {});
const sims: RunningSimulator[] = [];
afterAll(async () => {
  await pool.end();
  for (const sim of sims) await sim.close();
  await server.stop();
});

const FROM = '2025-04-07';
const TO = '2025-04-20';
const ARGS = ['backfill', '--from', FROM, '--to', TO, '--window-days', '7', '--schema', 'restarted'];

describe('a server restart during a run (the built CLI)', () => {
  it('the run reconnects within POST_REPORTS_RECONNECT_WAIT_MS and loads exactly, with its summary line', async () => {
    const sim = await startSimulator({ seed: 51, postsPerDay: 30, generationDelayMs: 3000 });
    sims.push(sim);
    const run = startCli(ARGS, cliEnv(sim, server.url, { POST_REPORTS_RECONNECT_WAIT_MS: '60000' }));
    await run.waitForOutput('"msg":"report created"');
    await server.restart();
    const result = await run.done;
    expect(result.stderr).not.toMatch(/Unhandled 'error' event|\n\s+at [^\n]+:\d+:\d+|"stack":/);
    expect(result.summary, result.stderr.slice(-2000)).toBeDefined();
    expect(result.code, result.stderr.slice(-2000)).toBe(0);
    expect(result.summary).toMatchObject({ status: 'succeeded', exitCode: 0 });
    const reference = sim.referencePosts({ start_date: FROM, end_date: TO });
    expect((await compareWithReference(pool, 'restarted', reference)).problems).toEqual([]);
  });

  it('a server that stays down longer than the wait: the run ends with exit 1 and its summary line, the next run is exact', async () => {
    const sim = await startSimulator({ seed: 52, postsPerDay: 30, generationDelayMs: 3000 });
    sims.push(sim);
    const args = [...ARGS.slice(0, -1), 'down'];
    const env = cliEnv(sim, server.url, { POST_REPORTS_RECONNECT_WAIT_MS: '1000' });
    const run = startCli(args, env);
    await run.waitForOutput('"msg":"report created"');
    await server.stopOnly();
    const result = await run.done;
    await server.startAgain();
    expect(result.stderr).not.toMatch(/Unhandled 'error' event|\n\s+at [^\n]+:\d+:\d+|"stack":/);
    expect(result.summary, result.stderr.slice(-2000)).toBeDefined();
    expect([1, 3], result.stderr.slice(-2000)).toContain(result.code);
    expect(result.summary?.exitCode).toBe(result.code);
    const next = await runCli(args, env);
    expect(next.code, next.stderr.slice(-2000)).toBe(0);
    const reference = sim.referencePosts({ start_date: FROM, end_date: TO });
    expect((await compareWithReference(pool, 'down', reference)).problems).toEqual([]);
  });
});
