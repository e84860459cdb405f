/*
 * The loader's SQL. Identifiers (schema, columns, stage tables) only ever pass through pg.escapeIdentifier;
 * values are always parameters. Column types come from a closed list (ColumnType) or from the catalog.
 */
import pg from 'pg';
import type { ColumnType } from './field-types.js';
import { qualified } from './table-names.js';

/**
 * What a session reads of its backend when it connects: its pid, and, as the seconds since the epoch in text (exact,
 * whatever the DateStyle or TimeZone of the session reading it back), when the backend and its server started.
 */
export const readOwnBackend = `SELECT pg_backend_pid() AS pid,
       (SELECT extract(epoch FROM backend_start)::text FROM pg_stat_activity WHERE pid = pg_backend_pid()) AS started,
       extract(epoch FROM pg_postmaster_start_time())::text AS server_started`;

/**
 * $1 the backend's pid, $2 and $3 when it and its server started (readOwnBackend): stops the statement it runs (an
 * aborted run's), or the whole session, only while that pid is still that backend on that server (a pid is reused
 * once its backend ended, and after a failover the same name reaches another server); no row when it is not.
 */
const ownBackend = `FROM pg_stat_activity
 WHERE pid = $1 AND extract(epoch FROM backend_start)::text = $2
   AND extract(epoch FROM pg_postmaster_start_time())::text = $3`;
export const cancelOwnBackend = `SELECT pg_cancel_backend(pid) AS signalled ${ownBackend}`;
export const terminateOwnBackend = `SELECT pg_terminate_backend(pid) AS signalled ${ownBackend}`;

const SQL_TYPES: Record<Exclude<ColumnType, 'other'>, string> = {
  bigint: 'bigint',
  numeric: 'numeric',
  text: 'text',
  boolean: 'boolean',
  jsonb: 'jsonb',
  date: 'date',
};

/** The SQL spelling of a column type; `other` keeps the catalog's format_type text. */
export function sqlType(type: ColumnType, catalogType: string): string {
  return type === 'other' ? catalogType : SQL_TYPES[type];
}

/** $1: the qualified posts table. Registry rows, then every column of posts with a null field. */
export function readRegistry(schema: string): string {
  return `SELECT f.field, f.column_name, format_type(a.atttypid, a.atttypmod) AS sql_type, f.org
            FROM ${qualified(schema, 'field_columns')} f
            LEFT JOIN pg_attribute a
              ON a.attrelid = to_regclass($1) AND a.attname = f.column_name AND a.attnum > 0 AND NOT a.attisdropped
          UNION ALL
          SELECT NULL, a.attname::text, NULL, NULL
            FROM pg_attribute a
           WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped`;
}

/** $1: the qualified table. Its columns and types. */
export const readColumns = `SELECT a.attname::text AS name, format_type(a.atttypid, a.atttypmod) AS sql_type
  FROM pg_attribute a WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`;

export function alterColumnType(schema: string, table: string, column: string, type: string): string {
  return `ALTER TABLE ${qualified(schema, table)} ALTER COLUMN ${pg.escapeIdentifier(column)} TYPE ${type} USING ${pg.escapeIdentifier(column)}::${type}`;
}

/** Adds every column in one statement: one lock of the table and its partitions, one catalog invalidation. */
export function addColumns(
  schema: string,
  table: string,
  columns: readonly { readonly column: string; readonly type: string }[],
): string {
  const clauses = columns.map((c) => `ADD COLUMN ${pg.escapeIdentifier(c.column)} ${c.type}`);
  return `ALTER TABLE ${qualified(schema, table)} ${clauses.join(', ')}`;
}

/** $1 fields, $2 their columns (text arrays of the same length), $3 the organization whose page added them. */
export function registerFields(schema: string): string {
  return `INSERT INTO ${qualified(schema, 'field_columns')} (field, column_name, org)
          SELECT f, c, $3 FROM unnest($1::text[], $2::text[]) AS u(f, c)`;
}

