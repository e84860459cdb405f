import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../src/simulator/server.js';
import { runCli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/database.js';
import { cliEnv } from '../helpers/e2e-env.js';
import { snapshotSchema } from '../helpers/reference-check.js';

const db = await createTestDatabase();
let sim: RunningSimulator;
const SCHEMA = 'guarded';
const base = ['--schema', SCHEMA];
let before: string;

beforeAll(async () => {
  sim = await startSimulator({ seed: 3, postsPerDay: 10 });
  const first = await runCli(
    ['backfill', '--from', '2026-01-05', '--to', '2026-01-18', '--segment', 'Region=North,South', ...base],
    cliEnv(sim, db.url),
  );
  expect(first.code).toBe(0);
  before = await snapshotSchema(db.pool, SCHEMA);
  expect(before).toContain('posts:');
});
afterAll(async () => {
  await sim.close();
});

function errorLines(stderr: string): string[] {
  return stderr.split('\n').filter((line) => line.startsWith('post-reports-etl: error:'));
}

const cases: { name: string; args: string[]; env?: Record<string, string>; code: number; says: RegExp }[] = [
  {
    name: 'from after to',
    args: ['backfill', '--from', '2026-02-01', '--to', '2026-01-01', '--segment', 'Region=North,South'],
    code: 2,
    says: /--from 2026-02-01 is after --to 2026-01-01/,
  },
  {
    name: 'an impossible date',
    args: ['backfill', '--from', '2026-02-30', '--to', '2026-03-01', '--segment', 'Region=North,South'],
    code: 2,
    says: /--from must be a date YYYY-MM-DD, got "2026-02-30"/,
  },
  {
    name: 'an unknown segment name',
    args: ['backfill', '--from', '2026-01-05', '--to', '2026-01-11', '--segment', 'Planet=Mars'],
    code: 2,
    says: /"Planet"/,
  },
  {
    name: 'an unknown segment value',
    args: ['backfill', '--from', '2026-01-05', '--to', '2026-01-11', '--segment', 'Region=Nowhere'],
    code: 2,
    says: /"Nowhere".*"Region"/,
  },
  {
    name: 'a missing token',
    args: ['backfill', '--from', '2026-01-05', '--to', '2026-01-11', '--segment', 'Region=North,South'],
    env: { POST_REPORTS_TOKEN: '' },
    code: 2,
    says: /POST_REPORTS_TOKEN is not set/,
  },
  {
    name: 'an unreachable database',
    args: ['backfill', '--from', '2026-01-05', '--to', '2026-01-11', '--segment', 'Region=North,South'],
    env: { DATABASE_URL: 'postgres://postgres:hunter2@127.0.0.1:1/nowhere' },
    code: 1,
    says: /cannot connect to PostgreSQL at 127\.0\.0\.1:1\/nowhere/,
  },
  {
    name: 'a filter change without --reset',
    args: ['backfill', '--from', '2026-01-05', '--to', '2026-01-11', '--segment', 'Region=North'],
    code: 2,
    says: /was loaded with filters .*"North","South".* this run has .*"North"\].*--reset/,
  },
  {
    name: 'a negative window size',
    args: ['backfill', '--from', '2026-01-05', '--to', '2026-01-11', '--window-days', '-3'],
    code: 2,
    says: /POST_REPORTS_WINDOW_DAYS \(--window-days\) must be an integer from 1 to 366, got "-3"/,
  },
];

describe('bad input (the built CLI)', () => {
  for (const c of cases) {
    it(`refuses ${c.name} with one clear line and leaves the database unchanged`, async () => {
      const result = await runCli([...c.args, ...base], cliEnv(sim, db.url, c.env ?? {}));
      expect(result.code).toBe(c.code);
      const lines = errorLines(result.stderr);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(c.says);
      expect(result.stderr).not.toContain('hunter2');
      expect(result.summary).toMatchObject({ exitCode: c.code });
      expect(await snapshotSchema(db.pool, SCHEMA)).toBe(before);
    });
  }

  it('accepts the filter change with --reset, clearing the schema first', async () => {
    const result = await runCli(
      [
        'backfill',
        '--from',
        '2026-01-05',
        '--to',
        '2026-01-11',
        '--segment',
        'Region=North',
        '--reset',
        '--yes',
        ...base,
      ],
      cliEnv(sim, db.url),
    );
    expect(result.code).toBe(0);
    const { rows } = await db.pool.query<{ name: string; value: string }>(
      `SELECT DISTINCT name, value FROM ${SCHEMA}.post_custom_segments WHERE name = 'Region'`,
    );
    expect(rows).toEqual([{ name: 'Region', value: 'North' }]);
    const windows = await db.pool.query(`SELECT 1 FROM ${SCHEMA}.posts WHERE _window_start >= '2026-01-12'`);
    expect(windows.rowCount).toBe(0);
  });
});
