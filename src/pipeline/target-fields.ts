import pg from 'pg';
import { type Config, SETTINGS, type SettingName, type SettingSpec } from '../config.js';
import { ConfigError } from '../errors.js';
import {
  ALL_FIELDS,
  canonicalSelection,
  describeSelection,
  type FieldSelection,
  fieldFilter,
  sameSelection,
} from '../extract/field-selection.js';
import { documentedFields } from '../load/declared-types.js';
import { sqlState, UNDEFINED_COLUMN, UNDEFINED_TABLE } from '../load/pg-error-codes.js';

/*
 * The field selection of a target (--fields / --exclude-fields), kept with its filters in sync_state
 * (migration 004). Like the filters, it is part of what a schema holds: a run with another selection is refused
 * unless it starts over (--reset), which also drops the columns of the fields it leaves out. A name is accepted
 * when the documentation names the field, when the API has sent it to this schema before (field_columns), or
 * when the stored selection names it; anything else is taken for a typo and refused before anything is written.
 */

type Queryable = Pick<pg.ClientBase, 'query'>;

const t = (schema: string, table: string) => `${pg.escapeIdentifier(schema)}.${table}`;

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
    const { rows } = await db.query<{ field: string }>(`SELECT field FROM ${t(schema, 'field_columns')}`);
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
      `SELECT field_selection AS selection FROM ${t(schema, 'sync_state')}`,
    );
    return rows[0]?.selection ?? ALL_FIELDS;
  } catch (error) {
    if (sqlState(error) === UNDEFINED_COLUMN || sqlState(error) === UNDEFINED_TABLE) return ALL_FIELDS;
    throw error;
  }
}

/**
 * The run's selection, checked: every name known (one line naming the unknown ones), the post id never left out,
 * and the same selection the schema was loaded with unless `reset`. Throws ConfigError (exit 2).
 */
export function checkFieldSelection(config: Config, stored: StoredFields, reset: boolean): FieldSelection {
  const selection = canonicalSelection(config.run.fields ?? ALL_FIELDS);
  const schema = config.db.schema;
  if (selection.mode === 'all') {
    checkUnchanged(schema, stored.selection, selection, reset);
    return selection;
  }
  const setting: SettingName = selection.mode === 'include' ? 'fields' : 'excludeFields';
  const postId = config.api.postIdField;
  if (selection.mode === 'exclude' && selection.fields.includes(postId)) {
    throw new ConfigError(
      'CONFIG_INVALID',
      `${where(setting)} names the post id field ${JSON.stringify(postId)}: it is always loaded`,
    );
  }
  const known = new Set([
    ...documentedFields(postId),
    ...stored.reported,
    ...(stored.selection?.mode === 'include' || stored.selection?.mode === 'exclude'
      ? stored.selection.fields
      : []),
  ]);
  const unknown = selection.fields.filter((field) => !known.has(field));
  if (unknown.length > 0) {
    throw new ConfigError(
      'CONFIG_INVALID',
      `${where(setting)} names ${unknown.length === 1 ? 'an unknown field' : 'unknown fields'} ${unknown.map((f) => JSON.stringify(f)).join(', ')}: neither documented nor sent by the API to schema "${schema}" yet (known: ${[...known].sort().join(', ')})`,
    );
  }
  checkUnchanged(schema, stored.selection, selection, reset);
  return selection;
}

function checkUnchanged(
  schema: string,
  stored: FieldSelection | null,
  selection: FieldSelection,
  reset: boolean,
): void {
  if (stored === null || reset || sameSelection(stored, selection)) return;
  throw new ConfigError(
    'FILTERS_CHANGED',
    `schema "${schema}" was loaded with ${describeSelection(stored)}, this run has ${describeSelection(selection)}: pass --reset to clear it, or use another schema`,
  );
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
  await db.query(`UPDATE ${t(schema, 'sync_state')} SET field_selection = $1, updated_at = now()`, [
    selection.mode === 'all' ? null : JSON.stringify(selection),
  ]);
  const keep = fieldFilter(selection);
  if (keep === null) return;
  const { rows: partitions } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_inherits WHERE inhparent = to_regclass($1)`,
    [t(schema, 'posts')],
  );
  if ((partitions[0]?.n ?? 0) > 0) return;
  const { rows } = await db.query<{ field: string; column_name: string }>(
    `SELECT field, column_name FROM ${t(schema, 'field_columns')} ORDER BY field`,
  );
  for (const { field, column_name: column } of rows) {
    if (keep(field)) continue;
    await db.query(`ALTER TABLE ${t(schema, 'posts')} DROP COLUMN IF EXISTS ${pg.escapeIdentifier(column)}`);
    await db.query(`DELETE FROM ${t(schema, 'field_columns')} WHERE field = $1`, [field]);
  }
}

function where(name: SettingName): string {
  const spec: SettingSpec = SETTINGS[name];
  return spec.flag ? `${spec.env} (${spec.flag})` : spec.env;
}