/** $1 the qualified table: its columns, dropped ones included, as PostgreSQL counts them against its limit. */
export const columnSlots = `SELECT count(*)::int AS n FROM pg_attribute WHERE attrelid = to_regclass($1) AND attnum > 0`;

// ---- stage -------------------------------------------------------------------------------------------------

/**
 * A table statement followed by enabling row-level security on the table, with no policy: every partition and
 * stage is made through it. A role that a broad grant (ON ALL TABLES IN SCHEMA, default privileges) gave SELECT on
 * it reads no row by its name, while reads through the parents follow the parents' policies alone; the connector's
 * role owns the table and is not filtered. A rename keeps it; a widening's copies are made so too.
 */
function secured(schema: string, table: string, create: string): string {
  return `${create};\nALTER TABLE ${qualified(schema, table)} ENABLE ROW LEVEL SECURITY`;
}

/** What a stage is created for: its window and report fill the connector's columns by default. */
export interface StageOf {
  readonly org: string;
  readonly postId: string;
  readonly start: string;
  readonly end: string;
  readonly reportId: string;
}

/**
 * A window's posts stage: the connector's columns of posts plus `_seq`, the occurrence order within the report.
 * UNLOGGED: its rows are written once more, with WAL, by the commit; a server crash empties the stage together with
 * its progress (stage_progress is UNLOGGED too), so a resume never trusts pages the crash lost.
 */
export function createStagePosts(schema: string, table: string, of: StageOf): string {
  return secured(
    schema,
    table,
    `CREATE UNLOGGED TABLE ${qualified(schema, table)} (${stageKey(of)},
            _window_end date NOT NULL DEFAULT ${pg.escapeLiteral(of.end)},
            _report_id text NOT NULL DEFAULT ${pg.escapeLiteral(of.reportId)},
            _loaded_at timestamptz NOT NULL DEFAULT now())`,
  );
}

export function createStageSegments(schema: string, table: string, of: StageOf): string {
  return secured(
    schema,
    table,
    `CREATE UNLOGGED TABLE ${qualified(schema, table)} (${stageKey(of)}, name text NOT NULL, value text NOT NULL)`,
  );
}

/** The period a keyed stage is made for: its organization and dates ([from, to); null: unbounded). */
export interface StagePeriod {
  readonly org: string;
  readonly from: string | null;
  readonly to: string | null;
}

/**
 * The posts stage of a window that opens a new period: a table that can become the period's partition as it is.
 * Logged, since it becomes one; keyed as a partition is, so that the key's entries are written page by page while
 * later pages download, not all at the commit, and a post id repeated within the report is found at its page (its
 * post id index is built at the attach: createStagePostIdIndex); with the period's CHECK, so that the attach skips
 * its scan. `_seq` stays for the commit that cannot attach it and inserts its rows instead (keyedStage, commit.ts).
 */
export function createKeyedStagePosts(
  schema: string,
  table: string,
  of: StageOf,
  period: StagePeriod,
): string {
  const id = pg.escapeIdentifier(of.postId);
  return secured(
    schema,
    table,
    `CREATE TABLE ${qualified(schema, table)} (${stageKey(of)},
            _window_end date NOT NULL DEFAULT ${pg.escapeLiteral(of.end)},
            _report_id text NOT NULL DEFAULT ${pg.escapeLiteral(of.reportId)},
            _loaded_at timestamptz NOT NULL DEFAULT now(),
            CONSTRAINT ${pg.escapeIdentifier(stagePeriodCheck(table))} CHECK (${periodTerms(period)}),
            CONSTRAINT ${pg.escapeIdentifier(stageKeyIndex(table))} PRIMARY KEY (_org, _window_start, ${id}))`,
  );
}

