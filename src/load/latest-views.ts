/*
 * posts_latest and post_custom_segments_latest: one row per organization and post from its latest window, and that
 * row's segments. Their one definition is the schema's function post_reports_refresh_latest_views (migration 012);
 * everything here calls it or reads the catalog.
 *
 * A view's `*` is expanded when the view is made, and a view holds the columns it reads (they can be neither retyped
 * nor dropped under it). So every change of posts' columns handles the views in its own transaction: after columns
 * are added, the views are made again (they gain the columns, and users' views built on them are kept); before a
 * column is retyped or dropped, posts_latest is dropped, and made again after with the owner and grants it had. A change made by hand without them
 * (an operator's DROP VIEW, ALTER TABLE) is caught up at the next run's start (keepLatestViewsInStep).
 */
import type pg from 'pg';
import { ddlLockKey, lockForTransaction } from './locks.js';
import { qualified } from './table-names.js';

type Queryable = Pick<pg.ClientBase, 'query'>;

export const POSTS_LATEST = 'posts_latest';
export const SEGMENTS_LATEST = 'post_custom_segments_latest';
/** The views the connector owns and makes again; the preflight checks that the role owns them. */
export const LATEST_VIEWS: readonly string[] = [POSTS_LATEST, SEGMENTS_LATEST];
export const REFRESH_FUNCTION = 'post_reports_refresh_latest_views';
export const DROP_FUNCTION = 'post_reports_drop_latest_view';
/** Every function of migration 012: the two above call the other two, all as the connector's role. */
export const LATEST_VIEW_FUNCTIONS: readonly string[] = [
  REFRESH_FUNCTION,
  DROP_FUNCTION,
  'post_reports_keep_view_privileges',
  'post_reports_restore_view_privileges',
];

/**
 * $1 the schema's name: drops posts_latest before a column of posts is retyped or dropped (post_custom_segments_latest
 * reads only the key columns of posts, which never change), recording its owner and grants for the transaction, which
 * the refresh gives back. Not CASCADE: a view of a user's built on it stops the change with PostgreSQL's own error
 * naming that view, rather than being dropped silently.
 */
export function dropPostsLatest(schema: string): string {
  return `SELECT ${qualified(schema, DROP_FUNCTION)}($1::text)`;
}

/** Drops posts_latest, its owner and grants kept for remakeLatestViews in the same transaction. */
export async function dropLatestForChange(db: Queryable, schema: string): Promise<void> {
  await db.query(dropPostsLatest(schema), [schema]);
}

/** $1 the schema's name, $2 the post id column: makes both views with the tables' columns as they are now. */
export function refreshLatestViews(schema: string): string {
  return `SELECT ${qualified(schema, REFRESH_FUNCTION)}($1::text, $2::text)`;
}

/** Makes both views again with the columns posts and post_custom_segments have now (inside the caller's DDL). */
export async function remakeLatestViews(db: Queryable, schema: string, postIdField: string): Promise<void> {
  await db.query(refreshLatestViews(schema), [schema, postIdField]);
}

/**
 * $1..$4 posts, posts_latest, post_custom_segments, post_custom_segments_latest (qualified), $5 the refresh
 * function's signature: whether the function exists (a schema migrated to 012) and whether each view exists with
 * its table's columns, names and types, in order.
 */
const IN_STEP = `
WITH columns AS (
  SELECT attrelid, array_agg(attname::text || ' ' || format_type(atttypid, atttypmod) ORDER BY attnum) AS list
    FROM pg_attribute
   WHERE attrelid IN (to_regclass($1), to_regclass($2), to_regclass($3), to_regclass($4))
     AND attnum > 0 AND NOT attisdropped
   GROUP BY attrelid
)
SELECT to_regprocedure($5) IS NOT NULL AS has_function,
       COALESCE((SELECT list FROM columns WHERE attrelid = to_regclass($1))
                  = (SELECT list FROM columns WHERE attrelid = to_regclass($2))
                AND (SELECT list FROM columns WHERE attrelid = to_regclass($3))
                  = (SELECT list FROM columns WHERE attrelid = to_regclass($4)), false) AS in_step`;

async function readInStep(
  db: Queryable,
  schema: string,
): Promise<{ has_function: boolean; in_step: boolean }> {
  const { rows } = await db.query<{ has_function: boolean; in_step: boolean }>(IN_STEP, [
    qualified(schema, 'posts'),
    qualified(schema, POSTS_LATEST),
    qualified(schema, 'post_custom_segments'),
    qualified(schema, SEGMENTS_LATEST),
    `${qualified(schema, REFRESH_FUNCTION)}(text, text)`,
  ]);
  return rows[0] ?? { has_function: false, in_step: false };
}

/**
 * Makes the views again when they are missing or out of step with the tables' columns (a change made by hand, as
 * the storage model tells an operator to make one). Reads only when they are in step (every run but such a one);
 * otherwise makes them under the schema's DDL lock, which every change of posts' columns takes. Returns whether it
 * made them.
 */
export async function keepLatestViewsInStep(
  client: pg.ClientBase,
  schema: string,
  postIdField: string,
): Promise<boolean> {
  const seen = await readInStep(client, schema);
  if (!seen.has_function || seen.in_step) return false;
  await client.query('BEGIN');
  try {
    await lockForTransaction(client, ddlLockKey(schema));
    const again = await readInStep(client, schema);
    if (!again.in_step) await remakeLatestViews(client, schema, postIdField);
    await client.query('COMMIT');
    return !again.in_step;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}
