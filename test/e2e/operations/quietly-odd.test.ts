import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addDays } from '../../../src/model/dates.js';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { runCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { runOnTerminal, terminalLines } from '../../helpers/terminal.js';
import { TODAY, testNow } from '../../helpers/today.js';

const db = await createTestDatabase();
let sim: RunningSimulator;

beforeAll(async () => {
  sim = await startSimulator({ seed: 6, postsPerDay: 5, now: testNow() });
});
afterAll(async () => {
  await sim.close();
});

async function schemaExists(schema: string): Promise<boolean> {
  const { rows } = await db.pool.query('SELECT to_regnamespace($1) IS NOT NULL AS exists', [schema]);
  return rows[0]?.exists === true;
}

/** The error lines of stderr. */
function errors(stderr: string): string[] {
  return stderr.split('\n').filter((line) => line.startsWith('post-reports-etl: error: '));
}

describe('what used to pass quietly is said (the built CLI)', () => {
  it('sync --start-date in the future is refused in one line, and nothing is written', async () => {
    const future = addDays(TODAY, 40);
    const result = await runCli(
      ['sync', '--start-date', future],
      cliEnv(sim, db.url, { POST_REPORTS_SCHEMA: 'future_start' }),
    );
    expect(result.code, result.stderr).toBe(2);
    expect(errors(result.stderr)).toEqual([
      `post-reports-etl: error: --start-date ${future} is after today (${TODAY}, UTC): a sync loads up to today; pass a date on or before it`,
    ]);
    expect(result.summary).toMatchObject({ command: 'sync', status: 'invalid', exitCode: 2 });
    expect(await schemaExists('future_start')).toBe(false);
  });

  it('status --schema with a schema that does not exist says nothing is loaded yet, and creates nothing', async () => {
    const env = cliEnv(sim, db.url);
    const loaded = await runCli(['sync', '--start-date', addDays(TODAY, -3), '--schema', 'real_one'], env);
    expect(loaded.code, loaded.stderr).toBe(0);
    const text = await runOnTerminal(['status', '--schema', 'nope'], env);
    expect(text.code, text.output).toBe(0);
    expect(terminalLines(text.output)).toEqual([
      'schema nope: nothing loaded yet (the schema is made by the first backfill, sync or migrate; check --schema if one was)',
    ]);
    const json = await runCli(['status', '--schema', 'nope', '--json'], env);
    expect(json.code, json.stderr).toBe(0);
    expect(json.summary).toMatchObject({ schema: 'nope', posts: 0, windows: { total: 0 } });
    expect(await schemaExists('nope')).toBe(false);
    const real = await runCli(['status', '--schema', 'real_one'], env);
    expect(real.code, real.stderr).toBe(0);
  });

  it('--progress-interval 0 is refused', async () => {
    for (const command of [
      ['sync', '--start-date', TODAY],
      ['backfill', '--from', TODAY, '--to', TODAY],
      ['demo'],
    ]) {
      const result = await runCli(
        [...command, '--progress-interval', '0'],
        cliEnv(sim, db.url, { POST_REPORTS_SCHEMA: 'no_interval' }),
      );
      expect(result.code, result.stderr).toBe(2);
      expect(errors(result.stderr)).toEqual([
        'post-reports-etl: error: --progress-interval must be a number of seconds above 0, up to 86400, got "0"',
      ]);
    }
    expect(await schemaExists('no_interval')).toBe(false);
  });
});