/** The segments stage to createKeyedStagePosts: keyed as migration 009 keys post_custom_segments. */
export function createKeyedStageSegments(
  schema: string,
  table: string,
  of: StageOf,
  period: StagePeriod,
): string {
  return secured(
    schema,
    table,
    `CREATE TABLE ${qualified(schema, table)} (${stageKey(of)}, name text NOT NULL, value text NOT NULL,
            CONSTRAINT ${pg.escapeIdentifier(stagePeriodCheck(table))} CHECK (${periodTerms(period)}))`,
  );
}

export function createStageSegmentsKey(schema: string, table: string, postId: string): string {
  return `CREATE UNIQUE INDEX ${pg.escapeIdentifier(stageKeyIndex(table))} ON ${qualified(schema, table)}
            (_org, _window_start, ${pg.escapeIdentifier(postId)}, hashtextextended(name, 0), hashtextextended(value, 0))`;
}

/**
 * The index on the post id alone that both tables' partitions have (migration 005), built on a keyed stage at its
 * attach: built once over the window's rows, it costs a fraction of its entries written row by row as the pages
 * come. A stage staged by an earlier version has it already.
 */
export function createStagePostIdIndex(schema: string, table: string, postId: string): string {
  return `CREATE INDEX IF NOT EXISTS ${pg.escapeIdentifier(stagePostIdIndex(table))} ON ${qualified(schema, table)} (${pg.escapeIdentifier(postId)})`;
}

/** The names of a keyed stage's key (an index; for posts also its constraint), post id index and CHECK. */
export const stageKeyIndex = (table: string): string => `${table}_key`;
export const stagePostIdIndex = (table: string): string => `${table}_post_id`;
export const stagePeriodCheck = (table: string): string => `${table}_period`;

/** Drops a keyed stage's key and indexes: it takes a report that repeats a post id, as any stage does. */
export function dropStageKeys(schema: string, posts: string, segments: string): string {
  return `ALTER TABLE ${qualified(schema, posts)} DROP CONSTRAINT IF EXISTS ${pg.escapeIdentifier(stageKeyIndex(posts))};
          DROP INDEX IF EXISTS ${qualified(schema, stagePostIdIndex(posts))}, ${qualified(schema, stageKeyIndex(segments))},
            ${qualified(schema, stagePostIdIndex(segments))}`;
}

/**
 * $1, $2 a period's dates (null: unbounded), $3 the schema, $4 the organization: whether a window of that
 * organization's period has a keyed stage open. Only one of them can be attached: another is staged as any window.
 */
export function keyedStageOpen(schema: string): string {
  return `SELECT EXISTS (SELECT 1 FROM ${qualified(schema, 'stage_progress')}
                          WHERE org = $4 AND ($1::date IS NULL OR window_start >= $1::date)
                            AND ($2::date IS NULL OR window_start < $2::date)
                            AND to_regclass(format('%I.%I', $3::text, stage_posts || '_key')) IS NOT NULL) AS open`;
}

/** $1 a qualified table: its columns that have a default or are NOT NULL. */
export const columnsWithDefaults = `SELECT a.attname::text AS name FROM pg_attribute a
  WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped AND (a.atthasdef OR a.attnotnull)`;

/** $1 the qualified index: whether it exists. */
export const indexExists = 'SELECT to_regclass($1) IS NOT NULL AS exists';

// The columns both stages begin with: the organization and window fill their columns by default.
function stageKey(of: StageOf): string {
  return `_seq bigint NOT NULL, ${pg.escapeIdentifier(of.postId)} bigint NOT NULL,
            _window_start date NOT NULL DEFAULT ${pg.escapeLiteral(of.start)},
            _org text NOT NULL DEFAULT ${pg.escapeLiteral(of.org)}`;
}

/** $1, $2 the qualified stage tables: their names, or null for a table that does not exist. */
export const stageTablesExist = 'SELECT to_regclass($1)::text AS posts, to_regclass($2)::text AS segments';

// A step of a transaction that may fail and be tried again without losing the rest.
export const savepoint = (name: string): string => `SAVEPOINT ${pg.escapeIdentifier(name)}`;
export const rollbackToSavepoint = (name: string): string =>
  `ROLLBACK TO SAVEPOINT ${pg.escapeIdentifier(name)}`;
