/*
 * What the server and the connecting role are, read before a run writes anything: the server version and the
 * privileges the connector needs on its database and schema (the preflight decides what is missing).
 */
import type pg from 'pg';

type Queryable = Pick<pg.ClientBase, 'query'>;

/** A table of the schema that the connecting role does not own (nor has the privileges of its owner). */
export interface ForeignTable {
  readonly table: string;
  readonly owner: string;
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
  /** Up to FOREIGN_TABLES_SHOWN tables (and partitions) of the schema the role could not alter or drop. */
  readonly foreignTables: readonly ForeignTable[];
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

// Altering, attaching and dropping a table needs the privileges of its owner (a superuser has every role's).
const FOREIGN_TABLES = `
SELECT c.relname AS table, pg_get_userbyid(c.relowner) AS owner
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') AND NOT pg_has_role(c.relowner, 'USAGE')
 ORDER BY c.relname
 LIMIT ${FOREIGN_TABLES_SHOWN + 1}`;

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
  const foreign = row.schema_exists ? (await db.query<ForeignTable>(FOREIGN_TABLES, [schema])).rows : [];
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
  };
}
