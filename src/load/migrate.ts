/*
 * A small forward-only migrator. Maintained libraries (node-pg-migrate, graphile-migrate, postgrator) were
 * considered: none can template identifiers per deployment, and this connector's schema name and post id column
 * are chosen by configuration ({{schema}}, {{post_id}}), so the ~100 lines below are the honest price.
 * Rules: files `NNN_name.sql`, applied in number order, each once in its own transaction, recorded with a
 * checksum of the file as written (an applied file that was edited is refused), all under a session advisory
 * lock keyed by the schema so that two processes starting together apply each migration exactly once; a schema
 * with nothing pending is only read, without the lock.
 * A migration that failed on some schemas is fixed in place, not by a later one (which those schemas could never
 * reach): its earlier text, applied elsewhere, stays accepted through EARLIER_CHECKSUMS.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { EtlError, StoreError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { PartitionPeriod } from '../model/partition-period.js';
import { asStoreError } from './database.js';
import { keepLatestViewsInStep, LATEST_VIEWS } from './latest-views.js';
import { lockForSession, migrateLockKey, unlockSession } from './locks.js';
import { qualified } from './table-names.js';

/** Where the connector's tables live. */
export interface Target {
  /** The PostgreSQL schema holding every table. */
  schema: string;
  /** The post id field of the API, which is also the name of the post id column. */
  postIdField: string;
  /** The period of the partitions of posts made for new dates (default: year). */
  partitionPeriod?: PartitionPeriod;
  /** The organization whose rows and state are loaded (default: `default`). */
  org?: string;
  /** The columns of undocumented fields posts may hold, all organizations together (default: 1,000). */
  columnBudget?: number | undefined;
  /** The widenings of posts' columns a run may make (default: 20). */
  wideningsPerRun?: number | undefined;
}

export interface MigrateOptions {
  /** Directory of the NNN_name.sql files (default: `migrations/` of this package). */
  migrationsDir?: string;
}

interface MigrationFile {
  readonly name: string;
  readonly sql: string;
  readonly checksum: string;
}

const FILE_NAME = /^(\d{3})_[a-z0-9_]+\.sql$/;

/**
 * Checksums of earlier texts of migrations fixed in place. Each fix leaves what the earlier text did where it
 * succeeded as it was: a schema that applied the earlier text is in the state the fixed one gives.
 */
const EARLIER_CHECKSUMS: Readonly<Record<string, readonly string[]>> = {
  // 005 failed with `none` on a history of several years (one posts_all a year); every other case is unchanged.
  '005_period_partitions.sql': ['0a93cb7d58f0bca04004202e6acd5c39df7e05153875809db3e2772b1e3a814a'],
};

/**
 * Applies the pending migrations to the target schema (created if absent) and returns the names applied now.
 * Throws StoreError('SCHEMA_MISMATCH') when an applied migration was edited, or when the schema was created
 * for another post id column.
 */
