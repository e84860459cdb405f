/*
 * The stages no window will resume, found and dropped. A window's stage (stage-progress.ts) is resumed only by an
 * attempt on that very window whose report is the stage's, while the report is new enough (window-attempt.ts). A
 * stage whose window's attempt ended or moved to another report, whose report is too old, or whose window is not
 * of the grid of a run over its dates, would stay forever: logged, indexed, a window's posts, and on a disk that
 * filled mid-load, the space the next load needs. A run drops them before it loads; `status` lists every stage.
 */
import type pg from 'pg';
import type { Window } from '../model/window.js';
import { withTransaction } from './database.js';
import { lockForTransaction, windowClaimHolders, windowLockKey } from './locks.js';
import { findOrganizationKey } from './organization-keys.js';
import * as queries from './queries.js';
import { orgTableName, type Scope } from './scope.js';
import { lockProgress } from './stage-progress.js';
import { qualified } from './table-names.js';

type Queryable = Pick<pg.ClientBase, 'query'>;

/** A window's stage tables as they are now. */
export interface StageTables {
  readonly start: string;
  readonly end: string;
  /** The report staged; null for tables no progress row names (left by an older version). */
  readonly reportId: string | null;
  readonly tables: readonly string[];
  /**
   * Their size on disk, indexes and TOAST included; null while a transaction of another session holds one of them
   * whole (a commit attaching it, a column added): reading it would wait for that.
   */
  readonly bytes: number | null;
  /** The same as PostgreSQL writes it (pg_size_pretty); null with bytes. */
  readonly size: string | null;
}

/** Why a stage is not resumed. */
export type StageEnd = 'another report' | 'report too old' | 'loaded since' | 'another grid' | 'no progress';

/** A stage dropped, and why. */
export interface DroppedStage extends StageTables {
  readonly why: StageEnd;
}

/** The run a sweep is made for: the grid of its windows over its dates. */
export interface SweepRun {
  readonly from: string;
  readonly to: string;
  /** Every window of the run's range (loaded or not): a stage of another window over these dates is never resumed. */
  readonly windows: readonly Window[];
  /** A report first received before this is not resumed (the run's start less the API's reuse period). */
  readonly receivedSince: Date;
}

/**
 * The organization's stage tables: its progress rows' and any table named as its stages are (the catalog pattern of
 * stageNames) that no progress row names. $1 the schema, $2 the name pattern, $3 the organization.
 */
function stageTables(schema: string): string {
  return `
WITH found AS (
  SELECT c.oid, c.relname::text AS name,
         EXISTS (SELECT 1 FROM pg_locks l
                  WHERE l.locktype = 'relation' AND l.relation = c.oid AND l.mode = 'AccessExclusiveLock'
                    AND l.granted AND l.pid <> pg_backend_pid()) AS busy
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
   WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') AND c.relname ~ $2
), sized AS (
  SELECT name, busy, CASE WHEN busy THEN NULL ELSE pg_total_relation_size(oid) END AS bytes FROM found
), named AS (
  -- A table dropped since the catalog was read has no size: it is gone.
  SELECT * FROM sized WHERE busy OR bytes IS NOT NULL
), progress AS (
  SELECT window_start, window_end, report_id, stage_posts, stage_segments
    FROM ${qualified(schema, 'stage_progress')} WHERE org = $3
), stages AS (
  SELECT to_char(p.window_start, 'YYYY-MM-DD') AS start, to_char(p.window_end, 'YYYY-MM-DD') AS end, p.report_id,
         array_remove(ARRAY[posts.name, segments.name], NULL) AS tables,
         CASE WHEN posts.busy OR segments.busy THEN NULL
              ELSE COALESCE(posts.bytes, 0) + COALESCE(segments.bytes, 0) END AS bytes
    FROM progress p
    LEFT JOIN named posts ON posts.name = p.stage_posts
    LEFT JOIN named segments ON segments.name = p.stage_segments
  UNION ALL
  SELECT to_char(to_date(m[1], 'YYYYMMDD'), 'YYYY-MM-DD'), to_char(to_date(m[2], 'YYYYMMDD'), 'YYYY-MM-DD'), NULL,
         array_agg(named.name ORDER BY named.name), CASE WHEN bool_or(named.busy) THEN NULL ELSE sum(named.bytes) END
    FROM named, regexp_match(named.name, $2) AS m
   WHERE named.name NOT IN (SELECT stage_posts FROM progress UNION ALL SELECT stage_segments FROM progress)
   GROUP BY m[1], m[2]
)
SELECT start, "end", report_id, tables, bytes::text AS bytes, pg_size_pretty(bytes) AS size FROM stages
 ORDER BY 1, 2`;
}

