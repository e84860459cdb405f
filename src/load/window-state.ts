import type pg from 'pg';
import { databaseFault } from '../error-policy.js';
import { ALL_FIELDS, type FieldSelection } from '../model/field-selection.js';
import type { Filters } from '../model/filters.js';
import { DEFAULT_ORGANIZATION } from '../model/organization.js';
import type { LoadedWindow, Window } from '../model/window.js';
import { lockParentsForTransaction, PARENT_LOCK_WAIT_MS } from './locks.js';
import { type Scope, STATE_TABLES } from './scope.js';
import { qualified } from './table-names.js';

/**
 * The run state kept in PostgreSQL, each organization's apart (`org`, the scope's): the target's identity and
 * cursor (sync_state), per window its reports,
 * attempts and outcome (report_windows), and every report id a window received, with its age and what became of
 * it (window_reports). A window's data is loaded when its row has a row_count, from the report `report_id` made
 * no earlier than `report_made_at`, final up to `loaded_through`; `status` tells how the latest attempt went, so
 * a failed reload still counts as loaded with its previous contents and load time. `attempt_report_id` is the
 * report of the attempt in progress, the only one a run resumes: a finished attempt, loaded or failed, has none.
 * This is storage: WindowAttempt (window-attempt.ts) owns an attempt's changes and the data-age rule.
 */

type Queryable = Pick<pg.ClientBase, 'query'>;

/**
 * How the latest attempt on a window went: under way ('extracting', 'staging'), stopped by a signal or a rejected
 * token with its report kept ('pending'), over ('loaded', 'failed'), or replaced by windows of another size
 * ('superseded', left by earlier versions).
 */
export type AttemptStatus = 'pending' | 'extracting' | 'staging' | 'loaded' | 'failed' | 'superseded';

export interface SyncState {
  readonly postIdField: string;
  readonly filters: Filters;
  readonly cursorDate: string | null;
  /** The fields the schema was loaded with: every field for a schema from before selections (migration 004). */
  readonly fieldSelection: FieldSelection;
}

export interface WindowState extends Window {
  /** The report whose rows are loaded. */
  readonly reportId: string | null;
  /** The report of the attempt in progress (interrupted, killed, or being retried). */
  readonly attemptReportId: string | null;
  /** The last date the loaded rows were final for: the window's end unless it was loaded open. */
  readonly loadedThrough: string | null;
  readonly status: AttemptStatus;
  readonly pagesStaged: number;
  readonly rowCount: number | null;
  readonly attempts: number;
  readonly lastError: string | null;
  /** When the latest attempt ended (loaded or failed). */
  readonly finishedAt: Date | null;
  readonly updatedAt: Date;
  /** The loaded report was made at or after this (null: loaded before ages were recorded). */
  readonly reportMadeAt: Date | null;
  /** The same for the report of the attempt in progress. */
  readonly attemptReportMadeAt: Date | null;
  /** When the window first received the report of the attempt in progress. */
  readonly attemptReportReceivedAt: Date | null;
}

/**
 * $1 the default organization, $2 the scope's: whether row `w` (of a state table) is the organization's. What reads a schema before
 * its migrations (a run deciding its range, `status`, `plan`) may meet one from before migration 008, whose rows
 * have no org and are the default organization's; the state tables are small, so no index is missed.
 */
const ORG_OF_ROW = `COALESCE(to_jsonb(w) ->> 'org', $1) = $2`;

/** sync_state's row as to_jsonb writes it (a date column as YYYY-MM-DD). */
interface StoredSyncState {
  readonly post_id_field: string;
  readonly filters: Filters;
  readonly cursor_date: string | null;
  readonly field_selection?: FieldSelection | null;
}

