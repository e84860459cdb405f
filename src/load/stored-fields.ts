/*
 * The field selection recorded with a target in sync_state (migration 004), and the fields the API has sent to
 * its schema (field_columns).
 */

import pg from 'pg';
import { answeredWith } from '../error-policy.js';
import { type FieldSelection, fieldFilter } from '../model/field-selection.js';
import { dropLatestForChange, remakeLatestViews } from './latest-views.js';
import type { Scope } from './scope.js';
import { qualified } from './table-names.js';

type Queryable = Pick<pg.ClientBase, 'query'>;

/** What the schema says about fields, read before its migrations run (an older schema has no selection). */
export interface StoredFields {
  /** The selection the schema was loaded with; null for a schema not set up yet. */
  readonly selection: FieldSelection | null;
  /** Fields the API has sent to this schema (their columns' registry). */
  readonly reported: readonly string[];
}

/** The fields the API has sent to this schema, with the selection of its stored target (null: none yet). */
export async function readStoredFields(
  db: Queryable,
  schema: string,
  selection: FieldSelection | null,
): Promise<StoredFields> {
  let reported: string[] = [];
  try {
    const { rows } = await db.query<{ field: string }>(
      `SELECT field FROM ${qualified(schema, 'field_columns')}`,
    );
    reported = rows.map((r) => r.field);
  } catch (error) {
    if (!answeredWith(error, 'no such table')) throw error;
  }
  return { selection, reported };
}

/**
 * Records the selection with the target and drops the columns of the fields it leaves out. For a target that
 * holds no window yet (a new one, or one just reset, in the same transaction): a column is dropped only empty.
 */
export async function applyFieldSelection(
  db: Queryable,
  scope: Scope,
  selection: FieldSelection,
  postIdField: string,
): Promise<void> {
  const { schema, org } = scope;
  await db.query(
    `UPDATE ${qualified(schema, 'sync_state')} SET field_selection = $1, updated_at = now() WHERE org = $2`,
    [selection.mode === 'all' ? null : JSON.stringify(selection), org],
  );
  const keep = fieldFilter(selection);
  if (keep === null) return;
  // The columns are every organization's: only a schema that holds no row, and no other organization, loses one.
  // (A reset empties its partitions in the same transaction, and keeps them: their rows, not they, count.)
  const { rows: held } = await db.query<{ held: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM ${qualified(schema, 'posts')})
         OR EXISTS (SELECT 1 FROM ${qualified(schema, 'sync_state')} WHERE org <> $1) AS held`,
    [org],
  );
  if (held[0]?.held !== false) return;
  const { rows } = await db.query<{ field: string; column_name: string }>(
    `SELECT field, column_name FROM ${qualified(schema, 'field_columns')} ORDER BY field`,
  );
  const dropped = rows.filter(({ field }) => !keep(field));
  if (dropped.length === 0) return;
  // posts_latest holds the columns: dropped first, made again without them (src/load/latest-views.ts).
  await dropLatestForChange(db, schema);
  for (const { field, column_name: column } of dropped) {
    await db.query(
      `ALTER TABLE ${qualified(schema, 'posts')} DROP COLUMN IF EXISTS ${pg.escapeIdentifier(column)}`,
    );
    await db.query(`DELETE FROM ${qualified(schema, 'field_columns')} WHERE field = $1`, [field]);
  }
  await remakeLatestViews(db, schema, postIdField);
}
