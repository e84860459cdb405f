/*
 * A reading of a schema that changes for certain whenever something held it alone: a reset truncates
 * report_windows (TRUNCATE gives a table a new file), a migration records itself in schema_migrations. A run whose
 * lock's session was lost compares it before and after taking the lock again.
 */
import type pg from 'pg';
import { qualified } from './table-names.js';

type Queryable = Pick<pg.ClientBase, 'query'>;

/** $1: report_windows, qualified; `migrations`: schema_migrations, qualified (both exist once migrated). */
const epoch = (migrations: string): string =>
  `SELECT concat_ws(':', pg_relation_filenode($1::regclass), (SELECT count(*) FROM ${migrations})) AS epoch`;

/** The schema's epoch now (see above). */
export async function schemaEpoch(db: Queryable, schema: string): Promise<string> {
  const { rows } = await db.query<{ epoch: string }>(epoch(qualified(schema, 'schema_migrations')), [
    qualified(schema, 'report_windows'),
  ]);
  return rows[0]?.epoch ?? '';
}