export async function migrate(
  pool: pg.Pool,
  target: Target,
  logger: Logger,
  signal?: AbortSignal,
  options: MigrateOptions = {},
): Promise<{ applied: string[] }> {
  const files = await readMigrations(options.migrationsDir ?? defaultMigrationsDir());
  const schema = pg.escapeIdentifier(target.schema);
  const migrations = qualified(target.schema, 'schema_migrations');
  const client = await pool.connect();
  const onError = (): void => {};
  client.on('error', onError);
  let broken: Error | undefined;
  let locked = false;
  try {
    signal?.throwIfAborted();
    // A schema that is up to date (every run after the first) is only read: no lock, no DDL. Each migration is
    // recorded in its own transaction, so every file recorded means every file applied, never a schema half-way;
    // anything pending is read again under the lock, where another process may have applied it meanwhile.
    const recorded = await readApplied(client, target);
    if (recorded !== null && pendingOf(files, recorded, target).length === 0) {
      await checkPostIdColumn(client, target);
      await keepViewsInStep(client, target, logger);
      return { applied: [] };
    }
    await lockForSession(client, migrateLockKey(target.schema));
    locked = true;
    // CREATE SCHEMA IF NOT EXISTS needs CREATE on the database even when the schema exists: a role owning only its schema could not run.
    if ((await client.query('SELECT to_regnamespace($1) IS NULL AS missing', [schema])).rows[0]?.missing)
      await client.query(`CREATE SCHEMA ${schema}`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${migrations} (
         name text PRIMARY KEY, checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    const applied = await applyPending(client, files, target, logger, signal);
    await checkPostIdColumn(client, target);
    await keepViewsInStep(client, target, logger);
    return { applied };
  } catch (error) {
    if (!(error instanceof EtlError) && error instanceof Error && error.name !== 'AbortError') broken = error;
    throw asStoreError('migrate', error);
  } finally {
    if (locked && broken === undefined) {
      await unlockSession(client, migrateLockKey(target.schema)).catch((error: unknown) => {
        broken = error instanceof Error ? error : new Error(String(error));
      });
    }
    client.off('error', onError);
    // A connection that failed mid-way is destroyed, which also frees its session advisory lock.
    client.release(broken);
  }
}

/**
 * The migrations not yet applied to the target schema (every one for a schema not set up yet), by name. Reads
 * only: a run asks it to know whether it needs the schema alone.
 */
export async function pendingMigrations(
  db: Pick<pg.ClientBase, 'query'>,
  target: Target,
  options: MigrateOptions = {},
): Promise<string[]> {
  const files = await readMigrations(options.migrationsDir ?? defaultMigrationsDir());
  const recorded = await readApplied(db, target);
  return files.filter((f) => !recorded?.has(f.name)).map((f) => f.name);
}

/** Applies, each in its own transaction, the migrations not yet recorded; refuses an applied one that was edited. */
async function applyPending(
  client: pg.PoolClient,
  files: readonly MigrationFile[],
  target: Target,
  logger: Logger,
  signal?: AbortSignal,
): Promise<string[]> {
  const migrations = qualified(target.schema, 'schema_migrations');
  const applied: string[] = [];
  for (const file of pendingOf(files, (await readApplied(client, target)) ?? new Map(), target)) {
    signal?.throwIfAborted();
    await client.query('BEGIN');
    try {
      await client.query(render(file.sql, target));
      await client.query(`INSERT INTO ${migrations} (name, checksum) VALUES ($1, $2)`, [
        file.name,
        file.checksum,
      ]);
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw asStoreError(`migration ${file.name}`, error);
    }
    applied.push(file.name);
    logger.debug({ migration: file.name, schema: target.schema }, 'migration applied');
  }
  // One line for all of them: a new schema's dozen migrations are one event to a person reading the log.
  if (applied.length > 0) logger.info({ migrations: applied, schema: target.schema }, 'migrations applied');
  return applied;
}

/** The checksum of each migration recorded in the target schema; null when it has no record yet. */
async function readApplied(
  client: Pick<pg.ClientBase, 'query'>,
  target: Target,
): Promise<ReadonlyMap<string, string> | null> {
  const migrations = qualified(target.schema, 'schema_migrations');
  const { rows } = await client.query<{ exists: boolean }>('SELECT to_regclass($1) IS NOT NULL AS exists', [
    migrations,
  ]);
  if (!rows[0]?.exists) return null;
  const recorded = await client.query<{ name: string; checksum: string }>(
    `SELECT name, checksum FROM ${migrations}`,
  );
  return new Map(recorded.rows.map((row) => [row.name, row.checksum]));
}

/** The files not recorded yet, in order; refuses a recorded one that was edited since. */
function pendingOf(
  files: readonly MigrationFile[],
  recorded: ReadonlyMap<string, string>,
  target: Target,
): MigrationFile[] {
  const pending: MigrationFile[] = [];
  for (const file of files) {
    const checksum = recorded.get(file.name);
    if (checksum === undefined) {
      pending.push(file);
    } else if (checksum !== file.checksum && !EARLIER_CHECKSUMS[file.name]?.includes(checksum)) {
      throw new StoreError(
        'SCHEMA_MISMATCH',
        `migration ${file.name} was edited after it was applied to schema ${target.schema}; add a new migration instead`,
      );
    }
  }
  return pending;
}

/**
 * Replaces the identifier placeholders with quoted identifiers, their `_literal` forms (the names as arguments of a
 * function) and the partition period with literals.
 */
export function render(sql: string, target: Target): string {
  // Replaced by functions: a replacement string would read `$'`, `$&`… in a name as patterns.
  const values: Record<string, string> = {
    '{{schema}}': pg.escapeIdentifier(target.schema),
    '{{post_id}}': pg.escapeIdentifier(target.postIdField),
    '{{schema_literal}}': pg.escapeLiteral(target.schema),
    '{{post_id_literal}}': pg.escapeLiteral(target.postIdField),
    '{{partition_period}}': pg.escapeLiteral(target.partitionPeriod ?? 'year'),
  };
  return sql.replace(/\{\{[a-z_]+\}\}/g, (placeholder) => values[placeholder] ?? placeholder);
}

async function readMigrations(dir: string): Promise<MigrationFile[]> {
  const names = (await readdir(dir)).filter((name) => name.endsWith('.sql')).sort();
  const numbers = new Set<string>();
  const files: MigrationFile[] = [];
  for (const name of names) {
    const match = FILE_NAME.exec(name);
    if (!match?.[1])
      throw new StoreError(
        'SCHEMA_MISMATCH',
        `migration file name ${JSON.stringify(name)} is not NNN_name.sql`,
      );
    if (numbers.has(match[1]))
      throw new StoreError('SCHEMA_MISMATCH', `two migrations are numbered ${match[1]}`);
    numbers.add(match[1]);
    const sql = await readFile(join(dir, name), 'utf8');
    files.push({ name, sql, checksum: createHash('sha256').update(sql).digest('hex') });
  }
  return files;
}

// Works from src/load (tests, tsx) and from dist/src/load (the published package): the first ancestor holding
// package.json and migrations/.
function defaultMigrationsDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'migrations')))
      return join(dir, 'migrations');
    const parent = dirname(dir);
    if (parent === dir)
      throw new StoreError('SCHEMA_MISMATCH', 'cannot find the migrations directory of the package');
    dir = parent;
  }
}

/** The latest views made again when a change by hand left them missing or behind posts' columns. */
async function keepViewsInStep(client: pg.PoolClient, target: Target, logger: Logger): Promise<void> {
  if (await keepLatestViewsInStep(client, target.schema, target.postIdField)) {
    logger.info(
      { schema: target.schema, views: LATEST_VIEWS },
      'latest views made again with the columns of the tables',
    );
  }
}

async function checkPostIdColumn(client: pg.PoolClient, target: Target): Promise<void> {
  const result = await client.query<{ type: string }>(
    `SELECT format_type(a.atttypid, a.atttypmod) AS type
       FROM pg_attribute a
      WHERE a.attrelid = to_regclass($1) AND a.attname = $2 AND NOT a.attisdropped`,
    [qualified(target.schema, 'posts'), target.postIdField],
  );
  if (result.rows[0]?.type !== 'bigint') {
    throw new StoreError(
      'SCHEMA_MISMATCH',
      `schema ${target.schema} has no bigint post id column ${JSON.stringify(target.postIdField)}: it was created for another post id field`,
    );
  }
}