/**
 * Why each stage of the organization is not resumed (null: it may be). $1 the organization, $2 the time before
 * which a report first received is too old, $3/$4 the run's first and last date, $5/$6 its windows' starts and ends.
 * An attempt's report of unknown age is older than any load, as WindowAttempt takes it.
 */
function stageEnds(schema: string): string {
  const windows = qualified(schema, 'report_windows');
  return `
SELECT to_char(p.window_start, 'YYYY-MM-DD') AS start, to_char(p.window_end, 'YYYY-MM-DD') AS end,
       CASE
         WHEN w.attempt_report_id IS DISTINCT FROM p.report_id THEN 'another report'
         WHEN w.report_created_at <= $2 THEN 'report too old'
         WHEN EXISTS (SELECT 1 FROM ${windows} l
                       WHERE l.org = p.org AND l.row_count IS NOT NULL
                         AND l.window_start <= p.window_end AND l.window_end >= p.window_start
                         AND l.report_made_at > COALESCE(w.attempt_report_made_at, '-infinity'))
           THEN 'loaded since'
         WHEN p.window_start <= $4::date AND p.window_end >= $3::date
              AND (p.window_start, p.window_end) NOT IN (SELECT * FROM unnest($5::date[], $6::date[]))
           THEN 'another grid'
       END AS why
  FROM ${qualified(schema, 'stage_progress')} p
  LEFT JOIN ${windows} w ON w.org = p.org AND w.window_start = p.window_start AND w.window_end = p.window_end
 WHERE p.org = $1`;
}

/** The catalog pattern of the organization's stage tables (stageNames), capturing the window's two dates. */
function stagePattern(key: string): string {
  const prefix = orgTableName(key, 'stage', '').replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return `^${prefix}(\\d{8})_(\\d{8})_(posts|segments)$`;
}

/** The organization's stage tables now, by window, with their size. */
export async function listStages(db: Queryable, scope: Scope): Promise<StageTables[]> {
  const key = await findOrganizationKey(db, scope);
  // No key: nothing was ever staged for the organization.
  if (key === null) return [];
  const { rows } = await db.query<{
    start: string;
    end: string;
    report_id: string | null;
    tables: string[];
    bytes: string | null;
    size: string | null;
  }>(stageTables(scope.schema), [scope.schema, stagePattern(key), scope.org]);
  return rows
    .filter((row) => row.tables.length > 0)
    .map((row) => ({
      start: row.start,
      end: row.end,
      reportId: row.report_id,
      tables: row.tables,
      bytes: row.bytes === null ? null : Number(row.bytes),
      size: row.size,
    }));
}

/**
 * Drops the organization's stages no window will resume (StageEnd), each in a transaction of its own under its
 * window's lock (the lock openWindow takes), and only while no live process holds its window's claim: a run
 * working on the window is left its stage, whatever it is. Returns what was dropped.
 */
export async function dropStagesNotResumed(
  pool: pg.Pool,
  scope: Scope,
  run: SweepRun,
  signal?: AbortSignal,
): Promise<DroppedStage[]> {
  const { schema, org } = scope;
  const stages = await listStages(pool, scope);
  if (stages.length === 0) return [];
  const { rows } = await pool.query<{ start: string; end: string; why: StageEnd | null }>(stageEnds(schema), [
    org,
    run.receivedSince,
    run.from,
    run.to,
    run.windows.map((w) => w.start),
    run.windows.map((w) => w.end),
  ]);
  const ends = new Map(rows.map((row) => [`${row.start} ${row.end}`, row.why]));
  const dropped: DroppedStage[] = [];
  for (const stage of stages) {
    const why = stage.reportId === null ? 'no progress' : ends.get(`${stage.start} ${stage.end}`);
    if (why === null || why === undefined) continue;
    const window = { start: stage.start, end: stage.end };
    const done = await withTransaction(pool, signal, async (client) => {
      await lockForTransaction(client, windowLockKey(scope, window));
      if ((await windowClaimHolders(client, scope, [window]))[0] !== null) return false;
      // Under the lock, the stage is still the one judged: a run that opened it since has its own.
      const row = await lockProgress(client, scope, window);
      if ((row?.report_id ?? null) !== stage.reportId) return false;
      for (const table of stage.tables) await client.query(queries.dropTable(schema, table));
      if (row !== undefined)
        await client.query(queries.deleteProgress(schema), [window.start, window.end, org]);
      return true;
    });
    if (done) dropped.push({ ...stage, why });
  }
  return dropped;
}
