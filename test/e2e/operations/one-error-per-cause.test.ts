import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { type CliResult, runCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';

const db = await createTestDatabase();
let sim: RunningSimulator;
let closedPort: number;

beforeAll(async () => {
  sim = await startSimulator({ seed: 5 });
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  closedPort = address.port;
});
afterAll(async () => {
  await sim.close();
});

/** Every command that reaches the database, as a user would type it. */
const DATABASE_COMMANDS = [
  ['sync', '--start-date', '2026-01-01'],
  ['backfill', '--from', '2026-01-01', '--to', '2026-01-07'],
  ['status'],
  ['status', '--json'],
  ['plan', '--sync', '--start-date', '2026-01-01'],
  ['migrate'],
];

/** The error line of a failed command (the one line that starts with the prefix). */
function errorLines(result: CliResult): string[] {
  return result.stderr.split('\n').filter((line) => line.startsWith('post-reports-etl: error: '));
}

/** Runs every database command against `url`; checks each says the same one line and exits `code`. */
async function sameEverywhere(url: string, code: number): Promise<string> {
  const lines = new Set<string>();
  for (const args of DATABASE_COMMANDS) {
    const result = await runCli(args, cliEnv(sim, url));
    expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(code);
    const errors = errorLines(result);
    expect(errors, args.join(' ')).toHaveLength(1);
    lines.add(errors[0] ?? '');
  }
  expect([...lines]).toHaveLength(1);
  return [...lines][0] ?? '';
}

function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

describe('one error message and one exit code per cause, in every command (the built CLI)', () => {
  it('a refused connection reads the same in every command, exit 1 (retrying may help)', async () => {
    const line = await sameEverywhere(`postgres://postgres@127.0.0.1:${closedPort}/x`, 1);
    expect(line).toMatch(
      new RegExp(
        `^post-reports-etl: error: cannot connect to PostgreSQL at 127\\.0\\.0\\.1:${closedPort}/x: `,
      ),
    );
  });

  it('a login PostgreSQL refuses reads the same in every command, exit 2 (a person must fix it)', async () => {
    const url = new URL(db.url);
    url.username = 'no_such_role_28';
    url.password = 'wrong-password-28';
    const line = await sameEverywhere(url.toString(), 2);
    expect(line).toContain('refused the login');
    expect(line).not.toContain('wrong-password-28');
  });

  it('a database that does not exist reads the same in every command, exit 2', async () => {
    const line = await sameEverywhere(withDatabase(db.url, 'no_such_database_28'), 2);
    expect(line).toMatch(/PostgreSQL at \S+\/no_such_database_28 has no database "no_such_database_28"/);
  });

  it('a base URL the API answers 404 at (without /v4) exits 2 in every command that calls the API', async () => {
    const base = sim.baseUrl.replace(/\/v4\/?$/, '');
    for (const args of [['sync', '--start-date', '2026-01-01'], ['dimensions']]) {
      const result = await runCli(args, cliEnv(sim, db.url, { POST_REPORTS_BASE_URL: base }));
      expect(result.code, result.stderr).toBe(2);
      const errors = errorLines(result);
      expect(errors).toHaveLength(1);
      expect(errors[0]).toContain('answered 404');
      expect(errors[0]).toContain('POST_REPORTS_BASE_URL');
      expect(errors[0]).toContain('/v4');
    }
  });

  it('status --json and migrate print their summary line on failure too', async () => {
    const env = cliEnv(sim, `postgres://postgres@127.0.0.1:${closedPort}/x`);
    for (const command of ['status', 'migrate']) {
      const args = command === 'status' ? ['status', '--json'] : [command];
      const result = await runCli(args, env);
      expect(result.code).toBe(1);
      expect(result.stdout.trim().split('\n')).toHaveLength(1);
      expect(result.summary).toMatchObject({
        command,
        status: 'failed',
        exitCode: 1,
        error: { code: 'DB_ERROR' },
      });
      expect(typeof result.summary?.version).toBe('string');
    }
  });

  it("migrate's summary names its command, version, status and exit code", async () => {
    const result = await runCli(['migrate'], cliEnv(sim, db.url, { POST_REPORTS_SCHEMA: 'migrated' }));
    expect(result.code, result.stderr).toBe(0);
    expect(result.summary).toMatchObject({
      command: 'migrate',
      status: 'succeeded',
      exitCode: 0,
      schema: 'migrated',
    });
    expect(Array.isArray(result.summary?.applied)).toBe(true);
  });
});
