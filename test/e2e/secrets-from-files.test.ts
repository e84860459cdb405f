import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../src/simulator/server.js';
import { type CliResult, runCli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/database.js';
import { cliEnv } from '../helpers/e2e-env.js';
import { type PasswordServer, startPasswordServer } from '../helpers/password-server.js';
import { compareWithReference } from '../helpers/reference-check.js';

/*
 * Secrets mounted as files (Docker and Kubernetes secrets): POST_REPORTS_TOKEN_FILE, DATABASE_URL_FILE and the
 * libpq password file, through the built CLI. The test server trusts every connection, so the password a run
 * sends is seen on a server that asks for one and refuses the login.
 */

const db = await createTestDatabase();
const TOKEN = `tok-Fj4${randomBytes(12).toString('hex')}-secret`;
const PASSWORD = `pw-Qm2${randomBytes(10).toString('hex')}:x`;
const folder = mkdtempSync(join(tmpdir(), 'etl-secrets-'));
let sim: RunningSimulator;
let passwords: PasswordServer;

beforeAll(async () => {
  sim = await startSimulator({ seed: 31, postsPerDay: 10, token: TOKEN });
  passwords = await startPasswordServer();
});
afterAll(async () => {
  await sim.close();
  passwords.close();
  rmSync(folder, { recursive: true, force: true });
});

function secretFile(name: string, text: string): string {
  const path = join(folder, name);
  writeFileSync(path, text);
  chmodSync(path, 0o600);
  return path;
}

/** The CLI's environment with the token and the database given by files only. */
function fileEnv(extra: Record<string, string>): Record<string, string> {
  const { POST_REPORTS_TOKEN: _token, DATABASE_URL: _url, ...env } = cliEnv(sim, db.url);
  return { ...env, HOME: folder, ...extra };
}

const args = (schema: string) => [
  'backfill',
  '--from',
  '2025-09-01',
  '--to',
  '2025-09-14',
  '--schema',
  schema,
];

function output(result: CliResult): string {
  return `${result.stdout}\n${result.stderr}`;
}

describe('secrets from files (the built CLI)', () => {
  it('loads with the token and the connection string read from files, and prints neither', async () => {
    const result = await runCli(
      args('from_files'),
      fileEnv({
        POST_REPORTS_TOKEN_FILE: secretFile('token', `${TOKEN}\n`),
        DATABASE_URL_FILE: secretFile('database-url', `${db.url}\n`),
        LOG_LEVEL: 'trace',
      }),
    );
    expect(result.code, result.stderr.slice(-1500)).toBe(0);
    const reference = sim.referencePosts({ start_date: '2025-09-01', end_date: '2025-09-14' });
    expect((await compareWithReference(db.pool, 'from_files', reference)).problems).toEqual([]);
    expect(output(result)).not.toContain(TOKEN);
    // The API saw the token from the file, without the line break the file ends with.
    expect(sim.requests().length).toBeGreaterThan(0);
  });

  it('sends the password of the connection string in DATABASE_URL_FILE, and never prints it', async () => {
    const url = `postgres://etl_reader:${encodeURIComponent(PASSWORD)}@127.0.0.1:${passwords.port}/reports`;
    const result = await runCli(
      args('url_file'),
      fileEnv({
        POST_REPORTS_TOKEN_FILE: secretFile('token-2', TOKEN),
        DATABASE_URL_FILE: secretFile('url-2', url),
      }),
    );
    // A refused login needs a person, as a rejected token does: exit 2, named.
    expect(result.code, result.stderr).toBe(2);
    expect(result.summary).toMatchObject({ status: 'invalid', error: { code: 'DB_LOGIN_REJECTED' } });
    expect(result.stderr).toContain('password authentication failed for user "etl_reader"');
    expect(passwords.logins.at(-1)).toEqual({ user: 'etl_reader', password: PASSWORD });
    expect(output(result)).not.toContain(PASSWORD);
    expect(output(result)).not.toContain(encodeURIComponent(PASSWORD));
  });

  it('sends the password of the libpq password file (PGPASSFILE) for a connection string without one', async () => {
    const pgpass = secretFile(
      'pgpass',
      `127.0.0.1:${passwords.port}:other:etl_reader:wrong\n127.0.0.1:${passwords.port}:reports:etl_reader:${PASSWORD.replace(':', '\\:')}\n`,
    );
    const result = await runCli(
      args('pgpass'),
      fileEnv({
        POST_REPORTS_TOKEN: TOKEN,
        DATABASE_URL: `postgres://etl_reader@127.0.0.1:${passwords.port}/reports`,
        PGPASSFILE: pgpass,
      }),
    );
    expect(result.code, result.stderr).toBe(2);
    expect(result.summary).toMatchObject({ error: { code: 'DB_LOGIN_REJECTED' } });
    expect(passwords.logins.at(-1)).toEqual({ user: 'etl_reader', password: PASSWORD });
    expect(output(result)).not.toContain(PASSWORD);
    // pg's own reading of the file is deprecated and warns; the connector reads it itself.
    expect(result.stderr).not.toContain('DeprecationWarning');
  });

  it('warns once of a password in --database-url, with what to use instead, sends it, and never prints it', async () => {
    const url = `postgres://etl_reader:${encodeURIComponent(PASSWORD)}@127.0.0.1:${passwords.port}/reports`;
    const result = await runCli(
      [...args('from_flag'), '--database-url', url],
      fileEnv({ POST_REPORTS_TOKEN: TOKEN, LOG_LEVEL: 'trace' }),
    );
    expect(result.code, result.stderr).toBe(2);
    expect(result.summary).toMatchObject({ error: { code: 'DB_LOGIN_REJECTED' } });
    const warnings = result.stderr.split('\n').filter((line) => line.includes('warning: --database-url'));
    expect(warnings).toEqual([
      'post-reports-etl: warning: --database-url holds a password, which every local user can read in the process list: give it in DATABASE_URL_FILE, PGPASSWORD or a password file (~/.pgpass, PGPASSFILE) instead',
    ]);
    // The CLI restarted itself with the password taken out of its arguments, and still sent it.
    expect(passwords.logins.at(-1)).toEqual({ user: 'etl_reader', password: PASSWORD });
    expect(output(result)).not.toContain(PASSWORD);
    expect(output(result)).not.toContain(encodeURIComponent(PASSWORD));
  });

  it('refuses a database on another host without verified TLS, before connecting, unless allowed', async () => {
    const remote = `postgres://etl_reader:${encodeURIComponent(PASSWORD)}@db.invalid:5432/reports`;
    const refused = await runCli(
      args('plaintext'),
      fileEnv({ POST_REPORTS_TOKEN: TOKEN, DATABASE_URL: remote }),
    );
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toContain(
      'post-reports-etl: error: DATABASE_URL (--database-url) connects to db.invalid without verified TLS, so its password and rows could be read or taken on the way: add ?sslmode=verify-full, or set POST_REPORTS_ALLOW_PLAINTEXT_DATABASE to allow it',
    );
    expect(output(refused)).not.toContain(PASSWORD);
    // Allowed, the run goes on to connect (and finds no such host).
    const allowed = await runCli(
      args('plaintext'),
      fileEnv({
        POST_REPORTS_TOKEN: TOKEN,
        DATABASE_URL: remote,
        POST_REPORTS_ALLOW_PLAINTEXT_DATABASE: 'true',
      }),
    );
    expect(allowed.stderr).not.toContain('without verified TLS');
    expect(output(allowed)).not.toContain(PASSWORD);
  });

  it('refuses a secret given both ways, and a file it cannot read, with exit 2 and one line each', async () => {
    const missing = join(folder, 'not-mounted');
    const result = await runCli(
      args('refused'),
      fileEnv({
        POST_REPORTS_TOKEN: TOKEN,
        POST_REPORTS_TOKEN_FILE: secretFile('token-3', TOKEN),
        DATABASE_URL_FILE: missing,
      }),
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      [
        'post-reports-etl: error: POST_REPORTS_TOKEN and POST_REPORTS_TOKEN_FILE are both set: give one of them',
        `post-reports-etl: error: DATABASE_URL_FILE: cannot read ${JSON.stringify(missing)}: no such file`,
        '',
      ].join('\n'),
    );
    expect(output(result)).not.toContain(TOKEN);
  });
});