export const releaseSavepoint = (name: string): string => `RELEASE SAVEPOINT ${pg.escapeIdentifier(name)}`;

export function dropTable(schema: string, table: string): string {
  return `DROP TABLE IF EXISTS ${qualified(schema, table)}`;
}

export function copyStagePosts(
  schema: string,
  table: string,
  postId: string,
  columns: readonly string[],
): string {
  const list = ['_seq', postId, ...columns].map((c) => pg.escapeIdentifier(c)).join(', ');
  return `COPY ${qualified(schema, table)} (${list}) FROM STDIN`;
}

export function copyStageSegments(schema: string, table: string, postId: string): string {
  return `COPY ${qualified(schema, table)} (_seq, ${pg.escapeIdentifier(postId)}, name, value) FROM STDIN`;
}

/** $1 start, $2 end, $3 the organization: the window's progress, locked. */
export function readProgress(schema: string): string {
  return `SELECT report_id, pages_staged, next_page, rows_staged::text AS rows_staged, stage_posts, stage_segments
            FROM ${qualified(schema, 'stage_progress')}
           WHERE org = $3 AND window_start = $1 AND window_end = $2 FOR UPDATE`;
}

/**
 * readProgress with the columns of the window's posts stage ($3 the schema, $4 the organization), as [name, SQL
 * type] pairs: a page's
 * transaction reads both in one round trip. While a page is staged, the next one is decoded on the same thread,
 * and each round trip of the page's transaction waits for that work to yield.
 */
export function readProgressForPage(schema: string): string {
  return `SELECT report_id, pages_staged, next_page, rows_staged::text AS rows_staged, stage_posts, stage_segments,
                 (SELECT coalesce(json_agg(json_build_array(a.attname::text, format_type(a.atttypid, a.atttypmod))
                                           ORDER BY a.attnum), '[]')
                    FROM pg_attribute a
                   WHERE a.attrelid = to_regclass(format('%I.%I', $3::text, p.stage_posts))
                     AND a.attnum > 0 AND NOT a.attisdropped) AS stage_columns
            FROM ${qualified(schema, 'stage_progress')} p
           WHERE org = $4 AND window_start = $1 AND window_end = $2 FOR UPDATE OF p`;
}

/**
 * $1 start, $2 end, $3 pages staged, $4 next page token, $5 the page's rows, $6 the organization: a staged page's
 * progress, in stage_progress and in report_windows, in one statement.
 */
export function advancePage(schema: string): string {
  return `WITH advanced AS (
            UPDATE ${qualified(schema, 'stage_progress')}
               SET pages_staged = $3, next_page = $4, rows_staged = rows_staged + $5, updated_at = now()
             WHERE org = $6 AND window_start = $1 AND window_end = $2)
          UPDATE ${qualified(schema, 'report_windows')} SET pages_staged = $3, updated_at = now()
           WHERE org = $6 AND window_start = $1 AND window_end = $2`;
}

/**
 * advancePage, only for the page next in line of the stage the writer knows ($7 its report id, $8 its posts
 * stage): 1 row when the page was next, else none (see writePage).
 */
export function advancePageInLine(schema: string): string {
  return `WITH advanced AS (
            UPDATE ${qualified(schema, 'stage_progress')}
               SET pages_staged = $3, next_page = $4, rows_staged = rows_staged + $5, updated_at = now()
             WHERE org = $6 AND window_start = $1 AND window_end = $2 AND pages_staged = $3 - 1
               AND next_page IS NOT NULL AND report_id = $7 AND stage_posts = $8
            RETURNING 1)
          UPDATE ${qualified(schema, 'report_windows')} SET pages_staged = $3, updated_at = now()
           WHERE org = $6 AND window_start = $1 AND window_end = $2 AND EXISTS (SELECT FROM advanced)`;
}