export async function readTarget(db: Queryable, scope: Scope): Promise<SyncState | null> {
  // The whole row in one read, as JSON: a schema not yet migrated to 004 has no field_selection column, nor one
  // before 008 an org (its single row is the default organization's).
  const { rows } = await db.query<{ state: StoredSyncState }>(
    `SELECT to_jsonb(w) AS state FROM ${qualified(scope.schema, 'sync_state')} AS w WHERE ${ORG_OF_ROW}`,
    [DEFAULT_ORGANIZATION, scope.org],
  );
  const state = rows[0]?.state;
  if (state === undefined) return null;
  return {
    postIdField: state.post_id_field,
    filters: state.filters,
    cursorDate: state.cursor_date,
    fieldSelection: state.field_selection ?? ALL_FIELDS,
  };
}

/** The post id field the schema's tables were made for (any organization's target has it), or null: none yet. */
export async function schemaPostIdField(db: Queryable, schema: string): Promise<string | null> {
  const { rows } = await db.query<{ post_id_field: string }>(
    `SELECT post_id_field FROM ${qualified(schema, 'sync_state')} LIMIT 1`,
  );
  return rows[0]?.post_id_field ?? null;
}

/** The organizations with a target in the schema, by id (a schema from before migration 008: the default one). */
export async function listOrganizations(db: Queryable, schema: string): Promise<string[]> {
  const { rows } = await db.query<{ org: string }>(
    `SELECT DISTINCT COALESCE(to_jsonb(w) ->> 'org', $1) AS org FROM ${qualified(schema, 'sync_state')} w ORDER BY 1`,
    [DEFAULT_ORGANIZATION],
  );
  return rows.map((r) => r.org);
}

export async function writeTarget(
  db: Queryable,
  scope: Scope,
  postIdField: string,
  filters: Filters,
): Promise<void> {
  await db.query(
    `INSERT INTO ${qualified(scope.schema, 'sync_state')} (org, post_id_field, filters) VALUES ($3, $1, $2)
     ON CONFLICT (org) DO UPDATE SET post_id_field = $1, filters = $2, cursor_date = NULL, updated_at = now()`,
    [postIdField, JSON.stringify(filters), scope.org],
  );
}

/** What a reset removed. */
export interface ResetCounts {
  /** Windows that were loaded. */
  readonly windows: number;
  /** Their posts. */
  readonly posts: number;
}

/**
 * Starts the organization over (--reset): drops its partitions and stages, forgets its windows and reports, and
 * records its target anew without a cursor, counting the reset (resetCount); another organization's rows and
 * state are not touched. Run it inside one transaction, so that a failure leaves everything as it was. The
 * partitions are dropped, not emptied, so that the period now configured applies to every date again; each drop
 * takes its parent's ACCESS EXCLUSIVE lock, which every reader and writer of the parent queues behind, so the drops
 * come last and wait for the lock PARENT_LOCK_WAIT_MS at most (LOCK_NOT_AVAILABLE: the caller tries it all again later).
 */
