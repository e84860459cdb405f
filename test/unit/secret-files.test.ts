import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { dotenvWarning, parseConfig, type RawSettings } from '../../src/config.js';
import { ConfigError } from '../../src/errors.js';
import { findPassword, passwordTarget } from '../../src/password-file.js';

const folder = mkdtempSync(join(tmpdir(), 'secret-files-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

function file(name: string, text: string, mode = 0o600): string {
  const path = join(folder, name);
  writeFileSync(path, text);
  chmodSync(path, mode);
  return path;
}

const base = {
  POST_REPORTS_BASE_URL: 'https://api.example.com/v4',
  HOME: folder,
};

/** The configuration problems, one per line, or [] when the settings parse. */
function problems(env: RawSettings): string[] {
  try {
    parseConfig(env);
    return [];
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message.split('\n');
  }
}

describe('secrets from files', () => {
  it('warns of a secret file or a settings file that others may read, naming it and chmod 600', () => {
    const token = file('open-token', 'tok\n', 0o644);
    const url = file('open-url', 'postgres://etl@db.example.com/reports?sslmode=verify-full\n', 0o640);
    const settings = file('open-settings.json', '{"POST_REPORTS_SCHEMA": "s"}', 0o604);
    const config = parseConfig(
      { ...base, POST_REPORTS_TOKEN_FILE: token, DATABASE_URL_FILE: url },
      { configFile: settings },
    );
    expect(config.warnings).toEqual([
      `POST_REPORTS_TOKEN_FILE: ${JSON.stringify(token)} may be read by others than its owner: chmod 600 ${JSON.stringify(token)}`,
      `DATABASE_URL_FILE: ${JSON.stringify(url)} may be read by others than its owner: chmod 600 ${JSON.stringify(url)}`,
      `POST_REPORTS_CONFIG: ${JSON.stringify(settings)} may be read by others than its owner: chmod 600 ${JSON.stringify(settings)}`,
    ]);
    const closed = parseConfig({
      ...base,
      POST_REPORTS_TOKEN_FILE: file('closed-token', 'tok', 0o600),
      DATABASE_URL: 'postgres://etl@db.example.com/reports?sslmode=verify-full',
    });
    expect(closed.warnings).toBeUndefined();
  });

  it('warns of a .env holding a secret that others may read, naming it and chmod 600; not of one without', () => {
    const open = file('open.env', 'POST_REPORTS_TOKEN=tok\n', 0o644);
    expect(dotenvWarning(open)).toBe(
      `.env: ${JSON.stringify(open)} may be read by others than its owner: chmod 600 ${JSON.stringify(open)}`,
    );
    const withPassword = file(
      'password.env',
      'DATABASE_URL=postgres://etl:pw@db.example.com/reports\n',
      0o640,
    );
    expect(dotenvWarning(withPassword)).toContain('chmod 600');
    expect(dotenvWarning(file('closed.env', 'POST_REPORTS_TOKEN=tok\n', 0o600))).toBeUndefined();
    const noSecret = file(
      'plain.env',
      'DATABASE_URL=postgres://etl@db.example.com/reports\nPOST_REPORTS_SCHEMA=s\n',
      0o644,
    );
    expect(dotenvWarning(noSecret)).toBeUndefined();
    expect(dotenvWarning(join(folder, 'none.env'))).toBeUndefined();
  });

  it('reads the token and the connection string from files, without their final line break', () => {
    const config = parseConfig({
      ...base,
      POST_REPORTS_TOKEN_FILE: file('token', 'tok-from-file\n'),
      DATABASE_URL_FILE: file('url', 'postgres://etl:pw@db.example.com:5432/reports?sslmode=verify-full\r\n'),
    });
    expect(config.api.token.reveal()).toBe('tok-from-file');
    expect(config.db.url.reveal()).toBe('postgres://etl:pw@db.example.com:5432/reports?sslmode=verify-full');
    expect(JSON.stringify(config)).not.toContain('tok-from-file');
    expect(JSON.stringify(config)).not.toContain(':pw@');
  });

  it('refuses a secret given both ways, naming both settings and neither value', () => {
    const lines = problems({
      ...base,
      POST_REPORTS_TOKEN: 'tok-direct',
      POST_REPORTS_TOKEN_FILE: file('token2', 'tok-file'),
      DATABASE_URL: 'postgres://etl:pw1@db/reports',
      DATABASE_URL_FILE: file('url2', 'postgres://etl:pw2@db/reports'),
    });
    expect(lines).toEqual([
      'POST_REPORTS_TOKEN and POST_REPORTS_TOKEN_FILE are both set: give one of them',
      'DATABASE_URL (--database-url) and DATABASE_URL_FILE are both set: give one of them',
    ]);
  });

  it('names an unreadable or empty file by its path, never by what it holds', () => {
    const missing = join(folder, 'nothing-here');
    const lines = problems({
      ...base,
      POST_REPORTS_TOKEN_FILE: missing,
      DATABASE_URL_FILE: file('empty', '\n'),
    });
    expect(lines).toEqual([
      `POST_REPORTS_TOKEN_FILE: cannot read ${JSON.stringify(missing)}: no such file`,
      `DATABASE_URL_FILE: ${JSON.stringify(join(folder, 'empty'))} is empty`,
    ]);
    expect(
      problems({ ...base, POST_REPORTS_TOKEN_FILE: folder, DATABASE_URL: 'postgres://u@localhost/d' }),
    ).toEqual([`POST_REPORTS_TOKEN_FILE: cannot read ${JSON.stringify(folder)}: it is a folder`]);
  });

  it('checks what a file holds like the variable, without repeating it', () => {
    const lines = problems({
      ...base,
      POST_REPORTS_TOKEN_FILE: file('spaced', 'tok with-space\n'),
      DATABASE_URL_FILE: file('mysql', 'mysql://root:secret-pw@db/x'),
    });
    expect(lines).toEqual([
      'the file of POST_REPORTS_TOKEN_FILE must not contain white space',
      'the file of DATABASE_URL_FILE must start with postgres:// or postgresql://',
    ]);
  });
});

describe('the libpq password file', () => {
  const env = { ...base, POST_REPORTS_TOKEN: 'tok' };

  it('gives the password of the first matching line to a connection string without one', () => {
    const path = file(
      'pgpass',
      [
        '# host:port:database:user:password',
        'other.example.com:5432:*:etl:not-this-one',
        'db.example.com:5432:reports:etl:p\\:w@d%/x',
        '*:*:*:etl:nor-this-one',
      ].join('\n'),
    );
    const config = parseConfig({
      ...env,
      PGPASSFILE: path,
      DATABASE_URL: 'postgres://etl@db.example.com/reports?sslmode=require',
    });
    const url = new URL(config.db.url.reveal());
    expect(decodeURIComponent(url.password)).toBe('p:w@d%/x');
    expect(url.searchParams.get('sslmode')).toBe('require');
    // A password in the connection string wins, as with libpq.
    const given = parseConfig({
      ...env,
      PGPASSFILE: path,
      DATABASE_URL: 'postgres://etl:own@db.example.com/reports?sslmode=verify-full',
    });
    expect(given.db.url.reveal()).toBe('postgres://etl:own@db.example.com/reports?sslmode=verify-full');
    // Then PGPASSWORD, which the driver sends, as with libpq: the file is not read for it.
    const fromEnvironment = parseConfig({
      ...env,
      PGPASSFILE: path,
      PGPASSWORD: 'from-env',
      DATABASE_URL: 'postgres://etl@db.example.com/reports?sslmode=verify-full',
    });
    expect(fromEnvironment.db.url.reveal()).toBe('postgres://etl@db.example.com/reports?sslmode=verify-full');
  });

  it('reads ~/.pgpass when PGPASSFILE is not set, and does without it when there is none', () => {
    file('.pgpass', 'localhost:5433:*:*:from-home\n');
    const home = parseConfig({ ...env, DATABASE_URL: 'postgres://me@localhost:5433/db' });
    expect(new URL(home.db.url.reveal()).password).toBe('from-home');
    const none = parseConfig({
      ...env,
      HOME: join(folder, 'nowhere'),
      DATABASE_URL: 'postgres://me@localhost/db',
    });
    expect(none.db.url.reveal()).toBe('postgres://me@localhost/db');
  });

  it('refuses a PGPASSFILE that is missing or that others may read', () => {
    const open = file('open-pgpass', '*:*:*:*:pw\n', 0o644);
    expect(problems({ ...env, PGPASSFILE: open, DATABASE_URL: 'postgres://me@localhost/db' })).toEqual([
      `PGPASSFILE: ${JSON.stringify(open)} may be read by others than its owner: make it 0600`,
    ]);
    const missing = join(folder, 'no-pgpass');
    expect(problems({ ...env, PGPASSFILE: missing, DATABASE_URL: 'postgres://me@localhost/db' })).toEqual([
      `PGPASSFILE: cannot read ${JSON.stringify(missing)}: no such file`,
    ]);
  });

  it('matches like libpq: defaults, wildcards and escapes', () => {
    const target = passwordTarget(new URL('postgres://etl@[::1]/'));
    expect(target).toEqual({ host: '::1', port: '5432', database: 'etl', user: 'etl' });
    expect(findPassword('::1:5432:etl:etl:a', target!)).toBeUndefined();
    expect(findPassword('\\:\\:1:5432:etl:etl:a', target!)).toBe('a');
    expect(findPassword('*:*:*:*:b:c', target!)).toBe('b:c');
    expect(passwordTarget(new URL('postgres:///db?host=/var/run/postgresql'))).toBeUndefined();
  });
});

describe('the database connection', () => {
  const env = { ...base, POST_REPORTS_TOKEN: 'tok' };
  const refusal = (host: string) =>
    `DATABASE_URL (--database-url) connects to ${host} without verified TLS, so its password and rows could be read or taken on the way: add ?sslmode=verify-full, or set POST_REPORTS_ALLOW_PLAINTEXT_DATABASE to allow it`;

  it('refuses a connection to another host without verified TLS, unless allowed', () => {
    for (const url of [
      'postgres://etl@db.example.com/reports',
      'postgres://etl@db.example.com/reports?sslmode=disable',
      'postgres://etl@db.example.com/reports?sslmode=no-verify',
      // The driver connects to ?host=, whatever the URL's host says.
      'postgres://etl@localhost/reports?host=db.example.com',
    ]) {
      expect(problems({ ...env, DATABASE_URL: url }), url).toEqual([refusal('db.example.com')]);
      expect(
        problems({ ...env, DATABASE_URL: url, POST_REPORTS_ALLOW_PLAINTEXT_DATABASE: 'true' }),
        url,
      ).toEqual([]);
    }
    expect(
      problems({ ...env, DATABASE_URL: 'postgres://etl@10.0.0.7/reports', PGSSLMODE: 'disable' }),
    ).toEqual([refusal('10.0.0.7')]);
  });

  it('takes TLS that verifies the server, and a loopback host or a socket as they are', () => {
    for (const url of [
      'postgres://etl@db.example.com/reports?sslmode=verify-full',
      'postgres://etl@db.example.com/reports?sslmode=require',
      'postgres://etl@db.example.com/reports?ssl=true',
      'postgres://etl@127.0.0.1:5433/reports',
      'postgres://etl@[::1]/reports',
      'postgres://etl@localhost/reports?sslmode=disable',
      'postgres://etl@/reports?host=/var/run/postgresql',
    ]) {
      expect(problems({ ...env, DATABASE_URL: url }), url).toEqual([]);
    }
    expect(
      problems({ ...env, DATABASE_URL: 'postgres://etl@db.example.com/reports', PGSSLMODE: 'verify-full' }),
    ).toEqual([]);
  });

  it('takes the password file line of the host, port and user the connection will use', () => {
    const path = file(
      'pgpass-params',
      ['localhost:5432:reports:etl:not-the-url-host', 'db.example.com:6543:reports:other:right'].join('\n'),
    );
    const config = parseConfig({
      ...env,
      PGPASSFILE: path,
      DATABASE_URL:
        'postgres://etl@localhost/reports?host=db.example.com&port=6543&user=other&sslmode=verify-full',
    });
    expect(new URL(config.db.url.reveal()).password).toBe('right');
  });
});
