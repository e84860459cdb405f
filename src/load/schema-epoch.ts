/*
 * Readings that change for certain whenever something held a schema, or one organization's share of it, alone:
 * a migration records itself in schema_migrations (and an earlier version's reset truncated report_windows, which
 * gives the table a new file); a reset of an organization counts itself in its sync_state row, and a rename records
 * the id it took away (organization_renames), whose runs must not write under it any more. A run whose lock's
 * session was lost compares them before and after taking the lock again.
 */

import type pg from 'pg';
import { answeredWith } from '../error-policy.js';
import type { Scope } from './scope.js';
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

/**
 * The organization's epoch now: how many times it was reset (none before its target is recorded, nor in a schema
 * whose migrations have not run yet: a run takes the organization's lock before it migrates), and how many times
 * its id was renamed away, once it was. Both readings keep their form across migrations 008 and 011, which a run
 * may apply between two readings.
 */
export async function organizationEpoch(db: Queryable, scope: Scope): Promise<string> {
  const resets = await resetCount(db, scope);
  const renames = await renamedAway(db, scope);
  return renames === 0 ? resets : `${resets}:renamed ${renames}`;
}

async function resetCount(db: Queryable, scope: Scope): Promise<string> {
  try {
    const { rows } = await db.query<{ epoch: string }>(
      `SELECT COALESCE((SELECT reset_count FROM ${qualified(scope.schema, 'sync_state')} WHERE org = $1), 0)::text
           AS epoch`,
      [scope.org],
    );
    return rows[0]?.epoch ?? '0';
  } catch (error) {
    if (answeredWith(error, 'no such table', 'no such column')) return '0';
    throw error;
  }
}

async function renamedAway(db: Queryable, scope: Scope): Promise<number> {
  try {
    const { rows } = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${qualified(scope.schema, 'organization_renames')} WHERE org = $1`,
      [scope.org],
    );
    return rows[0]?.n ?? 0;
  } catch (error) {
    if (answeredWith(error, 'no such table')) return 0;
    throw error;
  }
}
