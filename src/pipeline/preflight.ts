import type pg from 'pg';
import type { ApiClient } from '../api/client.js';
import { StoreError } from '../errors.js';
import { type Dimensions, fetchDimensions } from '../extract/dimensions.js';
import { readServerFacts, readSessionPersistence, type ServerFacts } from '../load/server-facts.js';

/** range_agg and the multirange operators of the window commit (src/load/queries.ts) came with PostgreSQL 14. */
export const MIN_SERVER_VERSION_NUM = 140000;
const MIN_SERVER_VERSION = '14';

/**
 * Checks, before any report is created and before anything is written, what no retry can fix: the token (the
 * dimensions call, whose answer the run needs anyway), the server version, the role's privileges on the
 * database and the schema, and sessions that keep their state (not a pooler in transaction mode). Each failure
 * is one line naming what was found and what is needed (exit 2).
 */
export async function preflight(
  api: ApiClient,
  pool: pg.Pool,
  schema: string,
  signal?: AbortSignal,
): Promise<Dimensions> {
  // The two halves ask different servers, so they run side by side; the API's answer is awaited first, so that its
  // failure is the one reported, as soon as it comes.
  const server = checkServer(pool, schema);
  server.catch(() => {});
  const dimensions = await fetchDimensions(api, signal);
  await server;
  return dimensions;
}

/** The database half of the preflight (also run by `migrate`). */
export async function checkServer(pool: pg.Pool, schema: string): Promise<void> {
  const facts = await readServerFacts(pool, schema);
  checkServerVersion(facts.versionNum, facts.version);
  checkPrivileges(facts, schema);
  await checkSessionsPersist(pool);
}

/**
 * Throws StoreError('DB_POOLER_UNSUPPORTED') when sessions do not keep their server session: a pooler in
 * transaction or statement mode. The run lock and the window claims are session advisory locks, and the
 * session settings are session state: through such a pooler they would land on whichever server session is
 * free, and locks would be held by nobody, or by another client.
 */
export async function checkSessionsPersist(pool: pg.Pool): Promise<void> {
  const seen = await readSessionPersistence(pool);
  if (!seen.sharedBackend && !seen.settingLost) return;
  throw new StoreError(
    'DB_POOLER_UNSUPPORTED',
    `the database connection goes through a pooler in transaction mode (${seen.sharedBackend ? 'two sessions ran on one server session' : 'a session setting was gone at the next statement'}): the connector holds session locks and settings for a whole run, which need a session of their own; connect through the pooler in session mode (PgBouncer: pool_mode = session) or directly to PostgreSQL`,
  );
}

/** Throws StoreError('DB_VERSION_UNSUPPORTED') for a server older than the SQL needs. */
export function checkServerVersion(versionNum: number, version: string): void {
  if (versionNum >= MIN_SERVER_VERSION_NUM) return;
  throw new StoreError(
    'DB_VERSION_UNSUPPORTED',
    `PostgreSQL ${version.split(' ')[0]} found; post-reports-etl needs PostgreSQL ${MIN_SERVER_VERSION} or later (its window commit uses multiranges)`,
  );
}

/** Throws StoreError('DB_PRIVILEGE_MISSING') naming the role, the object and the privilege it lacks. */
export function checkPrivileges(facts: ServerFacts, schema: string): void {
  const role = quote(facts.role);
  const database = quote(facts.database);
  const target = quote(schema);
  if (!facts.schemaExists) {
    if (facts.canCreateSchema) return;
    throw missing(
      `role ${role} lacks CREATE on database ${database}, needed to create schema ${target}: GRANT CREATE ON DATABASE ${database} TO ${role}, or CREATE SCHEMA ${target} AUTHORIZATION ${role}`,
    );
  }
  const lacking = [...(facts.schemaUsage ? [] : ['USAGE']), ...(facts.schemaCreate ? [] : ['CREATE'])];
  if (lacking.length > 0) {
    throw missing(
      `role ${role} lacks ${lacking.join(' and ')} on schema ${target}: GRANT USAGE, CREATE ON SCHEMA ${target} TO ${role}`,
    );
  }
  const [first, ...others] = facts.foreignTables;
  if (first !== undefined) {
    const more = others.length === 0 ? '' : ` (and ${others.map((t) => quote(t.table)).join(', ')})`;
    throw missing(
      `role ${role} does not own ${first.kind} ${target}.${quote(first.table)}${more}, owned by ${quote(first.owner)}: the connector alters, attaches and drops its tables and makes its views again, which needs their owner's privileges: ALTER ${first.kind.toUpperCase()} ${target}.${quote(first.table)} OWNER TO ${role}, or GRANT ${quote(first.owner)} TO ${role}`,
    );
  }
  const [unexecutable] = facts.unexecutable;
  if (unexecutable !== undefined) {
    throw missing(
      `role ${role} may not execute function ${target}.${unexecutable} (of the latest views, called whenever posts' columns change): GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA ${target} TO ${role}`,
    );
  }
}

function missing(message: string): StoreError {
  return new StoreError('DB_PRIVILEGE_MISSING', message);
}

function quote(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