/** $1 start, $2 end, $3 report id, $4 stage posts, $5 stage segments, $6 the organization. */
export function resetProgress(schema: string): string {
  return `INSERT INTO ${qualified(schema, 'stage_progress')}
            (org, window_start, window_end, report_id, pages_staged, next_page, rows_staged, stage_posts, stage_segments)
          VALUES ($6, $1, $2, $3, 0, NULL, 0, $4, $5)
          ON CONFLICT (org, window_start, window_end) DO UPDATE
            SET report_id = EXCLUDED.report_id, pages_staged = 0, next_page = NULL, rows_staged = 0,
                stage_posts = EXCLUDED.stage_posts, stage_segments = EXCLUDED.stage_segments, updated_at = now()`;
}

/** $1 start, $2 end, $3 the organization. */
export function deleteProgress(schema: string): string {
  return `DELETE FROM ${qualified(schema, 'stage_progress')} WHERE org = $3 AND window_start = $1 AND window_end = $2`;
}

// ---- commit ------------------------------------------------------------------------------------------------

/**
 * $1 new starts, $2 new ends, $3 the organization: every loaded window of the organization (report_windows,
 * written in the same transaction as its rows) whose dates overlap the new windows, and whether the new windows
 * cover it entirely.
 */
export function replacedWindows(schema: string): string {
  return `WITH new AS (
            SELECT range_agg(daterange(s, e, '[]')) AS u FROM unnest($1::date[], $2::date[]) AS t(s, e)
          )
          SELECT w.window_start::text AS start, w.window_end::text AS "end",
                 daterange(w.window_start, w.window_end, '[]') <@ new.u AS covered
            FROM ${qualified(schema, 'report_windows')} w, new
           WHERE w.org = $3 AND w.row_count IS NOT NULL AND daterange(w.window_start, w.window_end, '[]') && new.u
           ORDER BY w.window_start`;
}

/**
 * $1 starts, $2 ends, $3 report ids of the windows committed, $4 the organization: each loaded window of the
 * organization one of them overlaps whose report was made after that one's (a report of unknown age is older than
 * any known).
 */
export function newerLoadedWindows(schema: string): string {
  return `SELECT to_char(n.s, 'YYYY-MM-DD') AS start, to_char(n.e, 'YYYY-MM-DD') AS "end", n.r AS report_id,
                 to_char(w.window_start, 'YYYY-MM-DD') || '..' || to_char(w.window_end, 'YYYY-MM-DD') AS newer
            FROM unnest($1::date[], $2::date[], $3::text[]) AS n(s, e, r)
            LEFT JOIN ${qualified(schema, 'window_reports')} k
              ON k.org = $4 AND k.window_start = n.s AND k.window_end = n.e AND k.report_id = n.r
            JOIN ${qualified(schema, 'report_windows')} w
              ON w.org = $4 AND w.row_count IS NOT NULL AND w.window_start <= n.e AND w.window_end >= n.s
             AND w.report_made_at > COALESCE(k.made_at, '-infinity')
           ORDER BY n.s, w.window_start`;
}

/** $1 the organization, $2 window starts: the rows of those windows (a window's start names it). */
export function deleteWindowRows(schema: string, table: string): string {
  return `DELETE FROM ${qualified(schema, table)} WHERE _org = $1 AND _window_start = ANY($2::date[])`;
}

/**
 * A stage's rows into their table, column by name, each cast to the table's type (a column widened since the
 * page was staged, or a hand-set type staged as text). `columns`: name and the table's SQL type (from the
 * catalog).
 */
export function insertFromStage(
  schema: string,
  table: string,
  stage: string,
  columns: readonly (readonly [string, string])[],
): string {
  const names = columns.map(([name]) => pg.escapeIdentifier(name)).join(', ');
  const values = columns.map(([name, type]) => `${pg.escapeIdentifier(name)}::${type}`).join(', ');
  return `INSERT INTO ${qualified(schema, table)} (${names})
          SELECT ${values} FROM ${qualified(schema, stage)}`;
}