export async function resetTarget(
  db: Queryable,
  scope: Scope,
  postIdField: string,
  filters: Filters,
): Promise<ResetCounts> {
  const { schema, org } = scope;
  await lockParentsForTransaction(db, schema);
  const counts = await db.query<{ windows: number; posts: string }>(
    `SELECT count(*)::int AS windows, COALESCE(sum(row_count), 0)::text AS posts
       FROM ${qualified(schema, 'report_windows')} WHERE org = $1 AND row_count IS NOT NULL`,
    [org],
  );
  const partitions = await organizationPartitions(db, scope);
  const stages = await db.query<{ name: string }>(
    `SELECT stage_posts AS name FROM ${qualified(schema, 'stage_progress')} WHERE org = $1
     UNION SELECT stage_segments FROM ${qualified(schema, 'stage_progress')} WHERE org = $1`,
    [org],
  );
  // Its target row stays, written anew below.
  for (const table of STATE_TABLES.filter((t) => t !== 'sync_state')) {
    await db.query(`DELETE FROM ${qualified(schema, table)} WHERE org = $1`, [org]);
  }
  await writeTarget(db, scope, postIdField, filters);
  await db.query(
    `UPDATE ${qualified(schema, 'sync_state')} SET reset_count = reset_count + 1 WHERE org = $1`,
    [org],
  );
  // Its partitions are emptied, not dropped: a TRUNCATE locks them alone, where a DROP needs the parents, which
  // other organizations' commits and a rename's moves hold (dropEmptyPartitions drops them after, if it can).
  // Waiting a moment at most, since every reader of the parents queues behind a waiting TRUNCATE (the caller tries
  // the reset again with backoff).
  if (partitions.length > 0) {
    const { rows: timeout } = await db.query<{ setting: string }>(
      `SELECT current_setting('lock_timeout') AS setting`,
    );
    await db.query(`SELECT set_config('lock_timeout', $1, true)`, [`${PARENT_LOCK_WAIT_MS}ms`]);
    await db.query(`TRUNCATE ${partitions.map((name) => qualified(schema, name)).join(', ')}`);
    await db.query(`SELECT set_config('lock_timeout', $1, true)`, [timeout[0]?.setting ?? '0']);
  }
  for (const { name } of stages.rows) {
    await db.query(`DROP TABLE IF EXISTS ${qualified(schema, name)}`);
  }
  const row = counts.rows[0];
  return { windows: row?.windows ?? 0, posts: Number(row?.posts ?? 0) };
}

/** The organization's partitions of posts and post_custom_segments: those whose bounds are its own. */
async function organizationPartitions(db: Queryable, scope: Scope): Promise<string[]> {
  const { rows } = await db.query<{ name: string }>(
    `SELECT c.relname::text AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent IN (to_regclass($1), to_regclass($2))
        AND starts_with(pg_get_expr(c.relpartbound, c.oid), 'FOR VALUES FROM (' || quote_literal($3::text) || ',')
      ORDER BY 1`,
    [qualified(scope.schema, 'posts'), qualified(scope.schema, 'post_custom_segments'), scope.org],
  );
  return rows.map((r) => r.name);
}

/**
 * Drops the organization's empty partitions (a reset's), each in a transaction of its own that waits for the
 * parents a moment at most (PARENT_LOCK_WAIT_MS), so that no reader or commit of another organization queues
 * behind it for longer. One the parents are too busy for stays, empty: the organization's next load writes into
 * it. Returns how many were dropped and kept. Call holding the organization alone.
 */
export async function dropEmptyPartitions(
  pool: pg.Pool,
  scope: Scope,
): Promise<{ readonly dropped: number; readonly kept: number }> {
  let dropped = 0;
  let kept = 0;
  for (const name of await organizationPartitions(pool, scope)) {
    const client = await pool.connect();
    let broken = false;
    try {
      await client.query('BEGIN');
      await client.query(`SELECT set_config('lock_timeout', $1, true)`, [`${PARENT_LOCK_WAIT_MS}ms`]);
      const table = qualified(scope.schema, name);
      const { rows } = await client.query<{ empty: boolean }>(
        `SELECT NOT EXISTS (SELECT 1 FROM ${table}) AS empty`,
      );
      if (rows[0]?.empty === true) {
        await client.query(`DROP TABLE ${table}`);
        dropped += 1;
      }
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {
        broken = true;
      });
      if (databaseFault(error) !== 'lock timeout') throw error;
      kept += 1;
    } finally {
      client.release(broken);
    }
  }
  return { dropped, kept };
}

/** Whether `schema` exists at all (a schema not set up yet exists once a run or `migrate` created it). */
export async function schemaExists(db: Queryable, schema: string): Promise<boolean> {
  const { rows } = await db.query<{ found: boolean }>('SELECT to_regnamespace($1) IS NOT NULL AS found', [
    schema,
  ]);
  return rows[0]?.found === true;
}

