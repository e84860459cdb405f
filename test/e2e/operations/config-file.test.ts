import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addDays } from '../../../src/model/dates.js';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { runCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { summaryOf } from '../../helpers/summary.js';
import { TODAY, testNow } from '../../helpers/today.js';

const db = await createTestDatabase();
let sim: RunningSimulator;
let folder: string;
const start = addDays(TODAY, -10);

beforeAll(async () => {
  sim = await startSimulator({ seed: 29, postsPerDay: 6, now: testNow() });
  folder = await mkdtemp(join(tmpdir(), 'post-reports-config-'));
});
afterAll(async () => {
  await sim.close();
  await rm(folder, { recursive: true, force: true });
});

describe('a configuration file: the settings of the environment, so that filters and fields are not repeated (the built CLI)', () => {
  it('--config (or POST_REPORTS_CONFIG) gives every run the same filters and fields; the environment and flags win', async () => {
    const brand = 'Café Ñandú';
    const file = join(folder, 'post-reports.json');
    await writeFile(
      file,
      JSON.stringify({
        POST_REPORTS_SCHEMA: 'from_file',
        POST_REPORTS_BRANDS: [brand],
        POST_REPORTS_FIELDS: 'date_captured,brand,total_spend',
        POST_REPORTS_START_DATE: start,
      }),
    );
    const env = cliEnv(sim, db.url);
    const first = await runCli(['sync', '--config', file], env);
    expect(first.code, first.stderr).toBe(0);
    expect(summaryOf(first).from).toBe(start);
    const { rows } = await db.pool.query<{ brands: string[] }>(
      'SELECT array_agg(DISTINCT brand) AS brands FROM from_file.posts',
    );
    expect(rows[0]?.brands).toEqual([brand]);

    // Not repeated: the file says it again; the variable names the file as the flag does.
    const again = await runCli(['sync'], { ...env, POST_REPORTS_CONFIG: file });
    expect(again.code, again.stderr).toBe(0);
    // Without the file, the run has other filters than the schema, and is refused before anything changes.
    const without = await runCli(['sync', '--schema', 'from_file'], env);
    expect(without.code).toBe(2);
    expect(without.stderr).toContain('was loaded with filters');
    // A flag wins over the file.
    const flagged = await runCli(['status', '--config', file, '--schema', 'elsewhere_28'], env);
    expect(flagged.code, flagged.stderr).toBe(0);
    expect(flagged.summary).toMatchObject({ schema: 'elsewhere_28', posts: 0 });
  });

  it('refuses, in one line, a file that cannot be read, is not JSON, or names a setting that does not exist', async () => {
    const env = cliEnv(sim, db.url);
    const typo = join(folder, 'typo.json');
    await writeFile(typo, JSON.stringify({ POST_REPORTS_BRAND: 'x' }));
    const notJson = join(folder, 'not.json');
    await writeFile(notJson, 'POST_REPORTS_BRANDS=x\n');
    for (const [file, message] of [
      [typo, `${typo}: POST_REPORTS_BRAND is not a setting (did you mean POST_REPORTS_BRANDS?)`],
      [notJson, `${notJson} is not a JSON object of settings`],
      [
        join(folder, 'missing.json'),
        `cannot read ${join(folder, 'missing.json')} (POST_REPORTS_CONFIG, --config)`,
      ],
    ] as const) {
      const result = await runCli(['status', '--config', file], env);
      expect(result.code, result.stderr).toBe(2);
      const errors = result.stderr.split('\n').filter((l) => l.startsWith('post-reports-etl: error: '));
      expect(errors).toHaveLength(1);
      expect(errors[0]).toContain(message);
    }
  });
});