/**
 * $1 the organization, $2 the window's start: deletes the window's segment values its stage does not hold. With
 * insertSegmentsNotLoaded, a reload writes only the values that changed: deleting every value and inserting it
 * again costs a dead row, a new row and a unique check against the dead one for each (2-3 times as long).
 */
export function deleteSegmentsNotStaged(schema: string, stage: string, postId: string): string {
  const id = pg.escapeIdentifier(postId);
  return `DELETE FROM ${qualified(schema, 'post_custom_segments')} s
           WHERE s._org = $1 AND s._window_start = $2
             AND NOT EXISTS (SELECT 1 FROM ${qualified(schema, stage)} g
                              WHERE g.${id} = s.${id} AND g.name = s.name AND g.value = s.value)`;
}

/**
 * $1 the organization, $2 the window's start: inserts the stage's segment values the window does not hold yet,
 * as insertFromStage does (`columns`: name and the table's SQL type), in the key's order.
 */
export function insertSegmentsNotLoaded(
  schema: string,
  stage: string,
  postId: string,
  columns: readonly (readonly [string, string])[],
): string {
  const id = pg.escapeIdentifier(postId);
  const names = columns.map(([name]) => pg.escapeIdentifier(name)).join(', ');
  const values = columns.map(([name, type]) => `g.${pg.escapeIdentifier(name)}::${type}`).join(', ');
  return `INSERT INTO ${qualified(schema, 'post_custom_segments')} (${names})
          SELECT ${values} FROM ${qualified(schema, stage)} g
           WHERE NOT EXISTS (SELECT 1 FROM ${qualified(schema, 'post_custom_segments')} s
                              WHERE s._org = $1 AND s._window_start = $2
                                AND s.${id} = g.${id} AND s.name = g.name AND s.value = g.value)
           ORDER BY g.${id}, g.name, g.value`;
}

/** The memory a sort of the commit may take before it spills to disk (PostgreSQL's default is 4 MB). */
export const commitSortMemory = "SET LOCAL work_mem = '64MB'";

/**
 * Only when the stage's posts do not fit the key: the last occurrence of a post id in the report wins (no later
 * _seq for its id), since the API should not repeat a post, and if it does the later page is the fresher one.
 */
export function deleteEarlierOccurrences(schema: string, stage: string, postId: string): string {
  return `DELETE FROM ${qualified(schema, stage)} s
           WHERE EXISTS (SELECT 1 FROM ${qualified(schema, stage)} l
                          WHERE l.${pg.escapeIdentifier(postId)} = s.${pg.escapeIdentifier(postId)} AND l._seq > s._seq)`;
}

/** The segments of occurrences deleted by deleteEarlierOccurrences. */
export function deleteOrphanSegments(
  schema: string,
  stageSegments: string,
  stagePosts: string,
  postId: string,
): string {
  return `DELETE FROM ${qualified(schema, stageSegments)} g
           WHERE NOT EXISTS (SELECT 1 FROM ${qualified(schema, stagePosts)} p
                              WHERE p.${pg.escapeIdentifier(postId)} = g.${pg.escapeIdentifier(postId)} AND p._seq = g._seq)`;
}

/** $1 the qualified table: whether it exists. */
export const tableExists = 'SELECT to_regclass($1) IS NOT NULL AS exists';

/**
 * $1 qualified tables: whether rows written into a new table and attached under them after would escape someone
 * watching them: a trigger of their own (an operator's), or any publication (logical replication sends a row as
 * the table it was written to was published then).
 */
export const tablesWatched = `SELECT EXISTS (SELECT 1 FROM pg_publication)
    OR EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = ANY($1::text[]::regclass[]) AND NOT tgisinternal) AS watched`;

/** $1 qualified tables: how many of them exist. */
export const tablesFound = 'SELECT count(to_regclass(t))::int AS found FROM unnest($1::text[]) AS t';