/** What a reset would remove, read before it does: the loaded windows, their posts and dates, and the cursor. */
export interface ResetPreview extends ResetCounts {
  /** The first and last date the loaded windows cover, or null when none is loaded. */
  readonly from: string | null;
  readonly to: string | null;
  readonly cursor: string | null;
}

/** What resetTarget would remove now; reads only. Throws UNDEFINED_TABLE when the schema is not set up. */
export async function previewReset(db: Queryable, scope: Scope): Promise<ResetPreview> {
  const { rows } = await db.query<{ windows: number; posts: string; from: string | null; to: string | null }>(
    `SELECT count(*)::int AS windows, COALESCE(sum(row_count), 0)::text AS posts,
            min(window_start)::text AS "from", max(window_end)::text AS "to"
       FROM ${qualified(scope.schema, 'report_windows')} w WHERE row_count IS NOT NULL AND ${ORG_OF_ROW}`,
    [DEFAULT_ORGANIZATION, scope.org],
  );
  const row = rows[0];
  const target = await readTarget(db, scope);
  return {
    windows: row?.windows ?? 0,
    posts: Number(row?.posts ?? 0),
    from: row?.from ?? null,
    to: row?.to ?? null,
    cursor: target?.cursorDate ?? null,
  };
}

/**
 * Whether every window of `windows` is loaded (by any process) from a report made at or after `madeSince`, or,
 * for a window not reloaded (`reloads` false), loaded complete: the age of the data decides, not when it was
 * committed.
 */
export async function loadedFrom(
  db: Queryable,
  scope: Scope,
  windows: readonly Window[],
  madeSince: Date,
  reloads: readonly boolean[],
): Promise<boolean> {
  const { rows } = await db.query<{ done: boolean }>(
    `SELECT count(*) = cardinality($1::date[]) AS done
       FROM ${qualified(scope.schema, 'report_windows')} w
       JOIN unnest($1::date[], $2::date[], $4::boolean[]) AS g(s, e, again)
         ON w.org = $5 AND w.window_start = g.s AND w.window_end = g.e
      WHERE w.status = 'loaded'
        AND (w.report_made_at >= $3 OR (NOT g.again AND w.loaded_through >= w.window_end))`,
    [windows.map((w) => w.start), windows.map((w) => w.end), madeSince, reloads, scope.org],
  );
  return rows[0]?.done === true;
}

/**
 * Whether a commit of these windows took effect: each is recorded loaded from the report its stage held, and its
 * stage is gone (the commit drops it in the same transaction; a window loaded before from the same report and
 * staged again still has its stage). Returns the posts the commit loaded, or null when it did not take effect.
 */
export async function committedAs(
  db: Queryable,
  scope: Scope,
  staged: readonly (Window & { readonly reportId: string })[],
): Promise<number | null> {
  const { rows } = await db.query<{ done: boolean; posts: number }>(
    `SELECT count(*) = cardinality($1::date[]) AS done, coalesce(sum(w.row_count), 0)::float8 AS posts
       FROM ${qualified(scope.schema, 'report_windows')} w
       JOIN unnest($1::date[], $2::date[], $3::text[]) AS g(s, e, report)
         ON w.org = $4 AND w.window_start = g.s AND w.window_end = g.e AND w.report_id = g.report
      WHERE w.status = 'loaded'
        AND NOT EXISTS (SELECT 1 FROM ${qualified(scope.schema, 'stage_progress')} p
                         WHERE p.org = w.org AND p.window_start = w.window_start AND p.window_end = w.window_end)`,
    [staged.map((w) => w.start), staged.map((w) => w.end), staged.map((w) => w.reportId), scope.org],
  );
  const row = rows[0];
  return row?.done === true ? row.posts : null;
}

