import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { promisify } from 'node:util';
import pg from 'pg';

const run = promisify(execFile);

/** The pg_dump binaries installed, newest first, then the one on PATH. */
function pgDumpCandidates(): string[] {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => /^\d+$/.test(v))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  return [...versions.map((v) => `${root}/${v}/bin/pg_dump`).filter((p) => existsSync(p)), 'pg_dump'];
}

async function majorOf(binary: string): Promise<number | undefined> {
  try {
    const { stdout } = await run(binary, ['--version']);
    const match = /(\d+)(?:\.\d+)?/.exec(stdout.replace(/^[^)]*\)/, ''));
    return match ? Number(match[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** A pg_dump that can dump this server: its major version at least the server's (pg_dump refuses a newer server). */
async function pgDumpFor(serverMajor: number): Promise<string | undefined> {
  for (const binary of pgDumpCandidates()) {
    const major = await majorOf(binary);
    if (major !== undefined && major >= serverMajor) return binary;
  }
  return undefined;
}

/**
 * Every value of every table in the database as one text, where an excluded value must not appear. A pg_dump of
 * the whole database when a pg_dump for this server is installed; otherwise (a server with no client tools of its
 * version, such as the embedded one) every table's column names and every value, each as text and unescaped, read
 * through the catalog: partitions, unlogged stages and the connector's own state included.
 */
export async function databaseText(url: string, pool: pg.Pool): Promise<string> {
  const version = await pool.query<{ v: string }>('SELECT current_setting($1) AS v', ['server_version_num']);
  const pgDump = await pgDumpFor(Math.floor(Number(version.rows[0]?.v) / 10000));
  if (pgDump !== undefined) {
    const { stdout } = await run(pgDump, ['--no-owner', `--dbname=${url}`], { maxBuffer: 256 * 1024 * 1024 });
    return stdout;
  }
  const tables = await pool.query<{ schema: string; name: string }>(
    `SELECT n.nspname AS schema, c.relname AS name
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE c.relkind IN ('r', 'm') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
        AND n.nspname NOT LIKE 'pg\\_toast%'
      ORDER BY 1, 2`,
  );
  const parts: string[] = [];
  for (const table of tables.rows) {
    const qualified = `${pg.escapeIdentifier(table.schema)}.${pg.escapeIdentifier(table.name)}`;
    parts.push(qualified);
    const values = await pool.query<{ k: string; v: string | null }>(
      `SELECT e.key AS k, e.value AS v FROM ${qualified} AS t, LATERAL jsonb_each_text(to_jsonb(t)) AS e`,
    );
    for (const { k, v } of values.rows) parts.push(`${k}\t${v ?? ''}`);
  }
  return parts.join('\n');
}