/** Attaches a period partition for one organization; null bounds are MINVALUE / MAXVALUE. */
export function attachRange(
  schema: string,
  parent: string,
  table: string,
  org: string,
  from: string | null,
  to: string | null,
): string {
  const bound = (date: string | null, unbounded: string) =>
    `(${pg.escapeLiteral(org)}, ${date === null ? unbounded : pg.escapeLiteral(date)})`;
  return `ALTER TABLE ${qualified(schema, parent)} ATTACH PARTITION ${qualified(schema, table)}
            FOR VALUES FROM ${bound(from, 'MINVALUE')} TO ${bound(to, 'MAXVALUE')}`;
}

/**
 * A staged page needs no fsync of its own: with asynchronous commit a server crash can lose the last pages'
 * transactions, but always whole, so the stage and its progress row still agree, and those pages are read again.
 */
export const stagingPageOpeners = ['BEGIN', 'SET LOCAL synchronous_commit = off'] as const;

/** stagingPageOpeners in one round trip (withTransaction's `begin`); the pipeline sends them one a message. */
export const beginStagingPage = stagingPageOpeners.join('; ');

// ---- column retype ----------------------------------------------------------------------------------------

/**
 * A period partition's dates as a CHECK named `name` (null bounds: unbounded), which implies its partition
 * constraint, so that ATTACH PARTITION skips its validating scan.
 */
export function addPeriodCheck(
  schema: string,
  table: string,
  name: string,
  org: string,
  from: string | null,
  to: string | null,
): string {
  return `ALTER TABLE ${qualified(schema, table)} ADD CONSTRAINT ${pg.escapeIdentifier(name)} CHECK (${periodTerms({ org, from, to })})`;
}

function periodTerms({ org, from, to }: StagePeriod): string {
  const terms = [`_org = ${pg.escapeLiteral(org)}`];
  if (from !== null) terms.push(`_window_start >= ${pg.escapeLiteral(from)}::date`);
  if (to !== null) terms.push(`_window_start < ${pg.escapeLiteral(to)}::date`);
  return terms.join(' AND ');
}

/**
 * Makes a keyed stage its period's partition, before the attach: `_seq` dropped, the defaults of the window's
 * columns dropped (the parents have none), renamed with its key and post id index as the period's partition.
 */
export function stageIntoPartition(
  schema: string,
  stage: string,
  partition: string,
  windowColumns: readonly string[],
  key: { readonly constraint: boolean },
): string {
  const defaults = windowColumns.map((c) => `ALTER COLUMN ${pg.escapeIdentifier(c)} DROP DEFAULT`);
  const renameKey = key.constraint
    ? `ALTER TABLE ${qualified(schema, partition)} RENAME CONSTRAINT ${pg.escapeIdentifier(stageKeyIndex(stage))} TO ${pg.escapeIdentifier(`${partition}_pkey`)}`
    : `ALTER INDEX ${qualified(schema, stageKeyIndex(stage))} RENAME TO ${pg.escapeIdentifier(`${partition}_key`)}`;
  return `ALTER TABLE ${qualified(schema, stage)} DROP COLUMN _seq, ${defaults.join(', ')};
          ALTER TABLE ${qualified(schema, stage)} RENAME TO ${pg.escapeIdentifier(partition)};
          ${renameKey};
          ALTER INDEX ${qualified(schema, stagePostIdIndex(stage))} RENAME TO ${pg.escapeIdentifier(`${partition}_post_id_idx`)}`;
}

export function dropConstraint(schema: string, table: string, name: string): string {
  return `ALTER TABLE ${qualified(schema, table)} DROP CONSTRAINT ${pg.escapeIdentifier(name)}`;
}

/** Waits (up to the session's lock_timeout) for readers of the table to finish. */
export function lockExclusive(schema: string, table: string): string {
  return `LOCK TABLE ${qualified(schema, table)} IN ACCESS EXCLUSIVE MODE`;
}

