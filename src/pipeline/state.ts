import pg from 'pg';
import type { Filters } from '../extract/filters.js';
import type { Window } from './windows.js';

/**
 * The run state kept in PostgreSQL: the target's identity and cursor (sync_state), and per window its report,
 * attempts and outcome (report_windows). A window's data is loaded when its row has a row_count: `status` tells
 * how the latest attempt went, so a failed reload still counts as loaded with its previous contents.
 */

type Queryable = Pick<pg.ClientBase, 'query'>;

export interface TargetState {
  readonly postIdField: string;
  readonly filters: Filters;
  readonly cursorDate: string | null;
}

export interface WindowState extends Window {
  readonly reportId: string | null;
  readonly status: string;
  readonly pagesStaged: number;
  readonly rowCount: number | null;
  readonly attempts: number;
  readonly lastError: string | null;
  readonly updatedAt: Date;
}

const t = (schema: string, table: string) => `${pg.escapeIdentifier(schema)}.${table}`;

export async function readTarget(db: Queryable, schema: string): Promise<TargetState | null> {
  const { rows } = await db.query<{ post_id_field: string; filters: Filters; cursor_date: string | null }>(
    `SELECT post_id_field, filters, to_char(cursor_date, 'YYYY-MM-DD') AS cursor_date FROM ${t(schema, 'sync_state')}`,
  );
  const row = rows[0];
  return row ? { postIdField: row.post_id_field, filters: row.filters, cursorDate: row.cursor_date } : null;
}

export async function writeTarget(
  db: Queryable,
  schema: string,
  postIdField: string,
  filters: Filters,
): Promise<void> {
  await db.query(
    `INSERT INTO ${t(schema, 'sync_state')} (post_id_field, filters) VALUES ($1, $2)
     ON CONFLICT (singleton) DO UPDATE SET post_id_field = $1, filters = $2, cursor_date = NULL, updated_at = now()`,
    [postIdField, JSON.stringify(filters)],
  );
}

/**
 * Clears everything loaded into the schema: used when the user asks to reset after a filter change. The window
 * partitions are dropped, not emptied, so that a new window grid does not meet the old one.
 */
export async function clearTarget(db: Queryable, schema: string): Promise<void> {
  const parts = await db.query<{ name: string }>(
    `SELECT c.relname::text AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent IN (to_regclass($1), to_regclass($2))`,
    [t(schema, 'posts'), t(schema, 'post_custom_segments')],
  );
  const drops = parts.rows
    .map((r) => `DROP TABLE ${pg.escapeIdentifier(schema)}.${pg.escapeIdentifier(r.name)};`)
    .join(' ');
  // One query string without parameters runs as one transaction: the windows and their record go together.
  await db.query(`${drops} TRUNCATE ${t(schema, 'report_windows')}`);
}

export async function setCursor(db: Queryable, schema: string, date: string): Promise<void> {
  await db.query(
    `UPDATE ${t(schema, 'sync_state')} SET cursor_date = GREATEST(cursor_date, $1::date), updated_at = now()`,
    [date],
  );
}

const WINDOW_COLUMNS = `to_char(window_start, 'YYYY-MM-DD') AS start, to_char(window_end, 'YYYY-MM-DD') AS end,
  report_id, status, pages_staged, row_count::float8 AS row_count, attempts, last_error, updated_at`;

interface WindowRow {
  start: string;
  end: string;
  report_id: string | null;
  status: string;
  pages_staged: number;
  row_count: number | null;
  attempts: number;
  last_error: string | null;
  updated_at: Date;
}

function toWindowState(row: WindowRow): WindowState {
  return {
    start: row.start,
    end: row.end,
    reportId: row.report_id,
    status: row.status,
    pagesStaged: row.pages_staged,
    rowCount: row.row_count,
    attempts: row.attempts,
    lastError: row.last_error,
    updatedAt: row.updated_at,
  };
}

export async function listWindows(db: Queryable, schema: string): Promise<WindowState[]> {
  const { rows } = await db.query<WindowRow>(
    `SELECT ${WINDOW_COLUMNS} FROM ${t(schema, 'report_windows')} ORDER BY window_start, window_end`,
  );
  return rows.map(toWindowState);
}

/** The windows whose data is in the tables. */
export async function loadedWindows(db: Queryable, schema: string): Promise<Window[]> {
  const { rows } = await db.query<{ start: string; end: string }>(
    `SELECT to_char(window_start, 'YYYY-MM-DD') AS start, to_char(window_end, 'YYYY-MM-DD') AS end
       FROM ${t(schema, 'report_windows')} WHERE row_count IS NOT NULL ORDER BY window_start`,
  );
  return rows;
}

export async function readWindow(db: Queryable, schema: string, window: Window): Promise<WindowState | null> {
  const { rows } = await db.query<WindowRow>(
    `SELECT ${WINDOW_COLUMNS} FROM ${t(schema, 'report_windows')} WHERE window_start = $1 AND window_end = $2`,
    [window.start, window.end],
  );
  return rows[0] ? toWindowState(rows[0]) : null;
}

/** Starts an attempt on a window: counts it, and keeps any report id already created for it. */
export async function startAttempt(
  db: Queryable,
  schema: string,
  window: Window,
  filters: Filters,
): Promise<void> {
  await db.query(
    `INSERT INTO ${t(schema, 'report_windows')} (window_start, window_end, filters, status, attempts, started_at)
     VALUES ($1, $2, $3, 'extracting', 1, now())
     ON CONFLICT (window_start, window_end) DO UPDATE
       SET status = 'extracting', attempts = report_windows.attempts + 1, last_error = NULL,
           filters = $3, started_at = now(), updated_at = now()`,
    [window.start, window.end, JSON.stringify(filters)],
  );
}

/** Records the report created for a window, so that a restarted run polls it instead of creating another. */
export async function recordReport(
  db: Queryable,
  schema: string,
  window: Window,
  reportId: string | null,
): Promise<void> {
  await db.query(
    `UPDATE ${t(schema, 'report_windows')}
        SET report_id = $3, report_created_at = CASE WHEN $3::text IS NULL THEN NULL ELSE now() END, updated_at = now()
      WHERE window_start = $1 AND window_end = $2`,
    [window.start, window.end, reportId],
  );
}

/**
 * Ends an attempt that did not load: 'failed' after its last attempt, or 'pending' when the run was interrupted
 * (its report id is kept, for the next run to poll).
 */
export async function endAttempt(
  db: Queryable,
  schema: string,
  window: Window,
  outcome: 'failed' | 'pending',
  message: string,
): Promise<void> {
  await db.query(
    `UPDATE ${t(schema, 'report_windows')}
        SET status = $3, last_error = $4, finished_at = CASE WHEN $3 = 'failed' THEN now() ELSE finished_at END,
            updated_at = now()
      WHERE window_start = $1 AND window_end = $2`,
    [window.start, window.end, outcome, message],
  );
}