/** The first date of the loaded history (null when nothing is loaded). Reads only columns of every version. */
export async function firstLoadedDate(db: Queryable, scope: Scope): Promise<string | null> {
  // Before migration 008 the table has no org: its rows are the default organization's.
  const { rows } = await db.query<{ first: string | null }>(
    `SELECT to_char(min(window_start), 'YYYY-MM-DD') AS first FROM ${qualified(scope.schema, 'report_windows')} w
      WHERE row_count IS NOT NULL AND ${ORG_OF_ROW}`,
    [DEFAULT_ORGANIZATION, scope.org],
  );
  return rows[0]?.first ?? null;
}

/**
 * Moves the sync cursor to `date` unless it is already further: syncs running at once end in any order, and none
 * may take back what another reached. Returns the cursor now stored.
 */
export async function advanceCursorTo(db: Queryable, scope: Scope, date: string): Promise<string | null> {
  const { rows } = await db.query<{ cursor: string | null }>(
    `UPDATE ${qualified(scope.schema, 'sync_state')}
        SET cursor_date = GREATEST(cursor_date, $1::date), updated_at = now()
      WHERE org = $2
      RETURNING to_char(cursor_date, 'YYYY-MM-DD') AS cursor`,
    [date, scope.org],
  );
  return rows[0]?.cursor ?? null;
}

/** The sync cursor stored now. */
export async function readCursor(db: Queryable, scope: Scope): Promise<string | null> {
  const { rows } = await db.query<{ cursor: string | null }>(
    `SELECT to_char(cursor_date, 'YYYY-MM-DD') AS cursor FROM ${qualified(scope.schema, 'sync_state')}
      WHERE org = $1`,
    [scope.org],
  );
  return rows[0]?.cursor ?? null;
}

const WINDOW_COLUMNS = `to_char(window_start, 'YYYY-MM-DD') AS start, to_char(window_end, 'YYYY-MM-DD') AS end,
  report_id, attempt_report_id, to_char(loaded_through, 'YYYY-MM-DD') AS loaded_through, status, pages_staged,
  row_count::float8 AS row_count, attempts, last_error, finished_at, updated_at, report_made_at,
  attempt_report_made_at, report_created_at AS attempt_report_received_at`;

interface WindowRow {
  start: string;
  end: string;
  report_id: string | null;
  attempt_report_id: string | null;
  loaded_through: string | null;
  status: AttemptStatus;
  pages_staged: number;
  row_count: number | null;
  attempts: number;
  last_error: string | null;
  finished_at: Date | null;
  updated_at: Date;
  report_made_at: Date | null;
  attempt_report_made_at: Date | null;
  attempt_report_received_at: Date | null;
}

function toWindowState(row: WindowRow): WindowState {
  return {
    start: row.start,
    end: row.end,
    reportId: row.report_id,
    attemptReportId: row.attempt_report_id,
    loadedThrough: row.loaded_through,
    status: row.status,
    pagesStaged: row.pages_staged,
    rowCount: row.row_count,
    attempts: row.attempts,
    lastError: row.last_error,
    finishedAt: row.finished_at,
    updatedAt: row.updated_at,
    reportMadeAt: row.report_made_at,
    attemptReportMadeAt: row.attempt_report_made_at,
    attemptReportReceivedAt: row.attempt_report_id === null ? null : row.attempt_report_received_at,
  };
}

export async function listWindows(db: Queryable, scope: Scope): Promise<WindowState[]> {
  const { rows } = await db.query<WindowRow>(
    `SELECT ${WINDOW_COLUMNS} FROM ${qualified(scope.schema, 'report_windows')} w WHERE ${ORG_OF_ROW}
      ORDER BY window_start, window_end`,
    [DEFAULT_ORGANIZATION, scope.org],
  );
  return rows.map(toWindowState);
}

