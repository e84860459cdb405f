/*
 * What is staged of a window: its row in stage_progress (written with each page, in the page's transaction) and
 * its two stage tables (stageNames).
 */
import type pg from 'pg';
import { StoreError } from '../errors.js';
import { isIsoDate } from '../model/dates.js';
import type { Window } from '../model/window.js';
import * as queries from './queries.js';
import { orgTableName, type Scope } from './scope.js';
import { qualified, windowDates } from './table-names.js';

/** What is staged of a window for one report. */
export interface StageProgress {
  reportId: string;
  /** Pages staged so far; the next page to stage has this index (pages count from 0). */
  pagesStaged: number;
  /** The next_page token of the last staged page: where to resume; null when complete or nothing is staged. */
  nextPage: string | null;
  rowsStaged: number;
}

export interface ProgressRow {
  report_id: string;
  pages_staged: number;
  next_page: string | null;
  rows_staged: string;
  stage_posts: string;
  stage_segments: string;
}

/** The window's progress row, locked until the transaction ends; undefined when the window is not open. */
export async function lockProgress(
  client: pg.PoolClient,
  scope: Scope,
  window: Window,
): Promise<ProgressRow | undefined> {
  const found = await client.query<ProgressRow>(queries.readProgress(scope.schema), [
    window.start,
    window.end,
    scope.org,
  ]);
  return found.rows[0];
}

/** lockProgress, with the columns of the window's posts stage and their SQL types (readProgressForPage). */
export async function lockProgressForPage(
  client: pg.PoolClient,
  scope: Scope,
  window: Window,
): Promise<{ row: ProgressRow; stageColumns: Map<string, string> } | undefined> {
  const found = await client.query<ProgressRow & { stage_columns: [string, string][] }>(
    queries.readProgressForPage(scope.schema),
    [window.start, window.end, scope.schema, scope.org],
  );
  const row = found.rows[0];
  if (row === undefined) return undefined;
  const { stage_columns, ...progress } = row;
  return { row: progress, stageColumns: new Map(stage_columns) };
}

export function toProgress(row: ProgressRow): StageProgress {
  return {
    reportId: row.report_id,
    pagesStaged: row.pages_staged,
    nextPage: row.next_page,
    rowsStaged: Number(row.rows_staged),
  };
}

/** A window's stage tables: stage_<start>_<end>_posts and _segments, with the organization's key after `stage`. */
export function stageNames(key: string, window: Window): { posts: string; segments: string } {
  const base = orgTableName(key, 'stage', windowDates(window.start, window.end));
  return { posts: `${base}_posts`, segments: `${base}_segments` };
}

/** The columns of a table and their SQL types. */
export async function columnsOf(
  client: Pick<pg.ClientBase, 'query'>,
  schema: string,
  table: string,
): Promise<Map<string, string>> {
  const result = await client.query<{ name: string; sql_type: string }>(queries.readColumns, [
    qualified(schema, table),
  ]);
  return new Map(result.rows.map((r) => [r.name, r.sql_type]));
}

/** Adds the columns of `want` a table lacks and retypes those of another type. */
export async function alignColumns(
  client: pg.PoolClient,
  schema: string,
  table: string,
  have: ReadonlyMap<string, string>,
  want: Iterable<readonly [string, string]>,
): Promise<void> {
  const added: { column: string; type: string }[] = [];
  for (const [name, type] of want) {
    const current = have.get(name);
    if (current === undefined) added.push({ column: name, type });
    else if (current !== type) await client.query(queries.alterColumnType(schema, table, name, type));
  }
  // One statement for a window's first page, which adds every column of its records: one round trip, not dozens.
  if (added.length > 0) await client.query(queries.addColumns(schema, table, added));
}

export function checkWindow(window: Window): void {
  if (!isIsoDate(window.start) || !isIsoDate(window.end) || window.end < window.start) {
    throw new StoreError(
      'DB_ERROR',
      `invalid window ${JSON.stringify(window)}: need dates YYYY-MM-DD, start <= end`,
    );
  }
}
