/*
 * The field selection recorded with a target in sync_state (migration 004), and the fields the API has sent to
 * its schema (field_columns).
 */
import pg from 'pg';
import { ALL_FIELDS, type FieldSelection, fieldFilter } from '../model/field-selection.js';
import { sqlState, UNDEFINED_COLUMN, UNDEFINED_TABLE } from './pg-error-codes.js';
import { qualified } from './table-names.js';

type Queryable = Pick<pg.ClientBase, 'query'>;

/** What the schema says about fields, read before its migrations run (an older schema has no selection). */
export interface StoredFields {
  /** The selection the schema was loaded with; null for a schema not set up yet. */
  readonly selection: FieldSelection | null;
  /** Fields the API has sent to this schema (their columns' registry). */
  readonly reported: readonly string[];
}

/** Reads the stored selection and the fields the API has sent; `hasTarget`: sync_state holds the target. */
export async function readStoredFields(
  db: Queryable,
  schema: string,
  hasTarget: boolean,
): Promise<StoredFields> {
  const selection = hasTarget ? await readSelection(db, schema) : null;
  let reported: string[] = [];
  try {
    const { rows } = await db.query<{ field: string }>(
      `SELECT field FROM ${qualified(schema, 'field_columns')}`,
    );
    reported = rows.map((r) => r.field);
  } catch (error) {
    if (sqlState(error) !== UNDEFINED_TABLE) throw error;
  }
  return { selection, reported };
}

/** The selection recorded with the target: every field for a schema loaded before selections existed. */
export async function readSelection(db: Queryable, schema: string): Promise<FieldSelection> {
  try {
    const { rows } = await db.query<{ selection: FieldSelection | null }>(
      `SELECT field_selection AS selection FROM ${qualified(schema, 'sync_state')}`,
    );
    return rows[0]?.selection ?? ALL_FIELDS;
  } catch (error) {
    if (sqlState(error) === UNDEFINED_COLUMN || sqlState(error) === UNDEFINED_TABLE) return ALL_FIELDS;
    throw error;
  }
}

/**
 * Records the selection with the target and drops the columns of the fields it leaves out. For a target that
 * holds no window yet (a new one, or one just reset, in the same transaction): a column is dropped only empty.
 */
export async function applyFieldSelection(
  db: Queryable,
  schema: string,
  selection: FieldSelection,
): Promise<void> {
  await db.query(`UPDATE ${qualified(schema, 'sync_state')} SET field_selection = $1, updated_at = now()`, [
    selection.mode === 'all' ? null : JSON.stringify(selection),
  ]);
  const keep = fieldFilter(selection);
  if (keep === null) return;
  const { rows: partitions } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_inherits WHERE inhparent = to_regclass($1)`,
    [qualified(schema, 'posts')],
  );
  if ((partitions[0]?.n ?? 0) > 0) return;
  const { rows } = await db.query<{ field: string; column_name: string }>(
    `SELECT field, column_name FROM ${qualified(schema, 'field_columns')} ORDER BY field`,
  );
  for (const { field, column_name: column } of rows) {
    if (keep(field)) continue;
    await db.query(
      `ALTER TABLE ${qualified(schema, 'posts')} DROP COLUMN IF EXISTS ${pg.escapeIdentifier(column)}`,
    );
    await db.query(`DELETE FROM ${qualified(schema, 'field_columns')} WHERE field = $1`, [field]);
  }
}