/** The windows whose data is in the tables; `complete` unless loaded open (before their last date was over). */
export async function loadedWindows(db: Queryable, scope: Scope): Promise<LoadedWindow[]> {
  const { rows } = await db.query<LoadedWindow>(
    `SELECT to_char(window_start, 'YYYY-MM-DD') AS start, to_char(window_end, 'YYYY-MM-DD') AS end,
            COALESCE(loaded_through >= window_end, false) AS complete
       FROM ${qualified(scope.schema, 'report_windows')} w WHERE row_count IS NOT NULL AND ${ORG_OF_ROW}
      ORDER BY window_start`,
    [DEFAULT_ORGANIZATION, scope.org],
  );
  return rows;
}

export async function readWindow(db: Queryable, scope: Scope, window: Window): Promise<WindowState | null> {
  const { rows } = await db.query<WindowRow>(
    `SELECT ${WINDOW_COLUMNS} FROM ${qualified(scope.schema, 'report_windows')}
      WHERE org = $3 AND window_start = $1 AND window_end = $2`,
    [window.start, window.end, scope.org],
  );
  return rows[0] ? toWindowState(rows[0]) : null;
}

/** Starts an attempt on a window: counts it, and keeps the report of an attempt in progress, if any. */
export async function startAttempt(
  db: Queryable,
  scope: Scope,
  window: Window,
  filters: Filters,
): Promise<void> {
  await db.query(
    `INSERT INTO ${qualified(scope.schema, 'report_windows')}
       (org, window_start, window_end, filters, status, attempts, started_at)
     VALUES ($4, $1, $2, $3, 'extracting', 1, now())
     ON CONFLICT (org, window_start, window_end) DO UPDATE
       SET status = 'extracting', attempts = report_windows.attempts + 1, last_error = NULL,
           filters = $3, started_at = now(), updated_at = now()`,
    [window.start, window.end, JSON.stringify(filters), scope.org],
  );
}

/**
 * Records the report created for the attempt in progress, so that a restarted run polls it instead of creating
 * another (null: the report is gone, failed or too old, and the next attempt creates one), with its age.
 */
export async function recordReport(
  db: Queryable,
  scope: Scope,
  window: Window,
  report: KnownReport | null,
): Promise<void> {
  await db.query(
    `UPDATE ${qualified(scope.schema, 'report_windows')}
        SET attempt_report_id = $3, report_created_at = $4, attempt_report_made_at = $5, updated_at = now()
      WHERE org = $6 AND window_start = $1 AND window_end = $2`,
    [
      window.start,
      window.end,
      report?.reportId ?? null,
      report?.receivedAt ?? null,
      report?.madeAt ?? null,
      scope.org,
    ],
  );
}

/** What became of a report a window received. */
export type ReportOutcome = 'received' | 'loaded' | 'failed' | 'gone';

/** A report as a window knows it. */
export interface KnownReport {
  readonly reportId: string;
  /** When the window first received its id. */
  readonly receivedAt: Date;
  /** It was made at or after this: its first receipt less the API's reuse period. */
  readonly madeAt: Date;
  readonly outcome: ReportOutcome;
  /** False when the window had received this id before (the API handed the same report back). */
  readonly first: boolean;
}

interface KnownReportRow {
  received_at: Date;
  made_at: Date;
  outcome: ReportOutcome;
  first: boolean;
}

/**
 * Records that the window received `reportId` at `at`, unless it had before: the first receipt stays, and with
 * it the report's age. Returns the report as the window knows it.
 */
export async function receiveReport(
  db: Queryable,
  scope: Scope,
  window: Window,
  reportId: string,
  at: Date,
  reuseMs: number,
): Promise<KnownReport> {
  const table = qualified(scope.schema, 'window_reports');
  const { rows } = await db.query<KnownReportRow>(
    `WITH added AS (
       INSERT INTO ${table} (org, window_start, window_end, report_id, received_at, made_at)
       VALUES ($6, $1, $2, $3, $4, $4::timestamptz - $5 * interval '1 millisecond')
       ON CONFLICT DO NOTHING
       RETURNING received_at, made_at, outcome, true AS first
     )
     SELECT * FROM added
     UNION ALL
     SELECT received_at, made_at, outcome, false FROM ${table}
      WHERE org = $6 AND window_start = $1 AND window_end = $2 AND report_id = $3
        AND NOT EXISTS (SELECT 1 FROM added)`,
    [window.start, window.end, reportId, at, reuseMs, scope.org],
  );
  const row = rows[0]!;
  return {
    reportId,
    receivedAt: row.received_at,
    madeAt: row.made_at,
    outcome: row.outcome,
    first: row.first,
  };
}

