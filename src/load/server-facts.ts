/*
 * What the server and the connecting role are, read before a run writes anything: the server version, the
 * privileges the connector needs on its database and schema, and whether a session keeps its state (the
 * preflight decides what is missing).
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { LATEST_VIEW_FUNCTIONS, LATEST_VIEWS } from './latest-views.js';

type Queryable = Pick<pg.ClientBase, 'query'>;

/**
 * A table of the schema, or one of the connector's views, that the connecting role does not own (nor has the
 * privileges of its owner).
 */
export interface ForeignTable {
  readonly table: string;
  readonly owner: string;
  readonly kind: 'table' | 'view';
}

export interface ServerFacts {
  /** `server_version_num`, e.g. 150020. */
  readonly versionNum: number;
  /** `server_version`, e.g. `15.20 (Debian 15.20-0+deb12u1)`. */
  readonly version: string;
  readonly role: string;
  readonly database: string;
  readonly schemaExists: boolean;
  readonly canCreateSchema: boolean;
  /** Null when the schema does not exist. */
  readonly schemaUsage: boolean | null;
  readonly schemaCreate: boolean | null;
  /**
   * Up to FOREIGN_TABLES_SHOWN tables (and partitions) of the schema, and of the connector's views, the role could
   * not alter or drop.
   */
  readonly foreignTables: readonly ForeignTable[];
  /** The connector's functions of the schema (`name(arguments)`) the role may not execute. */
  readonly unexecutable: readonly string[];
}

const FOREIGN_TABLES_SHOWN = 3;

const FACTS = `
WITH s AS (SELECT oid FROM pg_namespace WHERE nspname = $1)
SELECT current_setting('server_version_num')::int AS version_num,
       current_setting('server_version') AS version,
       current_user AS role,
       current_database() AS database,
       EXISTS (SELECT 1 FROM s) AS schema_exists,
       has_database_privilege(current_database(), 'CREATE') AS can_create_schema,
       (SELECT has_schema_privilege(oid, 'USAGE') FROM s) AS schema_usage,
       (SELECT has_schema_privilege(oid, 'CREATE') FROM s) AS schema_create`;

// Altering, attaching and dropping a table needs the privileges of its owner (a superuser has every role's), and so
// does making a view again, which the connector does with the latest views whenever posts' columns change. Views of
// the schema that are not the connector's are a user's own: the connector never touches them.
const FOREIGN_TABLES = `
SELECT c.relname AS table, pg_get_userbyid(c.relowner) AS owner,
       CASE c.relkind WHEN 'v' THEN 'view' ELSE 'table' END AS kind
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = $1 AND (c.relkind IN ('r', 'p') OR (c.relkind = 'v' AND c.relname = ANY($2::text[])))
   AND NOT pg_has_role(c.relowner, 'USAGE')
 ORDER BY c.relname
 LIMIT ${FOREIGN_TABLES_SHOWN + 1}`;

// The latest views are made by functions a run calls whenever posts' columns change (src/load/latest-views.ts).
const UNEXECUTABLE = `
SELECT p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')' AS name
  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE n.nspname = $1 AND p.proname = ANY($2::text[]) AND NOT has_function_privilege(p.oid, 'EXECUTE')
 ORDER BY 1`;

interface FactsRow {
  version_num: number;
  version: string;
  role: string;
  database: string;
  schema_exists: boolean;
  can_create_schema: boolean;
  schema_usage: boolean | null;
  schema_create: boolean | null;
}

/** Reads the server's version and the role's privileges on the database and on `schema` (read only). */
export async function readServerFacts(db: Queryable, schema: string): Promise<ServerFacts> {
  const { rows } = await db.query<FactsRow>(FACTS, [schema]);
  const row = rows[0];
  if (row === undefined) throw new Error('the server answered no row to a one-row query');
  const foreign = row.schema_exists
    ? (await db.query<ForeignTable>(FOREIGN_TABLES, [schema, LATEST_VIEWS])).rows
    : [];
  const unexecutable = row.schema_exists
    ? (await db.query<{ name: string }>(UNEXECUTABLE, [schema, LATEST_VIEW_FUNCTIONS])).rows.map(
        (r) => r.name,
      )
    : [];
  return {
    versionNum: row.version_num,
    version: row.version,
    role: row.role,
    database: row.database,
    schemaExists: row.schema_exists,
    canCreateSchema: row.can_create_schema,
    schemaUsage: row.schema_usage,
    schemaCreate: row.schema_create,
    foreignTables: foreign,
    unexecutable,
  };
}

/** What two sessions saw of their server sessions (see readSessionPersistence). */
export interface SessionPersistence {
  /** Two sessions open at once ran on the same server session. */
  readonly sharedBackend: boolean;
  /** A setting a session made was gone at its next statement. */
  readonly settingLost: boolean;
}

const PROBE_SETTING = 'post_reports_etl.session_probe';

/**
 * Whether a session of the connector keeps its server session, as it does on a direct connection or through a
 * pooler in session mode; a pooler in transaction (or statement) mode hands each transaction whichever server
 * session is free. Two sessions are held at once: on one, a setting is made and read back by a later
 * statement; the other says which server session it runs on between the two. Reads and sets nothing that lasts.
 */
export async function readSessionPersistence(pool: pg.Pool): Promise<SessionPersistence> {
  const first = await pool.connect();
  let second: pg.PoolClient | undefined;
  try {
    second = await pool.connect();
    const probe = randomUUID();
    const set = await first.query<{ pid: number }>(
      `SELECT pg_backend_pid() AS pid, set_config('${PROBE_SETTING}', $1, false)`,
      [probe],
    );
    const other = await second.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    const read = await first.query<{ pid: number; probe: string | null }>(
      `SELECT pg_backend_pid() AS pid, current_setting('${PROBE_SETTING}', true) AS probe`,
    );
    await first.query(`RESET ${PROBE_SETTING}`);
    const firstPid = set.rows[0]?.pid;
    return {
      sharedBackend: other.rows[0]?.pid === firstPid || other.rows[0]?.pid === read.rows[0]?.pid,
      settingLost: read.rows[0]?.probe !== probe || read.rows[0]?.pid !== firstPid,
    };
  } finally {
    second?.release();
    first.release();
  }
}