/** Building the key after the rows are in is cheaper than maintaining it row by row. Named `<table>_pkey`. */
export function addPrimaryKey(schema: string, table: string, columns: readonly string[]): string {
  return `ALTER TABLE ${qualified(schema, table)} ADD CONSTRAINT ${pg.escapeIdentifier(`${table}_pkey`)} PRIMARY KEY (${columns.map((c) => pg.escapeIdentifier(c)).join(', ')})`;
}

/** The index of one column, named `<table>_<column>_idx` as PostgreSQL names a partition's copy of it. */
export function createIndex(schema: string, table: string, column: string): string {
  return `CREATE INDEX ${pg.escapeIdentifier(indexName(table, column))} ON ${qualified(schema, table)} (${pg.escapeIdentifier(column)})`;
}

export function indexName(table: string, column: string): string {
  return `${table}_${column}_idx`;
}

export function renameTable(schema: string, table: string, to: string): string {
  return `ALTER TABLE ${qualified(schema, table)} RENAME TO ${pg.escapeIdentifier(to)}`;
}

export function renameIndex(schema: string, index: string, to: string): string {
  return `ALTER INDEX ${qualified(schema, index)} RENAME TO ${pg.escapeIdentifier(to)}`;
}

/**
 * $1 the qualified partitioned table: its partitions, with their bounds (`FOR VALUES …`) and their partition
 * constraint as a boolean expression, as the catalog writes them. A partition another session dropped since the
 * statement's snapshot is still in the snapshot's pg_inherits, but the catalog functions find no relation and answer
 * NULL: it is left out (another organization's, dropped by its reset or rename while this one reads).
 */
export const partitionsOf = `SELECT name, bound, constraint_def FROM (
    SELECT c.relname::text AS name, pg_get_expr(c.relpartbound, c.oid) AS bound,
           pg_get_partition_constraintdef(c.oid) AS constraint_def
      FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = to_regclass($1)
  ) p WHERE bound IS NOT NULL AND constraint_def IS NOT NULL ORDER BY 1`;

/** Keeps writers out of a table while readers go on. */
export function lockShare(schema: string, table: string): string {
  return `LOCK TABLE ${qualified(schema, table)} IN SHARE MODE`;
}

/** An empty table with the columns (types, NOT NULL, defaults) of another: a partition to be, secured. */
export function createLike(schema: string, table: string, like: string): string {
  return secured(
    schema,
    table,
    `CREATE TABLE ${qualified(schema, table)} (LIKE ${qualified(schema, like)} INCLUDING DEFAULTS)`,
  );
}

/** Copies every row, column by name: the copy's types take the values by assignment. */
export function copyRows(schema: string, to: string, from: string, columns: readonly string[]): string {
  const list = columns.map((c) => pg.escapeIdentifier(c)).join(', ');
  return `INSERT INTO ${qualified(schema, to)} (${list}) SELECT ${list} FROM ${qualified(schema, from)}`;
}

/**
 * The partition's own constraint as a CHECK, so that ATTACH PARTITION skips its validating scan. `constraint` is
 * the catalog's text of it (pg_get_partition_constraintdef), never input.
 */
export function addPartitionCheck(schema: string, table: string, constraint: string): string {
  return `ALTER TABLE ${qualified(schema, table)} ADD CONSTRAINT ${pg.escapeIdentifier(`${table}_partition_check`)} CHECK (${constraint})`;
}

export function detachPartition(schema: string, parent: string, table: string): string {
  return `ALTER TABLE ${qualified(schema, parent)} DETACH PARTITION ${qualified(schema, table)}`;
}

/** $1 the qualified table: the names of its indexes (a key's is its constraint's too). */
export const indexesOf = `SELECT c.relname::text AS name FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
  WHERE i.indrelid = to_regclass($1) ORDER BY 1`;

/** Attaches a table with the bounds the catalog gave its predecessor (`FOR VALUES …`, never input). */
export function attachWithBound(schema: string, parent: string, table: string, bound: string): string {
  return `ALTER TABLE ${qualified(schema, parent)} ATTACH PARTITION ${qualified(schema, table)} ${bound}`;
}