/**
 * Records that a report the window received failed or is gone (handed back again, a failed one is not polled, a
 * gone one once), or, 'received', that one thought gone answered after all.
 */
export async function recordReportOutcome(
  db: Queryable,
  scope: Scope,
  window: Window,
  reportId: string,
  outcome: 'failed' | 'gone' | 'received',
): Promise<void> {
  await db.query(
    `UPDATE ${qualified(scope.schema, 'window_reports')} SET outcome = $4
      WHERE org = $5 AND window_start = $1 AND window_end = $2 AND report_id = $3`,
    [window.start, window.end, reportId, outcome, scope.org],
  );
}

/**
 * The loaded windows overlapping `window` (itself included) whose report was made after `madeAt` (null: of
 * unknown age, older than any known): rows that a report of that age must not replace.
 */
export async function newerLoads(
  db: Queryable,
  scope: Scope,
  window: Window,
  madeAt: Date | null,
): Promise<Window[]> {
  const { rows } = await db.query<Window>(
    `SELECT to_char(window_start, 'YYYY-MM-DD') AS start, to_char(window_end, 'YYYY-MM-DD') AS end
       FROM ${qualified(scope.schema, 'report_windows')}
      WHERE org = $4 AND row_count IS NOT NULL AND window_start <= $2 AND window_end >= $1
        AND report_made_at > COALESCE($3::timestamptz, '-infinity')
      ORDER BY window_start`,
    [window.start, window.end, madeAt, scope.org],
  );
  return rows;
}

/**
 * Ends an attempt that did not load: 'failed' after its last attempt (the attempt is over: the next run asks for
 * a new report), or 'pending' when the run was interrupted (its report is kept, for the next run to resume).
 * What is loaded, and when it was, stays as it was; a window another process loaded meanwhile is left as it is.
 */
export async function endAttempt(
  db: Queryable,
  scope: Scope,
  window: Window,
  outcome: 'failed' | 'pending',
  message: string,
): Promise<void> {
  await db.query(
    `UPDATE ${qualified(scope.schema, 'report_windows')}
        SET status = $3, last_error = $4,
            attempt_report_id = CASE WHEN $3 = 'failed' THEN NULL ELSE attempt_report_id END,
            attempt_report_made_at = CASE WHEN $3 = 'failed' THEN NULL ELSE attempt_report_made_at END,
            updated_at = now()
      WHERE org = $5 AND window_start = $1 AND window_end = $2 AND status <> 'loaded'`,
    [window.start, window.end, outcome, message, scope.org],
  );
}

/**
 * Records the report of a window's stage as its attempt's, creating the window's row (status 'staging') when it
 * has none; the loaded report stays until the commit replaces it. `filters` null: the target's, from sync_state.
 */
export async function recordStageReport(
  db: Queryable,
  scope: Scope,
  window: Window,
  reportId: string,
  filters: unknown,
): Promise<void> {
  const { schema } = scope;
  await db.query(
    `INSERT INTO ${qualified(schema, 'report_windows')}
       (org, window_start, window_end, filters, attempt_report_id, status, started_at)
     VALUES ($5, $1, $2,
             COALESCE($4::jsonb, (SELECT filters FROM ${qualified(schema, 'sync_state')} WHERE org = $5), '{}'::jsonb),
             $3, 'staging', now())
     ON CONFLICT (org, window_start, window_end) DO UPDATE
       SET attempt_report_id = EXCLUDED.attempt_report_id,
           attempt_report_made_at = CASE WHEN report_windows.attempt_report_id = EXCLUDED.attempt_report_id
                                         THEN report_windows.attempt_report_made_at END,
           report_created_at = CASE WHEN report_windows.attempt_report_id = EXCLUDED.attempt_report_id
                                    THEN report_windows.report_created_at END,
           updated_at = now()`,
    [window.start, window.end, reportId, filters === null ? null : JSON.stringify(filters), scope.org],
  );
}

/** Records how many pages of a window are staged. */
export async function recordPagesStaged(
  db: Queryable,
  scope: Scope,
  window: Window,
  pages: number,
): Promise<void> {
  await db.query(
    `UPDATE ${qualified(scope.schema, 'report_windows')} SET pages_staged = $3, updated_at = now()
      WHERE org = $4 AND window_start = $1 AND window_end = $2`,
    [window.start, window.end, pages, scope.org],
  );
}

/** What a commit loaded into a window. */
export interface LoadedReport {
  readonly reportId: string;
  readonly pages: number;
  readonly rows: number;
  /** The run's today (null: the current UTC date): no report makes it or a later day complete. */
  readonly today: string | null;
}

/**
 * Ends the attempt as loaded, with its report's age. The rows are final up to the window's end, or up to the day
 * before the report was made for a window that reaches that day (an open window): a day is complete only in a
 * report made after it ended, and never before the run's today (a report of unknown age, staged before ages were
 * recorded, counts as made today).
 */
export async function markLoaded(
  db: Queryable,
  scope: Scope,
  window: Window,
  loaded: LoadedReport,
): Promise<void> {
  const { schema } = scope;
  const reports = qualified(schema, 'window_reports');
  await db.query(
    `WITH made AS (
       UPDATE ${reports} SET outcome = 'loaded'
        WHERE org = $7 AND window_start = $1 AND window_end = $2 AND report_id = $3
       RETURNING made_at
     )
     INSERT INTO ${qualified(schema, 'report_windows')}
       (org, window_start, window_end, filters, report_id, status, pages_staged, row_count, loaded_through,
        finished_at, report_made_at)
     SELECT $7, $1, $2, COALESCE((SELECT filters FROM ${qualified(schema, 'sync_state')} WHERE org = $7), '{}'::jsonb),
            $3, 'loaded', $4, $5,
            LEAST($2::date, (made.made_at AT TIME ZONE 'UTC')::date - 1,
                  COALESCE($6::date, (now() AT TIME ZONE 'UTC')::date) - 1),
            now(), made.made_at
       FROM (SELECT 1) AS one LEFT JOIN made ON true
     ON CONFLICT (org, window_start, window_end) DO UPDATE
       SET status = 'loaded', report_id = EXCLUDED.report_id, attempt_report_id = NULL,
           attempt_report_made_at = NULL, report_made_at = EXCLUDED.report_made_at,
           pages_staged = EXCLUDED.pages_staged, row_count = EXCLUDED.row_count,
           loaded_through = EXCLUDED.loaded_through, finished_at = now(), updated_at = now()`,
    [window.start, window.end, loaded.reportId, loaded.pages, loaded.rows, loaded.today, scope.org],
  );
}

/** Forgets windows replaced by windows of another size. */
export async function forgetWindows(db: Queryable, scope: Scope, windows: readonly Window[]): Promise<void> {
  if (windows.length === 0) return;
  await db.query(
    `DELETE FROM ${qualified(scope.schema, 'report_windows')} w
      USING unnest($1::date[], $2::date[]) AS o(s, e)
      WHERE w.org = $3 AND w.window_start = o.s AND w.window_end = o.e`,
    [windows.map((w) => w.start), windows.map((w) => w.end), scope.org],
  );
}
